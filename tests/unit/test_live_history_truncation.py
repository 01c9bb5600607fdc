"""A followed file that gets shorter (history/jsonl.py's Tailer, under history/live.py): a client
restarted after a SIGKILL cuts off the half line its killed life left (`mend`) and appends
again, so the file may be shorter than what the follower read, or longer again by its next
poll without holding the bytes it read. Every complete record must come out exactly once,
none glued to the cut half line, whatever the order of appends, cuts and polls."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from zkjepsen.history.jsonl import Appender, Tailer, mend, read_records
from zkjepsen.history.live import LiveHistory
from zkjepsen.store import RunDir


def rec(n: int, pad: int = 0) -> dict:
    return {"time": n, "type": "ok", "f": "acquire", "pad": "x" * pad}


def raw(path: Path, data: bytes) -> None:
    with path.open("ab") as f:
        f.write(data)


def half(n: int, cut: int, pad: int = 0) -> bytes:
    """The first `cut` bytes of record n's line: what a SIGKILL mid-write leaves."""
    whole = (json.dumps(rec(n, pad), separators=(",", ":")) + "\n").encode()
    return whole[: max(1, min(cut, len(whole) - 2))]


def times(records: list[dict]) -> list[int]:
    return [r["time"] for r in records]


def test_a_restart_that_grows_the_file_past_the_cut_half_line_loses_nothing(tmp_path):
    path = tmp_path / "client-1.jsonl"
    out = Appender(path)
    out.write(rec(1))
    out.write(rec(2))
    raw(path, half(3, 30))  # the killed life's last line
    tail = Tailer(path)
    assert times(tail.poll()) == [1, 2]  # the half line waits
    assert mend(path).records == 2  # the restart cuts it off ...
    Appender(path).write(rec(4, pad=200))  # ... and appends a record longer than the cut
    assert os.path.getsize(path) > tail.offset + 30  # past every byte read: no size shows the cut
    got = tail.poll()
    assert got == [rec(4, pad=200)]  # whole, not glued to the half line nor missing its head
    assert times(tail.poll()) == []


def test_a_restart_polled_while_the_file_is_shorter_than_what_was_read(tmp_path):
    path = tmp_path / "client-1.jsonl"
    Appender(path).write(rec(1))
    raw(path, half(2, 40, pad=100))
    tail = Tailer(path)
    assert times(tail.poll()) == [1]
    mend(path)
    assert times(tail.poll()) == []  # shorter now: nothing new, nothing lost
    raw(path, half(3, 10))  # a second life killed early too
    assert times(tail.poll()) == []
    mend(path)
    Appender(path).write(rec(4))
    Appender(path).write(rec(5))
    assert times(tail.poll()) == [4, 5]
    assert tail.resyncs == 0  # a cut half line is not a cut into what was read


def test_a_cut_into_records_already_read_goes_on_from_where_the_file_differs(tmp_path):
    path = tmp_path / "client-1.jsonl"
    out = Appender(path)
    for n in (1, 2, 3):
        out.write(rec(n))
    tail = Tailer(path)
    assert times(tail.poll()) == [1, 2, 3]
    with path.open("r+b") as f:  # cut after record 1 (nothing zkjepsen writes does this)
        f.truncate(len(json.dumps(rec(1), separators=(",", ":"))) + 1)
    out.write(rec(4, pad=300))  # grows past what was read
    out.write(rec(5))
    assert times(tail.poll()) == [4, 5]
    assert tail.resyncs == 1
    with path.open("r+b") as f:
        f.truncate(0)
    assert times(tail.poll()) == []
    out.write(rec(6))
    assert times(tail.poll()) == [6]


def test_the_live_history_hands_out_a_restarted_clients_records_once(tmp_path):
    d = RunDir(tmp_path)
    live = LiveHistory.of_run(d)
    sub = live.subscribe()
    path = d.client_history(3)
    path.parent.mkdir(parents=True, exist_ok=True)
    Appender(path).write(rec(1))
    raw(path, half(2, 25))
    live.poll()
    mend(path)
    Appender(path).write(rec(3, pad=80))
    live.poll()
    assert [(s, times(rs)) for s, rs in sub.take()] == [(3, [1]), (3, [3])]
    assert live.records(3) == read_records(path)


# One step of a client's file's life, and of its follower:
#   ("append", pad)      a live writer appends one whole record (a restarted one mends first)
#   ("partial", cut)     a writer is killed mid-write: the first `cut` bytes of a record stay
#   ("finish", 0)        the half-written line's write completes after all (it was not killed)
#   ("mend", 0)          a restart cuts off the half line
#   ("poll", 0)          the follower reads
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 120)),
        st.tuples(st.just("partial"), st.integers(1, 200)),
        st.tuples(st.just("finish"), st.just(0)),
        st.tuples(st.just("mend"), st.just(0)),
        st.tuples(st.just("poll"), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(steps=STEPS)
def test_every_complete_record_comes_out_once_whatever_the_interleaving(tmp_path_factory, steps):
    path = tmp_path_factory.mktemp("trunc") / "client-1.jsonl"
    tail = Tailer(path)
    got: list[dict] = []
    complete: list[dict] = []  # the records the file holds whole, in its order
    pending: tuple[dict, bytes] | None = None  # a half line on disk: its record, the rest of it
    for n, (op, arg) in enumerate(steps, 1):
        if op == "append":
            if pending is not None:
                mend(path)
                pending = None
            complete.append(rec(n, arg))
            Appender(path).write(complete[-1])
        elif op == "partial" and pending is None:
            line = (json.dumps(rec(n, arg // 2), separators=(",", ":")) + "\n").encode()
            cut = max(1, min(arg, len(line) - 2))
            raw(path, line[:cut])
            pending = (rec(n, arg // 2), line[cut:])
        elif op == "finish" and pending is not None:
            raw(path, pending[1])
            complete.append(pending[0])
            pending = None
        elif op == "mend":
            mend(path)
            pending = None
        elif op == "poll":
            got.extend(tail.poll())
    got.extend(tail.poll())
    assert got == complete  # each once, whole, in the file's order
    assert complete == read_records(path)  # and the file agrees
    assert tail.resyncs == 0  # a cut half line never looks like a cut into what was read
