"""The power of a verdict on hand-made histories: which faults are opportunities, which a
violation followed, and the bounds (docs/verdicts.md). Their faults carry the observation their
nemesis records when it sees them land (landed.py), unless a test says they were not seen."""

from __future__ import annotations

import json

import pytest
from landed import with_observation

from zkjepsen.checker import Violation
from zkjepsen.checker.power import Power, power_of, rule_of, upper_bound
from zkjepsen.history import History, Op

S = 1_000_000_000


class H:
    """Times in seconds; client N is process N."""

    def __init__(self):
        self.ops: list[Op] = []

    def add(self, t, process, typ, f, key=None, value=None, client=None):
        self.ops.append(Op(len(self.ops), int(t * S), process, typ, f, key, value, client))
        return self

    def call(self, t0, t1, c, f, typ="ok", value=None):
        self.add(t0, c, "invoke", f, "/l", None, c)
        return self.add(t1, c, typ, f, "/l", value, c)

    def hold(self, c, t_ok, t_rel):
        """Client c acquires (invoke 0.1 s before the ok) and releases at t_rel."""
        self.call(t_ok - 0.1, t_ok, c, "acquire", value={"token": int(t_ok * 10)})
        return self.call(t_rel, t_rel + 0.05, c, "release")

    def session(self, c, t, timeout_s):
        return self.add(t, c, "event", "session", None, {"timeout_ms": int(timeout_s * 1000)}, c)

    def fault(self, t0, t1, f, targets=("c1",), fid=1, start=None, end=None, seen=True):
        """A fault's start and end records; `seen`: its end carries the observation that makes
        it land (landed.py), as its nemesis writes it (False: as a run stored before those)."""
        self.add(
            t0, "nemesis", "info", f, None,
            {"fault_id": fid, "phase": "start", "targets": list(targets), **(start or {})},
        )  # fmt: skip
        end = with_observation(f, targets, end) if seen else end
        return self.add(
            t1, "nemesis", "info", f, None,
            {"fault_id": fid, "phase": "end", "targets": list(targets), **(end or {})},
        )  # fmt: skip

    def history(self):
        return History(sorted(self.ops, key=lambda o: o.time))


def power(h, violations=(), timeout=2.0, **kw):
    return power_of(h.history(), violations=violations, session_timeout_s=timeout, **kw)


def test_a_pause_while_nobody_held_is_no_opportunity():
    h = H().hold(1, 1, 2).hold(2, 8, 9).fault(3, 6, "pause-client")
    p = power(h)
    assert p.opportunities() == 0 and p.faults() == 1
    assert p.line().startswith("no fault landed where it could break the lock (1 pause-client")


def test_a_pause_on_a_holder_shorter_than_its_session_is_no_opportunity():
    # c1 holds from 1 s to 5 s (it resumes and releases); the pause lasts 1.5 s < 2 s.
    h = H().hold(1, 1, 5).fault(2, 3.5, "pause-client")
    assert power(h).opportunities() == 0
    # the client's own negotiated timeout wins over the run's: 1 s < 1.5 s, so it counts
    h.session(1, 0.5, 1.0)
    assert power(h).opportunities() == 1


def test_a_pause_on_a_holder_past_its_session_is_one_opportunity():
    h = H().hold(1, 1, 5.5).fault(2, 5, "pause-client")
    p = power(h)
    assert p.opportunities() == 1 and p.violated() == 0
    (o,) = p.landed
    assert o.clients == (1,) and o.timeout_s == 2.0 and not o.violated
    assert p.line() == (
        "0 violations in 1 landed client-pause: per-pause violation rate ≤ 95.0 % (95 %)"
    )


def test_the_fault_s_own_session_timeout_is_the_one_to_exceed():
    h = H().hold(1, 1, 5.5).fault(2, 5, "pause-client", start={"detail": {"session_timeout_s": 4}})
    assert power(h).opportunities() == 0  # 3 s of pause < its 4 s session


def test_a_holder_that_stopped_believing_in_time_is_no_opportunity():
    # isolated at 2 s, it releases at 3 s (careful): its belief met the cut for 1 s < 2 s
    h = H().hold(1, 1, 3).fault(2, 6, "isolate-client")
    assert power(h).opportunities() == 0


def test_a_waiter_paused_past_its_session_is_in_the_acquire_path():
    # c2 invoked acquire at 2.9 s and waits behind c1 until 9 s; paused 3-6 s
    h = H().hold(1, 1, 8.9).call(2.9, 9, 2, "acquire", value={"token": 2})
    h.fault(3, 6, "pause-client", ("c2",))
    (o,) = power(h).landed
    assert o.clients == (2,)
    # a waiter that gave up (its acquire failed) at 4 s was in the path 1 s of the pause
    h = (
        H()
        .hold(1, 1, 8.9)
        .call(2.9, 4, 2, "acquire", typ="fail")
        .fault(3, 6, "pause-client", ("c2",))
    )
    assert power(h).opportunities() == 0


def test_the_nemesis_own_misses_never_count():
    h = H().hold(1, 1, 6)
    h.fault(2, 5, "pause-client", end={"landed": False})
    h.fault(2, 5, "pause-client", fid=2, end={"detail": {"holding_when_hit": False}})
    h.fault(2, 5, "pause-client", fid=3, start={"error": "unable to freeze"})
    h.fault(2, 5, "pause-client", fid=4, end={"error": "APIError: unable to freeze"})
    p = power(h)
    assert p.opportunities() == 0 and (p.faults(), p.missed()) == (4, 4)
    (k,) = p.per_kind
    assert dict(k.missed_why) == {
        "its trigger's state had ended": 1,
        "the holder had let go when hit": 1,
        "never went in: unable to freeze": 1,
        "never went in: APIError: unable to freeze": 1,
    }


def test_a_fault_not_seen_at_its_target_is_missed_and_left_out_of_the_power_line():
    # Two pauses of the holder past its session: the first seen frozen, the second not.
    h = H().hold(1, 1, 6).fault(2, 5, "pause-client")
    h.hold(2, 7, 12).fault(8, 11, "pause-client", ("c2",), fid=2, seen=False)
    p = power(h, prop="belief")
    assert (p.faults(), p.opportunities(), p.missed()) == (2, 1, 1)
    assert p.line() == (
        "0 split holders in 1 landed client-pause (1 missed: no observation recorded): "
        "per-pause split rate ≤ 95.0 % (95 %)"
    )
    # the one seen landed, with the second's observation saying it was not frozen
    h = H().hold(1, 1, 6).fault(2, 5, "pause-client", end={"detail": {"frozen": []}})
    p = power(h)
    assert p.opportunities() == 0 and p.line() == (
        "no fault landed where it could break the lock (1 pause-client missed: never seen "
        "frozen; docs/verdicts.md)"
    )
    table = json.loads(json.dumps(p.to_json()))
    assert table["missed"] == 1 and Power.from_json(table) == p
    pooled = Power.pooled([p, p])
    assert pooled.per_kind[0].missed_why == (("never seen frozen", 2),)


@pytest.mark.parametrize(
    "kind, targets",
    [
        ("pause-client", ("c1",)),  # process: pause
        ("kill-client", ("c1",)),  # process: kill
        ("kill-leader", ("n1",)),
        ("isolate-client", ("c1",)),  # network
        ("partition-redlock-restart", ("c1",)),
        ("clock-skew-client", ("c1",)),  # clock
        ("clock-rate-leader", ("n1",)),
        ("power-loss-all", ("n1", "n2")),  # disk
        ("corrupt-file", ("n1",)),
        ("member-remove", ("n2",)),  # membership
        ("rolling-upgrade", ("n2", "n3", "n1")),
        ("proxy-lose-create", ("c1",)),  # proxy
        ("pg-terminate-holder", ("c1",)),  # PostgreSQL
    ],
)
def test_every_family_without_its_observation_is_missed(kind, targets):
    """One hand-made history per family, its fault aimed where the lock could break: with the
    observation its nemesis records it lands; without it (a run stored before observations),
    it is missed, and the power line counts it apart."""
    h = H().hold(1, 1, 12).fault(2, 9, kind, targets)
    assert power(h).opportunities() == 1 and power(h).missed() == 0
    h = H().hold(1, 1, 12).fault(2, 9, kind, targets, seen=False)
    p = power(h)
    assert (p.faults(), p.opportunities(), p.missed()) == (1, 0, 1)
    assert p.per_kind[0].missed_why == (("no observation recorded", 1),)
    assert p.line().endswith(f"{kind} missed: no observation recorded; docs/verdicts.md)")


def test_re_armed_attempts_pair_by_order_and_only_the_landed_one_counts():
    h = H().hold(1, 1, 6)
    h.fault(1.5, 1.6, "pause-client", end={"landed": False})
    h.fault(2, 5, "pause-client", end={"landed": True})  # same fault id: the next attempt
    p = power(h)
    assert (p.faults(), p.opportunities()) == (2, 1)


def test_violated_by_a_violation_in_its_window_whoever_it_names():
    h = H().hold(1, 1, 6).hold(2, 4, 7).fault(2, 5, "pause-client")
    split = Violation("belief", (1, 2), 4 * S, 6 * S)
    assert power(h, [split]).violated() == 1
    other = Violation("belief", (2, 3), 4 * S, 6 * S)  # not the paused client: it counts too
    assert power(h, [other]).violated() == 1  # (test_power_attribution.py: why)
    late = Violation("effect", (1, 2), 9 * S, 10 * S)  # after the fault's end + its 2 s
    assert power(h, [late]).violated() == 0
    just_after = Violation("effect", (1, 2), int(6.5 * S), None)  # the stale write on thaw
    assert power(h, [just_after]).violated() == 1
    before = Violation("belief", (1, 2), 0, 1 * S)
    assert power(h, [before]).violated() == 0
    timeless = Violation("lost", (), None, None)
    assert power(h, [timeless]).violated() == 0


def test_kills_count_when_they_hit_a_holder():
    h = H().hold(1, 1, 3).hold(2, 5, 6)
    h.fault(2, 2.5, "kill-client")  # c1 held at 2 s
    h.fault(4, 4.5, "kill-client", targets=("c2",), fid=2)  # c2 was waiting, not holding
    h.fault(5.5, 9, "kill-leader", targets=("n1",), fid=3)  # c2 held at 5.5 s
    h.fault(7, 9, "kill-one", targets=("n2",), fid=4)  # nobody held at 7 s
    p = power(h)
    by = {k.kind: (k.faults, k.opportunities) for k in p.per_kind}
    assert by == {"kill-client": (2, 1), "kill-leader": (1, 1), "kill-one": (1, 0)}
    assert [o.clients for o in p.landed] == [(1,), (2,)]


def test_holders_at_kill_recorded_by_the_nemesis_win():
    h = (
        H()
        .hold(1, 1, 3)
        .fault(2, 4, "kill-one", targets=("n1",), end={"detail": {"holders_at_kill": []}})
    )
    assert power(h).opportunities() == 0


def test_server_silences_need_a_holder_believing_past_its_timeout():
    h = H().hold(1, 1, 2.5).hold(2, 3, 8)
    h.fault(2, 4, "partition-leader", targets=("n1",))  # c1 1 s of it, c2 1 s: neither
    h.fault(5, 7.5, "pause-server", targets=("n2",), fid=2)  # c2 held all 2.5 s of it
    by = {k.kind: k.opportunities for k in power(h).per_kind}
    assert by == {"partition-leader": 0, "pause-server": 1}


def test_proxy_faults_count_in_the_lock_path_and_clock_faults_while_held():
    h = H().call(1, 3, 1, "acquire", typ="fail")  # c1 waited 1-3 s, and gave up
    h.fault(2, 2.5, "proxy-lose-create")  # in its acquire path
    h.fault(4, 4.5, "proxy-drop-request", fid=2)  # after it left the path
    h.hold(2, 5, 6).fault(5.5, 20, "clock-skew-client", targets=("c2",), fid=3)
    by = {k.kind: k.opportunities for k in power(h).per_kind}
    assert by == {"clock-skew-client": 1, "proxy-drop-request": 0, "proxy-lose-create": 1}


def test_a_kind_no_declaration_knows_counts_while_anyone_is_at_risk():
    """An old history's fault kind, since renamed: the mildest rule (tests/unit/
    test_faultkinds.py shows a declared kind getting its own), landed as its nemesis said
    (`observed`, written when it knew the kind); without that, missed."""
    assert rule_of("some-old-fault") == "during"
    h = H().hold(1, 1, 6).fault(2, 2.5, "some-old-fault", targets=("n1",))
    (k,) = power(h).per_kind
    assert (k.kind, k.opportunities) == ("some-old-fault", 1)
    assert "1 landed some-old-fault fault: per-fault" in power(h).line()
    h = H().hold(1, 1, 6).fault(2, 2.5, "some-old-fault", targets=("n1",), seen=False)
    assert power(h).opportunities() == 0 and power(h).missed() == 1


def test_bounds_exact_and_wilson_against_known_values():
    assert upper_bound(0, 27) == pytest.approx(1 - 0.05 ** (1 / 27))  # closed form at 0
    assert upper_bound(0, 27) == pytest.approx(0.1050, abs=5e-5)
    assert upper_bound(0, 3) == pytest.approx(0.6316, abs=5e-5)
    # Clopper-Pearson one-sided 95 % from the beta quantile, as tabulated (scipy:
    # beta.ppf(0.95, k + 1, n - k)): 1/10 -> 0.3942, 5/10 -> 0.7776
    assert upper_bound(1, 10) == pytest.approx(0.3942, abs=5e-5)
    assert upper_bound(5, 10) == pytest.approx(0.7776, abs=5e-5)
    # Wilson's one-sided bound is the upper end of the two-sided interval at z = 1.645
    from zkjepsen.report.stats import wilson

    for k, n in ((0, 27), (3, 27), (10, 40)):
        assert upper_bound(k, n, method="wilson") == pytest.approx(wilson(k, n, 1.6448536)[1])
    assert upper_bound(0, 27, method="wilson") == pytest.approx(0.0911, abs=5e-5)
    # exact is the conservative one; the "rule of three" is the large-n exact bound at 0
    assert upper_bound(0, 27, method="wilson") < upper_bound(0, 27) < 3 / 27
    assert upper_bound(0, 0) == upper_bound(4, 4) == 1.0
    assert [upper_bound(0, n) for n in (1, 5, 30, 300)] == sorted(
        (upper_bound(0, n) for n in (1, 5, 30, 300)), reverse=True
    )
    with pytest.raises(ValueError):
        upper_bound(3, 2)


def test_the_power_line_and_its_json():
    h = H()
    for i in range(27):  # 27 holds, each paused 3 s past a 2 s session
        t = 10 * i
        h.hold(1 + i % 3, t + 1, t + 6).fault(t + 2, t + 5, "pause-client", (f"c{1 + i % 3}",), i)
    p = power(h, prop="belief")
    assert p.line() == (
        "0 split holders in 27 landed client-pauses: per-pause split rate ≤ 10.5 % (95 %)"
    )
    table = json.loads(json.dumps(p.to_json()))
    assert table["line"] == p.line() and table["opportunities"] == 27
    assert Power.from_json(table) == p
    assert Power.from_json({"nope": 1}) is None


def test_only_the_property_judged_counts_as_violated():
    h = H().hold(1, 1, 6).hold(2, 4, 7).fault(2, 5, "pause-client")
    split = Violation("belief", (1, 2), 4 * S, 6 * S)
    assert power(h, [split], prop="effect").violated() == 0
    assert power(h, [split], prop="belief").violated() == 1
    stale = Violation("backwards", (2, 1), int(5.5 * S), 6 * S)
    assert power(h, [stale], prop="effect").violated() == 1


def _lock_verdict(h, nemesis=("pause-client",)):
    from zkjepsen.run.analysis import check_history
    from zkjepsen.run.spec import TestSpec

    spec = TestSpec(
        workload="lock", nemesis=list(nemesis), session_timeout_s=2, params={"writes": 0}
    )
    return check_history(h.history(), spec)


def test_a_valid_run_whose_faults_never_landed_is_unknown():
    h = H().hold(1, 1, 2).hold(2, 3, 4).hold(1, 5, 6).fault(2.1, 2.9, "pause-client")
    r = _lock_verdict(h)
    assert r.parts["lock"].valid is True  # the lock checker's own verdict stands
    assert r.parts["power"].valid == "unknown" and r.valid == "unknown"
    assert r.parts["power"].reason.startswith("no fault landed where it could break the lock")
    # without faults there is nothing to land: the verdict is the checkers' own
    assert (
        _lock_verdict(h, ("none",)).valid is True
        and "power" not in _lock_verdict(h, ("none",)).parts
    )


def test_a_valid_run_whose_fault_landed_states_its_power():
    h = H().hold(1, 1, 6).hold(2, 7, 8).fault(2, 5, "pause-client")
    r = _lock_verdict(h)
    assert r.valid is True
    assert r.parts["power"].details["line"] == (
        "0 split holders in 1 landed client-pause: per-pause split rate ≤ 95.0 % (95 %)"
    )
    table = json.loads(json.dumps(r.to_json()))
    assert table["power"]["valid"] is True and table["power"]["opportunities"] == 1


def test_pooled_runs_add_up_per_kind():
    one = power(H().hold(1, 1, 6).fault(2, 5, "pause-client"), prop="belief")
    none = power(H().hold(1, 1, 2).fault(3, 5, "pause-client"), prop="belief")
    p = Power.pooled([one] * 26 + [none, one])
    (k,) = p.per_kind
    assert (k.faults, k.opportunities, k.violated) == (28, 27, 0)
    assert k.upper == pytest.approx(upper_bound(0, 27)) and p.prop == "belief"
    assert Power.pooled([]).opportunities() == 0


def test_a_power_loss_is_judged_by_what_it_took_whoever_that_names():
    # c1 holds when the power of every server goes at 3 s (until 8 s); c2 held and released
    # before it. Its lock node's delete was lost: after the reboot c2 gets its token again.
    h = H().hold(2, 1, 2).hold(1, 2.5, 4).fault(3, 8, "power-loss-all", targets=("n1", "n2"))
    reused = Violation("reused-token", (2, 2), 1 * S, 9 * S)  # one grant to the other
    p = power(h, [reused], prop="belief")
    assert (p.opportunities(), p.violated()) == (1, 1)
    assert p.line().startswith("1 violation in 1 landed power-loss-all fault: per-fault")
    # ... named by the checker as the disk fault before it, though its window is later.
    later = Violation(
        "backwards",
        (3, 2),
        20 * S,
        21 * S,
        evidence={"after_disk_fault": {"f": "power-loss-all", "fault_id": 1}},
    )
    assert power(h, [later], prop="belief").violated() == 1
    # Not: a violation long after without that attribution, one of another fault, a kind that
    # is not the lock's or the fence's, and the same reused token after a kill.
    assert power(h, [Violation("reused-token", (2, 3), 20 * S, 21 * S)]).violated() == 0
    other = {"after_disk_fault": {"f": "power-loss-all", "fault_id": 7}}
    assert power(h, [Violation("backwards", (3,), 20 * S, 21 * S, evidence=other)]).violated() == 0
    assert power(h, [Violation("half-done-read", (2,), 5 * S, 9 * S)]).violated() == 0
    k = H().hold(2, 1, 2).hold(1, 2.5, 4).fault(3, 8, "kill-one", targets=("n1",))
    assert power(k, [reused], prop="belief").line().startswith("0 split holders in 1 landed")
