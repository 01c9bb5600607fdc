"""Two facts the lease rule (checker/lease.py `lease_nature`) once guessed, each a bound of when
the earlier holder's lease was last renewed before its silence:

- the renewal period the program declares (`renew_ms` of its `init` answer or `session` event:
  the longest gap between two renewals; etcd's Go client renews up to TTL/3 + 0.5 s apart),
  else a third of a lease. h4's flag of 12:42 (docs/findings/2026-11-29-oracle.md): a paused
  etcd-mutex-go holder, a 2 s lease, the later grant 1.27 s after the freeze, was called a
  defect by 67 ms (1.93 s after the renewal a third of a lease before the freeze);
- when the fault went in (`went_in_ns` of its end record: nemesis/arming.py `went_in`), not its
  start record, written before the apply (a pause took 2.2 s to apply under load): counted from
  the start record, a silence excuses a split inside those seconds.

Hand-made histories (hand_history.HandHistory); the recorder's and the nemesis's side without
Docker (a tiny program answering `init`; the executor with a fake family)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from hand_history import LEASE_S, HandHistory
from hypothesis import given, settings
from hypothesis import strategies as st
from landed import with_observation
from program_ctx import program_ctx

from zkjepsen.checker.lease import DEFECT, LEASE
from zkjepsen.checker.lock import LockChecker
from zkjepsen.client.program_client import ProgramClient
from zkjepsen.client.protocol import ProtocolFault, parse_line, session_problem
from zkjepsen.history import History
from zkjepsen.nemesis import arming, schedule
from zkjepsen.nemesis.process import ProcessFault
from zkjepsen.nemesis.targets import NemesisContext
from zkjepsen.run.stored_checks import VALUE_SHAPES

S = 1_000_000_000
T = LEASE_S  # every client's lease (hand_history): 2 s


class H(HandHistory):
    def declare(self, c, renew_ms, at=0.2):
        """Client c's session again, now saying the longest gap between its renewals."""
        value = {"session_id": f"0x{c}", "timeout_ms": int(T * 1000), "renew_ms": renew_ms}
        return self.add(at, c, "event", "session", None, value, c)

    def hold(self, c, asked, granted, released):
        self.add(asked, c, "invoke", "acquire", "/l", None, c)
        self.add(granted, c, "ok", "acquire", "/l", {"token": c * 10}, c)
        self.add(released, c, "invoke", "release", "/l", None, c)
        return self.add(released + 0.01, c, "ok", "release", "/l", None, c)

    def pause(self, t0, t1, went_in=None):
        """pause-client on client 1 from its start record at t0 to its end at t1; `went_in`:
        when its end record says it went in (None: an older history, which does not say)."""
        start = {"fault_id": 1, "phase": "start", "targets": ["c1"]}
        self.add(t0, "nemesis", "info", "pause-client", None, start)
        end = with_observation("pause-client", ["c1"], None)
        if went_in is not None:
            end["went_in_ns"] = int(went_in * S)
        return self.add(
            t1, "nemesis", "info", "pause-client", None, {**start, "phase": "end", **end}
        )

    def nature(self):
        history = History(sorted(self.ops, key=lambda o: (o.time, o.index)))
        r = LockChecker().with_lease(T).check(history)
        (b,) = r.details["belief_overlaps"]
        return b["nature"], b["nature_why"]


# ---- 1. the renewal period a program declares ----------------------------------------------


def frozen_holder(grant_after_freeze, renew_ms=None, freeze=5.0):
    """h4's flag of 12:42: client 1 holds from 0.51 s (asked 0.5 s), frozen at `freeze` to 9 s;
    client 2 granted `grant_after_freeze` s after the freeze, holds to 8 s."""
    h = H()
    if renew_ms is not None:
        h.declare(1, renew_ms)
    grant = freeze + grant_after_freeze
    h.hold(1, 0.5, 0.51, 9.5).hold(2, grant - 0.01, grant, 8.0)
    return h.pause(freeze, 9.0)


def test_a_frozen_go_etcd_holder_renewing_1_17_s_apart_is_a_leases_nature():
    # 1.27 s after the freeze: 1.93 s after a renewal a third of a lease before it (67 ms short
    # of the lease), 2.44 s after one 1.17 s before it (its declared period)
    nature, why = frozen_holder(1.27, renew_ms=1167).nature()
    assert nature == LEASE, why
    assert "2.44s after its lease's last renewal" in why


def test_without_a_declared_period_it_is_still_counted_from_a_third_of_a_lease():
    nature, why = frozen_holder(1.27).nature()
    assert nature == DEFECT, why  # today's rule, for a program that declares nothing
    # a declared third is the same rule
    assert frozen_holder(1.27, renew_ms=667).nature()[0] == DEFECT


@settings(max_examples=150, deadline=None)
@given(
    renew_ms=st.integers(1, 2000),
    freeze_ms=st.integers(1000, 4000),
    asked_ms=st.integers(100, 900),
    after_ms=st.integers(1, 3000),
)
def test_a_split_is_a_leases_nature_iff_a_lease_passed_since_the_declared_renewal(
    renew_ms, freeze_ms, asked_ms, after_ms
):
    """With renew_ms = r and the holder still frozen at the grant: a lease's nature iff
    grant - max(freeze - r, asked) >= T (the holder makes no claim after the grant)."""
    freeze, asked = freeze_ms / 1000, asked_ms / 1000
    grant = freeze + after_ms / 1000
    h = H().declare(1, renew_ms)
    h.hold(1, asked, asked + 0.005, grant + 2.0).hold(2, grant - 0.001, grant, grant + 1.0)
    h.pause(freeze, grant + 1.5)
    times: dict = {}
    for o in h.ops:  # each kind of record's first
        times.setdefault((o.process, o.f, o.type), o.time)
    g, f = times[(2, "acquire", "ok")], times[("nemesis", "pause-client", "info")]
    a = times[(1, "acquire", "invoke")]
    renewed = max(f - renew_ms / 1000 * S, a)
    expected = LEASE if g - renewed >= T * S else DEFECT
    assert h.nature()[0] == expected


# ---- the recorder: renew_ms in the init answer and the session event -----------------------

PROGRAM = """
import json, sys
value = json.loads(sys.argv[1])
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "init":
        out = {"in_reply_to": req["id"], "type": "ok", "value": value}
        sys.stdout.write(json.dumps(out) + "\\n")
        sys.stdout.flush()
"""


def start_program(tmp_path: Path, value: dict) -> list[dict]:
    """A program answering `init` with `value`, started by the recorder: its records."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    path = tmp_path / "client-1.jsonl"
    ctx, rec = program_ctx(path, nclients=1)
    client = ProgramClient(
        ctx,
        [sys.executable, str(prog), json.dumps(value)],
        servers="127.0.0.1:1",
        session_timeout_s=2.0,
        workload="lock",
        lock_path="/l",
    )
    client.start()
    client.program.kill()
    rec.close()
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_init_answers_renew_ms_is_in_the_session_event(tmp_path: Path) -> None:
    recs = start_program(tmp_path, {"session_id": "0x1", "timeout_ms": 2000, "renew_ms": 1167})
    (s,) = [r for r in recs if r["f"] == "session"]
    assert s["value"] == {"session_id": "0x1", "timeout_ms": 2000, "renew_ms": 1167}
    recs = start_program(tmp_path / "b", {"session_id": "0x1", "timeout_ms": 2000})
    (s,) = [r for r in recs if r["f"] == "session"]
    assert "renew_ms" not in s["value"]


@pytest.mark.parametrize("renew", [0, -5, 2001, "1167", True, None])
def test_a_bad_renew_ms_is_a_client_error(tmp_path: Path, renew) -> None:
    recs = start_program(
        tmp_path / "x", {"session_id": "0x1", "timeout_ms": 2000, "renew_ms": renew}
    )
    errors = [r["value"] for r in recs if r["f"] == "client-error"]
    assert errors and errors[0].startswith(
        "init was answered ok with a bad session: a session's renew_ms"
    ), errors
    assert not [r for r in recs if r["f"] == "session"]


def test_one_rule_for_renew_ms_in_the_answer_the_event_and_a_stored_history() -> None:
    good = {"session_id": "0x1", "timeout_ms": 2000, "renew_ms": 2000}
    bad = {**good, "renew_ms": 2001}
    assert session_problem(good) == "" and session_problem({"timeout_ms": 2000}) == ""
    assert "no more than its timeout_ms" in session_problem(bad)
    assert "no more than its timeout_ms" in session_problem({"renew_ms": 5})
    line = json.dumps({"event": "session", "value": bad}).encode()
    with pytest.raises(ProtocolFault, match="renew_ms"):
        parse_line(line)
    assert parse_line(json.dumps({"event": "session", "value": good}).encode()).value == good
    _, test = VALUE_SHAPES[("session", "event")]
    assert test(good) and not test(bad) and test(None)


# ---- 2. a fault's silence begins when it went in -------------------------------------------


def slow_pause(went_in, grant=7.5):
    """A pause of client 1 whose start record is at 5 s and whose apply returned `went_in`
    (None: an old history that does not say); client 2 granted at `grant` while it is frozen."""
    h = H().hold(1, 0.5, 0.51, 12.0).hold(2, grant - 0.01, grant, 10.0)
    return h.pause(5.0, 11.0, went_in=went_in)


def test_a_split_excused_only_from_the_start_record_is_a_defect():
    # counted from the start record: 7.5 - (5 - 0.67) = 3.17 s >= 2 s; from when it went in
    # (7 s): 7.5 - (7 - 0.67) = 1.17 s, short of the lease
    nature, why = slow_pause(7.0).nature()
    assert nature == DEFECT, why
    assert slow_pause(None).nature()[0] == LEASE  # an older history: its start record, as before
    assert slow_pause(5.0).nature()[0] == LEASE  # it went in at once
    # a lease after the renewal before it went in: excused again
    assert slow_pause(7.0, grant=8.4).nature()[0] == LEASE


def test_a_grant_before_the_pause_went_in_is_no_leases_nature():
    nature, _ = slow_pause(7.6, grant=7.5).nature()
    assert nature == DEFECT  # the holder was not yet frozen when the other was granted


def test_a_later_silence_carries_the_excuse_on_only_from_when_it_went_in():
    """past_excuse: a second freeze that begins within a lease after the first ends carries
    the excuse on; its begining is when it went in. Client 1, frozen 3-5 s (2 s: its lease),
    writes at 8.2 s while client 2 (granted 4.8 s) holds; a second pause whose start record is
    at 6.9 s went in at 7.5 s (5 s + the lease = 7 s: too late to carry it on) or at 6.95 s."""

    def judge(second_went_in):
        h = H().hold(1, 0.5, 0.51, 12.0).hold(2, 4.79, 4.8, 10.0)
        h.pause(3.0, 5.0)
        start = {"fault_id": 2, "phase": "start", "targets": ["c1"]}
        h.add(6.9, "nemesis", "info", "pause-client", None, start)
        end = with_observation("pause-client", ["c1"], None)
        end["went_in_ns"] = int(second_went_in * S)
        h.add(8.1, "nemesis", "info", "pause-client", None, {**start, "phase": "end", **end})
        h.add(8.2, 1, "invoke", "write", "/r", {"token": 10, "step": 1, "steps": 1}, 1)
        h.add(8.25, 1, "ok", "write", "/r", {"version": 1}, 1)
        return h.nature()

    assert judge(6.95)[0] == LEASE
    nature, why = judge(7.5)
    assert nature == DEFECT and "after its silence ended" in why, why


# ---- the nemesis writes when it went in ----------------------------------------------------


class Family:
    """A fake family whose apply says its effect was seen at `seen` (history ns), or nothing."""

    def __init__(self, seen=None):
        self.seen = seen

    def resolve(self, ctx, target, rng, params):
        return ["n1"], {}

    def apply(self, ctx, targets, detail):
        if self.seen is not None:
            detail[arming.WENT_IN] = self.seen

    def undo(self, ctx, targets, detail):
        pass


@pytest.mark.parametrize("seen", [None, 1])
def test_the_end_record_says_when_it_went_in_by_arming_went_in(tmp_path, monkeypatch, seen):
    from zkjepsen.faultkinds import KINDS, instant, kind
    from zkjepsen.nemesis.family import FaultFamily
    from zkjepsen.nemesis.faults import FAULTS, BoundFault
    from zkjepsen.nemesis.generator import Fault, final_heal, once, phases
    from zkjepsen.store import RunDir

    fam = Family(seen)
    fam.family = FaultFamily("fake", heal=lambda ctx, everything: [], rank=0)
    k = kind("kill-one", "process", "one", "fake", instant(), observer="killed")
    monkeypatch.setitem(FAULTS, "kill-one", BoundFault(k, fam))
    monkeypatch.setitem(KINDS, "kill-one", k)
    monkeypatch.setattr(schedule, "heal_context", lambda ctx, everything=False: [])
    ens = SimpleNamespace(nodes=[SimpleNamespace(name="n1")], run_id="zkj-t", leader=lambda: None)
    plan = schedule.NemesisPlan(
        ["kill-one"],
        gen=phases(once(Fault("kill-one", duration=0.01)), final_heal()),
        seed=1,
        time_limit_s=1.0,
        t0_ns=time.monotonic_ns(),
        session_timeout_s=0.2,
        fault_duration_s=0.01,
    )
    (op,) = schedule.run_nemesis(ens, None, plan, files=RunDir(tmp_path))
    recs = [json.loads(x) for x in (tmp_path / "nemesis.jsonl").read_text().splitlines()]
    start, end = (r for r in recs if r["value"]["fault_id"] == op.fault_id)
    assert "went_in_ns" not in start["value"]
    assert end["value"]["went_in_ns"] == arming.went_in(op)
    assert end["value"]["went_in_ns"] == (1 if seen is not None else op.applied_ns)


def test_a_pause_went_in_when_docker_pause_returned_not_after_its_observation():
    """process.py: the apply's return comes after it reads the target's state and who held
    (seconds under load); the freeze was in place when `pause` returned."""
    clock = iter(range(100, 10_000, 100))
    handle = SimpleNamespace(index=1, status=lambda: "paused")
    handle.pause = lambda: None
    pool = SimpleNamespace(handles=[handle], live=None, run_dir=None)
    ctx = NemesisContext(SimpleNamespace(run_id="zkj-t"), pool, now_ns=lambda: next(clock))
    detail: dict = {"chosen": "holder"}
    ProcessFault("pause", "client").apply(ctx, ["c1"], detail)
    assert detail[arming.WENT_IN] == 100 and detail["frozen"] == ["c1"]


# ---- the built-in drivers declare only what their library's source says --------------------


def test_python_redis_lock_declares_its_renewal_thread_of_two_thirds_of_expire():
    import redis
    import redis_lock

    from zkjepsen.workloads.driver.service import lease_words

    lock = redis_lock.Lock(redis.StrictRedis(), "k", expire=3, auto_renewal=True)
    assert lock._lock_renewal_interval == 2.0  # the library's own interval: 2/3 of expire
    assert lease_words("python-redis-lock", 3.0) == {"timeout_ms": 3000, "renew_ms": 2000}
    assert session_problem({"timeout_ms": 3000, "renew_ms": 2000}) == ""
    # a recipe that renews every third of its lease, or never, declares nothing
    assert lease_words("redis-set-px", 2.0) == {"timeout_ms": 2000}
