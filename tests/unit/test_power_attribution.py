"""Which landed faults a violation counts against (checker/attribution.py, issue 47): every
split a fault made possible, whoever the overlapping clients are; a violation lost state shows
names the disk fault before it, in its verdict line and in the power line; a violation long
after every fault, or not one lost state can cause, counts against none. Hand-made histories
whose nemesis records carry what the real nemesis writes (targets, detail, its observation)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_checker_lock import H as LockH
from test_power import H, _lock_verdict, power

from zkjepsen.checker import Result, Violation
from zkjepsen.checker.attribution import attributed, disk_fault_before
from zkjepsen.checker.counter import CounterChecker
from zkjepsen.checker.fencing import FencingChecker
from zkjepsen.checker.online_counter import OnlineCounterChecker
from zkjepsen.checker.power import power_of
from zkjepsen.history import fault_windows
from zkjepsen.report.summary import summarise

S = 1_000_000_000
SERVERS = ("n1", "n2", "n3")
# The detail each family's nemesis writes at the end: what it saw at its target.
PAUSED = {"detail": {"frozen": ["c1"], "session_timeout_s": 2.0}}
POWER_LOST = {
    "detail": {
        "writeback_s": 0.0,
        "when": "client:1 acquired",
        "holders_at_power_loss": ["c1"],
        "lost_bytes": {n: 587 + i for i, n in enumerate(SERVERS)},
        "lost": {n: {"lost_bytes": 587 + i, "lost_writes": 2} for i, n in enumerate(SERVERS)},
        "booted": list(SERVERS),
    }
}


def _killed(target):
    return {"detail": {"killed": [target]}}


class Locks(H):
    """test_power's H with holds and waits on a named lock."""

    def on(self, c, key, t0, t1, f, typ="ok", value=None):
        self.add(t0, c, "invoke", f, key, None, c)
        return self.add(t1, c, typ, f, key, value, c)

    def hold_on(self, key, c, t_ok, t_rel):
        self.on(c, key, t_ok - 0.1, t_ok, "acquire", value={"token": int(t_ok * 10)})
        return self.on(c, key, t_rel, t_rel + 0.05, "release")

    def wait_on(self, key, c, t):
        """Client c invokes an acquire of `key` at t that never completes (it dies waiting)."""
        return self.add(t, c, "invoke", "acquire", key, None, c)


# --- a fault made a split possible, whoever it names ------------------------------------------


def test_a_waiters_death_counts_the_split_of_two_other_clients():
    # c3 waits from 1 s; killed at 2 s. Then c1 (holding since 1 s) and c2 (granted at 3 s) hold
    # at once: the split the lock checker finds names c1 and c2, not the killed c3.
    h = Locks().hold(1, 1, 6).hold(2, 3, 7).wait_on("/l", 3, 1)
    h.fault(2, 2.2, "kill-client", targets=("c3",), end=_killed("c3"))
    r = _lock_verdict(h, ("kill-client",))
    (split,) = r.parts["lock"].violations
    assert split.kind == "belief" and set(split.clients) == {1, 2}
    power = r.parts["power"].details
    assert power["line"].startswith("1 split holder in 1 landed client-kill: per-kill")
    assert power["landed"][0]["clients"] == [3] and power["landed"][0]["violated"] is True


def test_a_split_on_another_lock_does_not_count_against_a_client_fault():
    # Two independent locks (`locks=2`): c3 dies waiting for /a; c1 and c2 split /b.
    h = Locks().hold_on("/b", 1, 1, 6).hold_on("/b", 2, 3, 7).wait_on("/a", 3, 1)
    h.fault(2, 2.2, "kill-client", targets=("c3",), end=_killed("c3"))
    split = Violation("belief", (1, 2), 3 * S, 6 * S, evidence={"key": "/b"})
    assert power(h, [split]).violated() == 0
    # ...but a fault on the servers hits every lock they serve: c4 held /a at the kill.
    h.hold_on("/a", 4, 1.5, 2.5)
    h.fault(2, 2.3, "kill-leader", targets=("n1",), fid=2, end=_killed("n1"))
    by = {o.kind: o.violated for o in power(h, [split]).landed}
    assert by == {"kill-client": False, "kill-leader": True}
    # A violation that names nobody is on every lock.
    nobody = Violation("belief", (), 3 * S, 6 * S)
    assert power(h, [nobody]).violated() == 2


def test_a_violation_long_after_every_fault_counts_against_none():
    h = Locks().hold(1, 1, 6).hold(2, 7, 30).hold(3, 20, 25)
    h.fault(2, 5, "pause-client", end=PAUSED)  # landed: c1 frozen past its 2 s session
    late = Violation("belief", (2, 3), 20 * S, 25 * S)  # 15 s after the pause's end + 2 s
    p = power(h, [late], prop="belief")
    assert (p.opportunities(), p.violated()) == (1, 0)
    # A kind no lost state causes is never placed after a disk fault, nor counted against it.
    h.fault(8, 10, "power-loss-all", targets=SERVERS, fid=2, end=POWER_LOST)
    windows = fault_windows(h.history())
    stuck = attributed(Violation("stuck", (2,), 20 * S, 25 * S), windows)
    assert "after_disk_fault" not in stuck.evidence
    assert {o.kind: o.violated for o in power(h, [stuck]).landed} == {
        "pause-client": False,
        "power-loss-all": False,
    }
    # The same split, which lost state can cause, names the power loss and counts against it.
    split = attributed(late, windows)
    assert split.evidence["after_disk_fault"]["f"] == "power-loss-all"
    assert {o.kind: o.violated for o in power(h, [split], prop="belief").landed} == {
        "pause-client": False,
        "power-loss-all": True,
    }


# --- lost state names the disk fault that took it ---------------------------------------------


def _counter_after_power_loss() -> Locks:
    """Kazoo's counter under `--fsync relaxed`: c1 holds from 1 s and its two increments are
    acknowledged; every server loses power at 5 s (the increments were not fsynced: the layer
    dropped them) and is back at 8 s; the final read by client 0 at 12 s says 0."""
    h = Locks().hold(1, 1, 10)
    h.on(1, "/counter", 2, 2.5, "add").on(1, "/counter", 3, 3.5, "add")
    h.fault(5, 8, "power-loss-all", targets=SERVERS, fid=4, end=POWER_LOST)
    return h.on(0, "/counter", 12, 12.5, "read", value=0)


def test_a_counters_lost_increments_name_the_power_loss_and_count_in_its_power():
    h = _counter_after_power_loss()
    r = CounterChecker().check(h.history())
    assert r.valid is False and {v.kind for v in r.violations} == {"read-out-of-bounds", "lost"}
    for v in r.violations:
        assert v.faults == ()  # the final read met no fault's window...
        disk = v.evidence["after_disk_fault"]  # ...but it follows the power loss
        assert (disk["f"], disk["fault_id"], disk["start"]) == ("power-loss-all", 4, 5 * S)
    assert summarise(r) == (
        "1 reads out of bounds; first: clients [0] at 12.00s-12.50s "
        "during no fault, after power-loss-all at 5.00s"
    )
    lost = next(v for v in r.violations if v.kind == "lost")
    assert summarise(Result(False, {}, [lost])) == (
        "2 acknowledged increments lost: final read 0, but 2 adds were acknowledged, "
        "after power-loss-all at 5.00s"
    )
    # The run's verdict: the power line counts it (the counter workload judges belief overlaps,
    # a state fault is judged by every kind lost state can cause).
    power = _counter_verdict(h).parts["power"].details
    assert power["line"].startswith("1 violation in 1 landed power-loss-all fault: per-fault")


def _counter_verdict(h):
    from zkjepsen.run.analysis import check_history
    from zkjepsen.run.spec import TestSpec

    spec = TestSpec(workload="counter", nemesis=["power-loss-all"], session_timeout_s=2)
    return check_history(h.history(), spec)


def test_a_counter_read_names_the_last_disk_fault_before_it_not_one_after():
    h = _counter_after_power_loss()
    h.fault(1.5, 1.8, "power-loss-all", targets=SERVERS, fid=3, end=POWER_LOST)
    h.fault(20, 22, "power-loss-all", targets=SERVERS, fid=5, end=POWER_LOST)
    r = CounterChecker().check(h.history())
    assert {v.evidence["after_disk_fault"]["fault_id"] for v in r.violations} == {4}
    # and without a disk fault before it, a read out of bounds names none
    plain = Locks().hold(1, 1, 10).on(1, "/counter", 2, 2.5, "add")
    plain.fault(5, 8, "pause-client", end=PAUSED).on(0, "/counter", 12, 12.5, "read", value=0)
    (v, _) = CounterChecker().check(plain.history()).violations
    assert "after_disk_fault" not in v.evidence
    assert summarise(CounterChecker().check(plain.history())).endswith("during no fault")


def test_the_online_counter_read_is_placed_as_the_offline_one():
    h = _counter_after_power_loss()
    online = OnlineCounterChecker(clients=(0, 1))
    for op in h.history():
        online.feed(op.to_dict())
    online.finish()
    (found,) = online.confirmed()
    (offline, _) = CounterChecker().check(h.history()).violations
    placed = attributed(found, fault_windows(h.history()))
    assert placed.evidence["after_disk_fault"] == offline.evidence["after_disk_fault"]
    assert placed.faults == offline.faults


def test_a_reused_token_after_a_power_loss_counts_in_its_power_line():
    # Redis under appendfsync everysec (test_disk_faults' story): c1 and c3 are granted tokens 10
    # and 11; c3 holds again (token 12) when every server loses power at 20 s, and the INCRs go
    # with it: after the reboot c2 is granted 11 again, long after the fault's window.
    h = LockH()
    h.call(1 * S, 2 * S, 1, "acquire", "/l", out={"token": 10}, client=1)
    h.call(5 * S, 6 * S, 1, "release", "/l", client=1)
    h.call(7 * S, 8 * S, 3, "acquire", "/l", out={"token": 11}, client=3)
    h.call(11 * S, 12 * S, 3, "release", "/l", client=3)
    h.call(18 * S, 19 * S, 3, "acquire", "/l", out={"token": 12}, client=3)
    start = {"fault_id": 1, "phase": "start", "targets": list(SERVERS)}
    h.add(20 * S, "nemesis", "info", "power-loss-all", None, start)
    h.add(
        25 * S, "nemesis", "info", "power-loss-all", None, {**start, "phase": "end", **POWER_LOST}
    )
    h.call(26 * S, 27 * S, 3, "release", "/l", client=3)
    h.call(40 * S, 41 * S, 2, "acquire", "/l", out={"token": 11}, client=2)
    h.call(42 * S, 43 * S, 2, "release", "/l", client=2)
    hist = h.history()
    (reused,) = FencingChecker().check(hist).violations
    assert reused.kind == "reused-token" and reused.evidence["after_disk_fault"]["start"] == 20 * S
    p = power_of(hist, violations=[reused], session_timeout_s=2, prop="belief")
    assert (p.opportunities(), p.violated()) == (1, 1)
    assert p.line().startswith("1 violation in 1 landed power-loss-all fault")
    # the same grant after a kill of every server names no disk fault, and counts against none
    k = LockH()
    k.ops = [o for o in hist if o.process != "nemesis"]
    k.add(20 * S, "nemesis", "info", "kill-majority", None, {**start, "targets": ["n1", "n2"]})
    k.add(25 * S, "nemesis", "info", "kill-majority", None, {**start, "phase": "end",
          "targets": ["n1", "n2"], "detail": {"killed": ["n1", "n2"]}})  # fmt: skip
    (again,) = FencingChecker().check(k.history()).violations
    assert "after_disk_fault" not in again.evidence
    p = power_of(k.history(), violations=[again], session_timeout_s=2, prop="belief")
    assert (p.opportunities(), p.violated()) == (1, 0)


def test_the_disk_fault_before_is_the_latest_to_begin():
    h = Locks()
    h.fault(1, 2, "corrupt-file", targets=("n1",), fid=1)
    h.fault(3, 9, "power-loss-all", targets=SERVERS, fid=2)
    h.fault(4, 5, "pause-client", fid=3)
    h.fault(10, 11, "torn-write", targets=("n2",), fid=4)
    w = fault_windows(h.history())
    assert disk_fault_before(w, 6 * S)["after_disk_fault"]["fault_id"] == 2
    assert disk_fault_before(w, 3 * S)["after_disk_fault"]["fault_id"] == 2  # at its start
    assert disk_fault_before(w, int(0.5 * S)) == {} and disk_fault_before(w, None) == {}


# --- the rule, over random windows ------------------------------------------------------------

KINDS = ("pause-client", "kill-client", "kill-leader", "power-loss-all")
LOST_STATE = {"belief", "effect", "backwards", "reused-token", "read-out-of-bounds", "lost"}


@st.composite
def _runs(draw):
    """Clients 1-4 on locks /a (1, 2) and /b (3, 4), each holding in random windows; faults of
    every rule, a client fault mostly on a client while it holds; violations of random kinds,
    clients and windows, mostly near a fault, some naming a disk fault as the one before them."""
    h = Locks()
    holds = []
    for c in (1, 2, 3, 4):
        t = 0.0
        for _ in range(draw(st.integers(0, 3))):
            t += draw(st.floats(0.2, 4))
            length = draw(st.floats(0.2, 6))
            h.hold_on("/a" if c <= 2 else "/b", c, t, t + length)
            holds.append((c, t, t + length))
            t += length + 0.1
    faults = []
    for fid in range(1, draw(st.integers(1, 4)) + 1):
        kind = draw(st.sampled_from(KINDS))
        t0 = draw(st.floats(0, 20))
        t1 = t0 + draw(st.floats(0, 5))
        if kind in ("pause-client", "kill-client"):
            target = f"c{draw(st.integers(1, 4))}"
            if holds and draw(st.booleans()):  # on a holder, in its hold
                c, a, b = draw(st.sampled_from(holds))
                target, t0 = f"c{c}", draw(st.floats(a, b))
                t1 = t0 + draw(st.floats(0, 5))
            end = {"detail": {"frozen" if kind == "pause-client" else "killed": [target]}}
        else:
            target, end = "n1", _killed("n1") if kind == "kill-leader" else POWER_LOST
        h.fault(t0, t1, kind, targets=(target,) if kind != "power-loss-all" else SERVERS,
                fid=fid, end=end)  # fmt: skip
        faults.append((fid, kind, t0))
    violations = []
    for _ in range(draw(st.integers(0, 4))):
        near = draw(st.sampled_from(faults))[2]
        start = int(max(0.0, near + draw(st.floats(-3, 12))) * S)
        end = draw(st.none() | st.floats(0, 5).map(lambda d, s=start: s + int(d * S)))
        clients = tuple(draw(st.lists(st.integers(1, 5), max_size=2, unique=True)))
        ev = {}
        disk = [f for f in faults if f[1] == "power-loss-all"]
        if disk and draw(st.booleans()):
            fid, kind, t0 = draw(st.sampled_from(disk))
            ev["after_disk_fault"] = {"f": kind, "fault_id": fid, "start": int(t0 * S)}
        kind = draw(st.sampled_from(["belief", "effect", "read-out-of-bounds", "stuck"]))
        violations.append(Violation(kind, clients, start, end, evidence=ev))
    return h, violations, draw(st.sampled_from(["belief", "effect", "any"]))


def _expected(opp, v, prop, history_locks):
    """The rule as docs/verdicts.md states it, written out again."""
    until = opp.end + int(opp.timeout_s * S)  # the fault's window and its grace T
    meets = v.start <= until and (v.end is None or v.end >= opp.start)
    if opp.kind == "power-loss-all":
        disk = v.evidence.get("after_disk_fault") or {}
        named = (disk.get("fault_id"), disk.get("start")) == (opp.fault_id, opp.start)
        return v.kind in LOST_STATE and (named or meets)
    judged = {"belief": {"belief"}, "effect": {"effect"}}.get(prop, None)
    if judged is not None and v.kind not in judged:
        return False
    if opp.kind in ("pause-client", "kill-client") and v.clients:
        at_risk_locks = {history_locks[c] for c in opp.clients}
        others = [c for c in v.clients if c not in opp.clients]
        if len(others) == len(v.clients) and all(
            c in history_locks and history_locks[c] not in at_risk_locks for c in others
        ):
            return False
    return meets


@settings(max_examples=200, deadline=None)
@given(_runs())
def test_a_violation_counts_against_a_landed_fault_iff_the_rule_says_so(run):
    h, violations, prop = run
    hist = h.history()
    p = power_of(hist, violations=violations, session_timeout_s=2.0, prop=prop)
    took = {o.actor: o.key for o in hist if o.f == "acquire" and o.type == "invoke"}
    for opp in p.landed:
        want = any(_expected(opp, v, prop, took) for v in violations)
        assert opp.violated == want, (opp, violations)
    # More violations never make the power line read better: no landed fault un-violated, no
    # bound lowered.
    fewer = power_of(hist, violations=violations[:-1], session_timeout_s=2.0, prop=prop)
    assert all(a.violated <= b.violated for a, b in zip(fewer.landed, p.landed, strict=True))
    assert all(a.upper <= b.upper for a, b in zip(fewer.per_kind, p.per_kind, strict=True))
