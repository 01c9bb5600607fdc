"""The barrier checker on hand-built histories: a clean round, an early pass, a stuck member, a
wait cut short by a fault, and a history that exercised nothing."""

from __future__ import annotations

from zkjepsen.checker.barrier import BarrierChecker
from zkjepsen.history import History, Op
from zkjepsen.workloads import get_workload

S = 1_000_000_000
R = "/b/round-000000"


class H:
    def __init__(self):
        self.ops: list[Op] = []

    def add(self, t, process, typ, f, key=None, value=None, client=None, **extra):
        self.ops.append(Op(len(self.ops), t, process, typ, f, key, value, client, extra))
        return self

    def call(self, t0, t1, c, f, key=R, value=None, out=None, typ="ok", **extra):
        self.add(t0, c, "invoke", f, key, value, c)
        return self.add(t1, c, typ, f, key, out, c, **extra)

    def enter(self, t, c, key=R, n=3):
        return self.call(t, t + 1, c, "enter", key, {"round": 0, "n": n}, {"node": f"{key}/m{c}"})

    def fault(self, t0, t1, f="pause-client", targets=("c1",)):
        for t, phase in ((t0, "start"), (t1, "end")):
            self.add(
                t,
                "nemesis",
                "info",
                f,
                None,
                {"fault_id": 1, "phase": phase, "targets": list(targets)},
            )
        return self

    def history(self):
        return History(sorted(self.ops, key=lambda o: o.time))


def clean_round(h=None):
    h = h or H()
    for c in (1, 2, 3):
        h.enter(10 * c, c)
    for c in (1, 2, 3):
        h.call(10 * c + 2, 40, c, "pass", out={"count": 3, "n": 3})
        h.call(50, 60 + c, c, "leave", out={"count": 0, "n": 3})
    return h


def test_a_clean_round_is_valid():
    r = BarrierChecker().check(clean_round().history())
    assert r.valid is True
    assert r.details["passes"] == 3 and r.details["early_pass_count"] == 0


def test_pass_before_n_members_entered_is_a_violation():
    """Client 1 entered twice (a restart while its dead session's child lingered): the count
    read 3 children with only clients 1 and 2 entered."""
    h = H().enter(0, 1).enter(5, 2).enter(10, 1)
    h.call(6, 12, 2, "pass", out={"count": 3, "n": 3})
    r = BarrierChecker().check(h.history())
    assert r.valid is False
    (e,) = r.details["early_passes"]
    assert (
        e["client"] == 2
        and e["clients"] == [2, 1]
        and e["entered_clients"] == [1, 2]
        and e["entered"] == 2
        and e["n"] == 3
    )
    assert (e["start"], e["end"]) == (0, 12)
    assert [(v.kind, v.clients) for v in r.violations] == [("early-pass", (2, 1))]
    # The same history with a third member entering first is fine.
    h.enter(1, 3)
    assert BarrierChecker().check(h.history()).valid is True


def test_an_enter_cut_by_a_kill_still_counts():
    """Seen on a real run: client 3's create landed, then SIGKILL; its enter never completed.
    Clients 1 and 2 counting its child is no early pass."""
    h = H().add(0, 3, "invoke", "enter", R, {"round": 0, "n": 3}, 3)
    h.fault(1, 50, f="kill-client", targets=("c3",))
    h.enter(2, 1).enter(3, 2)
    h.call(5, 6, 1, "pass", out={"count": 3, "n": 3}).call(
        5, 7, 2, "pass", out={"count": 3, "n": 3}
    )
    r = BarrierChecker().check(h.history())
    assert r.valid is True and r.details["early_pass_count"] == 0
    h.ops.pop(0)  # without client 3's attempt, the same passes are early
    assert BarrierChecker().check(h.history()).details["early_pass_count"] == 2


def test_n_from_the_checker_overrides_what_members_recorded():
    h = clean_round()
    assert BarrierChecker(n=4).check(h.history()).valid is False


def test_a_member_stuck_on_a_healthy_system_is_a_violation():
    h = H().enter(0, 1).enter(0, 2)
    h.call(2, 2 + 10 * S, 1, "pass", typ="fail", error="timeout")  # 10 s, no fault: stuck
    h.call(2, 3 * S, 2, "pass", typ="fail", error="stopped")  # 3 s only: not judged
    r = BarrierChecker().check(h.history())
    assert r.valid is False and r.details["stuck_count"] == 1
    assert r.details["stuck"][0]["clients"] == [1] and r.details["cut_short"] == 1
    assert [(v.kind, v.clients) for v in r.violations] == [("stuck", (1,))]


def test_a_wait_overlapping_a_fault_is_judged_only_after_the_heal():
    h = H().enter(0, 1).enter(0, 2).fault(1 * S, 7 * S)
    h.call(2, 10 * S, 1, "pass", typ="fail", error="timeout")  # healthy 3 s < 5 s grace
    h.call(3, 4, 2, "pass", out={"count": 2, "n": 2})
    r = BarrierChecker(n=2).check(h.history())
    assert r.valid is True and r.details["cut_short"] == 1
    h2 = H().enter(0, 1).enter(0, 2).fault(1 * S, 2 * S)
    h2.call(2, 10 * S, 1, "pass", typ="fail", error="timeout")  # healthy 8 s: stuck
    h2.call(3, 4, 2, "pass", out={"count": 2, "n": 2})
    r2 = BarrierChecker(n=2).check(h2.history())
    assert r2.valid is False and r2.details["stuck"][0]["faults"][0]["f"] == "pause-client"


def test_a_long_wait_at_the_end_overlapping_faults_is_unknown_not_valid():
    h = H().enter(0, 1).enter(0, 2).call(1, 2, 1, "pass", out={"count": 2, "n": 2})
    h.fault(3 * S, 20 * S)
    h.call(2, 22 * S, 2, "pass", typ="fail", error="stopped")  # 22 s, ~2 s healthy
    r = BarrierChecker(n=2).check(h.history())
    assert r.valid == "unknown" and len(r.details["unjudged_long_waits"]) == 1


def test_a_killed_members_wait_ends_at_the_kill():
    h = H().enter(0, 1).enter(0, 2)
    h.add(1, 1, "invoke", "pass", R, None, 1)  # never completes: SIGKILLed at 2 s
    h.fault(2 * S, 3 * S, f="kill-client", targets=("c1",))
    h.call(1, 20 * S, 2, "pass", typ="fail", error="timeout")
    r = BarrierChecker(n=2).check(h.history())
    assert [s["clients"] for s in r.details["stuck"]] == [[2]]  # 1's wait is not blamed


def test_a_kill_that_lands_after_its_start_record_still_ends_the_wait():
    """Seen on a real run: the kill's start record came 0.23 s before the victim invoked `leave`
    (docker delivers SIGKILL late); the wait died with the process, it was not stuck."""
    h = H().enter(0, 1).enter(0, 3)
    h.fault(2 * S, 5 * S, f="kill-client", targets=("c3",))
    h.add(2 * S + 200, 3, "invoke", "leave", R, None, 3)  # never completes
    h.call(1, 2, 1, "pass", out={"count": 2, "n": 2}).call(3, 4, 1, "leave", out={"count": 0})
    h.add(40 * S, 1, "event", "session-state", None, "CONNECTED", 1)  # the history goes on
    r = BarrierChecker(n=2).check(h.history())
    assert r.valid is True and r.details["stuck_count"] == 0
    # The same wait with no kill at all is stuck.
    h.ops = [op for op in h.ops if op.process != "nemesis"]
    assert BarrierChecker(n=2).check(h.history()).details["stuck_count"] == 1
    # A restart (a later op of client 3 from another process) proves the death as well.
    h.add(6 * S, 6, "invoke", "enter", "/b/round-000001", {"n": 2}, 3)
    assert BarrierChecker(n=2).check(h.history()).details["stuck_count"] == 0


def test_nothing_exercised_is_unknown():
    assert BarrierChecker().check(History([])).valid == "unknown"
    h = H().add(0, 1, "invoke", "enter", R, {"n": 3}, 1).add(1, 1, "fail", "enter", R, None, 1)
    assert BarrierChecker().check(h.history()).valid == "unknown"
    h2 = H().enter(0, 1).call(2, 3, 1, "pass", typ="fail", error="stopped")
    assert BarrierChecker().check(h2.history()).valid == "unknown"  # entered, nothing judged


def test_barrier_workload_uses_the_barrier_checker():
    wl = get_workload("barrier")
    assert list(wl.checkers({})) == ["barrier", "exercised"]
    assert wl.checkers({"members": 4})["barrier"].n == 4
