"""The run's live history (history/live.py) and who holds now (history/holding.py), on files
written by the test as clients would write them: read once and incrementally, a half-written
line waits, files appear late, every subscriber gets every record, one that raises harms no
other; and the holding state agrees with the rule, whatever the chunks the files grow by."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from zkjepsen.history import NEMESIS
from zkjepsen.history.holding import ACQUIRE_FS, RELEASE_FS, HoldState, holding_of
from zkjepsen.history.live import LiveHistory
from zkjepsen.store import RunDir


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(text)


def line(**rec) -> str:
    return json.dumps(rec) + "\n"


def test_each_file_is_read_once_from_where_it_was_left(tmp_path):
    d = RunDir(tmp_path)
    live = LiveHistory.of_run(d)
    a, b = live.subscribe(), live.subscribe()
    write(d.client_history(1), line(time=1, type="invoke", f="acquire"))
    live.poll()
    write(d.client_history(1), line(time=2, type="ok", f="acquire"))
    live.poll()
    live.poll()  # nothing new: nothing handed out
    batches = a.take()
    assert [(s, [r["time"] for r in rs]) for s, rs in batches] == [(1, [1]), (1, [2])]
    # parsed once: both subscribers hold the very same records
    assert [id(r) for _, rs in b.take() for r in rs] == [id(r) for _, rs in batches for r in rs]
    assert live.records(1) == [r for _, rs in batches for r in rs]


def test_a_half_written_line_waits_for_its_end_and_a_cut_one_is_skipped(tmp_path):
    d = RunDir(tmp_path)
    live = LiveHistory.of_run(d)
    sub = live.subscribe()
    write(d.client_history(2), '{"time": 5, "type": "ok", "f": "acq')
    live.poll()
    assert sub.take() == []
    write(d.client_history(2), 'uire"}\n{"time": 6, "ty\n' + line(time=7, type="invoke", f="x"))
    live.poll()
    assert [r["time"] for _, rs in sub.take() for r in rs] == [5, 7]


def test_files_that_appear_late_and_the_nemesis_log_are_followed(tmp_path):
    d = RunDir(tmp_path)
    live = LiveHistory.of_run(d)
    sub = live.subscribe()
    live.poll()
    write(d.client_history(3), line(time=1, type="event", f="session"))
    write(d.nemesis_log, line(time=2, process="nemesis", type="info", f="kill"))
    live.poll()
    assert sorted((str(s), len(rs)) for s, rs in sub.take()) == [("3", 1), (NEMESIS, 1)]


def test_a_subscriber_sees_what_is_written_after_it_unless_it_replays(tmp_path):
    d = RunDir(tmp_path)
    write(d.client_history(1), line(time=1, type="ok", f="acquire"))
    live = LiveHistory.of_run(d)
    armed = live.subscribe()  # caught up first: the past does not count
    write(d.client_history(1), line(time=2, type="invoke", f="release"))
    replayed = live.subscribe(replay=True)
    live.poll()
    assert [r["time"] for _, rs in armed.take() for r in rs] == [2]
    assert [r["time"] for _, rs in replayed.take() for r in rs] == [1, 2]


def test_a_subscriber_that_raises_is_dropped_and_the_others_go_on(tmp_path):
    d = RunDir(tmp_path)
    live = LiveHistory.of_run(d)
    seen: list[int] = []

    def bad(source, records):
        raise RuntimeError("a subscriber's bug")

    broken = live.subscribe(bad)
    good = live.subscribe(lambda source, records: seen.extend(r["time"] for r in records))
    inbox = live.subscribe()
    for t in (1, 2):
        write(d.client_history(1), line(time=t, type="invoke", f="write"))
        live.poll()
    assert isinstance(broken.error, RuntimeError) and good.error is None
    assert seen == [1, 2] and [r["time"] for _, rs in inbox.take() for r in rs] == [1, 2]
    assert live.holding().at_ns == 2  # the holding state too


def test_many_subscribers_each_get_everything_once(tmp_path):
    d = RunDir(tmp_path)
    live = LiveHistory.of_run(d)
    subs = [live.subscribe() for _ in range(20)]
    for c in range(1, 6):
        write(d.client_history(c), line(time=c, type="invoke", f="write"))
    live.poll()
    live.unsubscribe(subs[0])
    write(d.client_history(1), line(time=9, type="ok", f="write"))
    live.poll()
    assert sum(len(rs) for _, rs in subs[0].take()) == 5
    assert all(sum(len(rs) for _, rs in s.take()) == 6 for s in subs[1:])


def test_a_cursor_returns_each_record_once(tmp_path):
    d = RunDir(tmp_path)
    write(d.client_history(4), line(time=1, type="ok", f="acquire"))
    live = LiveHistory.of_run(d)
    whole, later = live.cursor(4), live.cursor(4, from_now=True)
    assert [r["time"] for r in whole.poll()] == [1] and later.poll() == []
    write(d.client_history(4), line(time=2, type="ok", f="write"))
    assert [r["time"] for r in whole.poll()] == [2] == [r["time"] for r in later.poll()]


def test_who_holds_now_queue_sessions_and_grant_age(tmp_path):
    d = RunDir(tmp_path)
    live = LiveHistory.of_run(d)
    ev = {"type": "event", "f": "session"}
    write(d.client_history(0), line(time=1, type="ok", f="acquire"))  # the host: not a client
    write(
        d.client_history(1),
        line(time=2, **ev, value={"session_id": "0x1f", "timeout_ms": 3000})
        + line(time=3, type="invoke", f="acquire")
        + line(time=4, type="ok", f="acquire", value={"token": 7}),
    )
    write(d.client_history(2), line(time=5, type="invoke", f="acquire"))
    write(d.client_history(3), line(time=4, type="invoke", f="acquire"))
    write(d.client_history(3), line(time=6, type="event", f="session-state", value="SUSPENDED"))
    h = live.holding()
    assert dict(h.holders) == {1: 4} and h.queue == (3, 2) and h.at_ns == 6
    assert h.sessions[1].ids == {0x1F} and h.sessions[1].timeout_ms == 3000
    assert h.sessions[3].state == "SUSPENDED" and h.sessions[3].ids == frozenset()
    assert h.grant_age_ns(1) == 2 and h.grant_age_ns(1, now_ns=10) == 6
    assert h.grant_age_ns(2) is None and h.newest_holder() == 1 and h.newest_holder([2]) is None
    write(d.client_history(1), line(time=7, type="invoke", f="release"))
    write(d.client_history(3), line(time=8, type="ok", f="acquire"))
    after = live.holding()
    assert dict(after.holders) == {3: 8} and after.queue == (2,)
    assert dict(h.holders) == {1: 4}  # a value: what was read before does not change
    assert after.to_json()["holders"] == {"3": 8}


def reference_holders(records: dict[int, list[dict]]) -> dict[int, int]:
    """The rule the nemesis has always targeted by, written plainly: a client holds from its
    last acquire `ok` unless a release was invoked after it."""
    out = {}
    for c, recs in records.items():
        since = None
        for r in recs:
            if r["f"] in ACQUIRE_FS and r["type"] == "ok":
                since = r["time"]
            elif r["f"] in RELEASE_FS and r["type"] == "invoke":
                since = None
        if since is not None and c > 0:
            out[c] = since
    return out


RECORD = st.fixed_dictionaries(
    {
        "f": st.sampled_from(["acquire", "release", "write", "elected", "resign", "session"]),
        "type": st.sampled_from(["invoke", "ok", "fail", "info", "event"]),
    }
)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.integers(0, 4), st.lists(RECORD, max_size=12), max_size=5),
    st.lists(st.integers(1, 40), min_size=1, max_size=8),
)
def test_holding_follows_the_rule_whatever_chunks_the_files_grow_by(tmp_path_factory, hist, cuts):
    """Written in arbitrary byte chunks (a poll between each), the live history's answer is
    the rule's answer on the whole files, and the same as folding them at once."""
    d = RunDir(tmp_path_factory.mktemp("run"))
    records = {
        c: [{**r, "time": 10 * i + c} for i, r in enumerate(recs)] for c, recs in hist.items()
    }
    live = LiveHistory.of_run(d)
    seen = live.subscribe()
    texts = {c: "".join(line(**r) for r in recs) for c, recs in records.items()}
    for c, text in texts.items():
        at = 0
        d.client_dir(c).mkdir(parents=True, exist_ok=True)
        d.client_history(c).touch()
        for n in cuts * (1 + len(text) // max(1, sum(cuts))):
            if at >= len(text):
                break
            write(d.client_history(c), text[at : at + n])
            at += n
            live.poll()
        write(d.client_history(c), text[at:])
    h = live.holding()
    assert dict(h.holders) == reference_holders(records)
    assert h == holding_of(records)
    got: dict = {c: [] for c in records}
    for source, recs in seen.take():
        got[source] += recs
    assert got == records  # every record once, in its file's order


def test_the_state_machine_ignores_what_is_not_a_client():
    s = HoldState()
    s.feed(NEMESIS, {"f": "acquire", "type": "ok", "time": 3})
    s.feed(0, {"f": "acquire", "type": "ok", "time": 3})
    assert s.value().holders == {} and s.value().at_ns == 0
