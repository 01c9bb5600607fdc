"""The liveness bound (checker/liveness.py): after the last heal, a client that waits longer
than the service's session timeout plus election time while nobody holds the lock is stuck,
named with how long it waited; waiting behind other holders is a queue, not a hang."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from zkjepsen.checker.liveness import LivenessChecker
from zkjepsen.history import Op
from zkjepsen.report.summary import summarise

S = 1_000_000_000
FAULT = {"fault_id": 1, "phase": "start", "targets": ["c1"]}


def _ops(recs):
    return [
        Op.from_dict({"index": i, "time": int(t * S), "process": p, "type": ty, "f": f, "value": v})
        for i, (t, p, ty, f, v) in enumerate(sorted(recs, key=lambda r: r[0]))
    ]


def _history(holder_until=None):
    """Client 2 asks at 5 s (the heal was at 4 s) and gets the lock at 15 s; client 1 holds
    from 4.5 s to `holder_until` (None: it does not)."""
    recs = [
        (0, 1, "invoke", "acquire", None),
        (0.5, 1, "ok", "acquire", None),
        (1, 1, "invoke", "release", None),
        (1.1, 1, "ok", "release", None),
        (2, "nemesis", "info", "kill", FAULT),
        (4, "nemesis", "info", "kill", {**FAULT, "phase": "end"}),
        (5, 2, "invoke", "acquire", None),
        (15, 2, "ok", "acquire", None),
        (15.5, 2, "invoke", "release", None),
        (15.6, 2, "ok", "release", None),
        (20, 3, "invoke", "acquire", None),
        (20.1, 3, "ok", "acquire", None),
    ]
    if holder_until is not None:
        recs += [
            (4.4, 1, "invoke", "acquire", None),
            (4.5, 1, "ok", "acquire", None),
            (holder_until, 1, "invoke", "release", None),
            (holder_until + 0.05, 1, "ok", "release", None),
        ]
    return _ops(recs)


def test_a_waiter_past_the_bound_with_the_lock_free_is_stuck_and_named():
    unbound = LivenessChecker(grace_s=5).check(_history())
    assert unbound.valid is True  # the old rules alone see a grant after the heal
    res = LivenessChecker(grace_s=5).with_bound(3.0, 2.0).check(_history())
    assert res.valid is False and res.violations[0].kind == "stuck"
    stuck = res.details["stuck"][0]
    assert stuck["clients"] == [2] and stuck["waited_s"] == 10.0
    line = summarise(res)
    assert "client 2 waited 10.0 s" in line and "5 s (session 3 s + election 2 s)" in line


def test_waiting_behind_another_holder_is_a_queue_not_a_hang():
    res = LivenessChecker(grace_s=5).with_bound(3.0, 2.0).check(_history(holder_until=14.9))
    assert res.valid is True and res.details["bound_s"] == 5.0
    assert "within 5 s (session 3 s + election 2 s)" in summarise(res)
    # a longer bound covers the free 10 s too
    assert LivenessChecker(grace_s=5).with_bound(3.0, 8.0).check(_history()).valid is True


def test_the_bound_is_the_session_timeout_plus_what_the_backend_declares():
    from zkjepsen.backends.registry import backends
    from zkjepsen.run.analysis import checkers_for
    from zkjepsen.run.resolve import validate_spec
    from zkjepsen.run.spec import TestSpec

    for recipe, backend in (("kazoo", "zookeeper"), ("etcd-mutex-go", "etcd")):
        spec = TestSpec(recipe=recipe, session_timeout_s=3.0)
        validate_spec(spec)
        live = checkers_for(spec)["liveness"]
        assert live.bound == (3.0, backends()[backend].election_s)
    assert backends()["zookeeper"].election_s == 12.5  # (10 + 5) ticks of 500 ms + 5 s


def test_the_reports_since_2022_are_in_the_catalogue_with_their_sources():
    from zkjepsen.reproduce.scenarios import SCENARIOS

    assert len(SCENARIOS) >= 24
    sources = {
        "curator-696-latch-old-path": "CURATOR-696",
        "curator-696-latch-old-path-fixed": "CURATOR-696",
        "kazoo-282-servers-killed": "kazoo/issues/282",
        "etcd-17470-dead-holder-lease": "etcd/issues/17470",
        "curator-724-latch-parent-gone": "CURATOR-724",
        "curator-724-latch-parent-gone-curator2": "CURATOR-724",
    }
    for name, ticket in sources.items():
        # readable steps: "1. ... 2. ..."
        assert ticket in SCENARIOS[name].source and re.search(r"\d\. [A-Z]", SCENARIOS[name].why)
    # before the fix two leaders, after it none, on the same schedule
    before, after = (
        SCENARIOS["curator-696-latch-old-path"],
        SCENARIOS["curator-696-latch-old-path-fixed"],
    )
    assert before.schedule is after.schedule
    assert after.spec("curator-java-latch").service.given() == {"client_suite": "trixie"}
    assert "lock:belief" in before.expect["curator-java-latch"].present
    assert "lock:belief" in after.expect["curator-java-latch"].absent


def test_curator_724_leaves_the_latch_parent_to_curator_and_fast_container_reaping():
    from zkjepsen.backends.zookeeper.service import ensemble_spec
    from zkjepsen.reproduce.scenarios import SCENARIOS

    sc = SCENARIOS["curator-724-latch-parent-gone"]
    spec = sc.spec("curator-java-latch")
    assert spec.params["make_lock_path"] is False
    assert ensemble_spec(spec.service, 3, "img").settings.container_check_ms == 1000
    assert "liveness:stuck" in sc.expect["curator-java-latch"].present
    old = SCENARIOS["curator-724-latch-parent-gone-curator2"]  # Curator 2.7.1: before PR 430
    assert (
        old.schedule is sc.schedule and old.spec("x").service.given()["client_suite"] == "bullseye"
    )
    assert "liveness:stuck" in old.expect["curator-java-latch"].absent


def _queue(holds: list[float], gap: float) -> list[Op]:
    """Client 1 holds for each of `holds` seconds in turn, `gap` s between a release and its
    next grant; client 2 asks at 0.5 s and is granted only after the last release."""
    recs, t = [(0.5, 2, "invoke", "acquire", None)], 0.0
    for hold in holds:
        recs += [(t, 1, "invoke", "acquire", None), (t + 0.01, 1, "ok", "acquire", None)]
        t += 0.01 + hold
        recs += [(t, 1, "invoke", "release", None), (t + 0.01, 1, "ok", "release", None)]
        t += 0.01 + gap
    recs += [(t, 2, "ok", "acquire", None), (t + 0.1, 2, "invoke", "release", None)]
    return _ops(recs + [(t + 0.2, 2, "ok", "release", None)])


def test_a_waiter_behind_one_long_hold_is_in_a_queue_not_a_stall():
    """CURATOR-595's scenario: 20 s holds, a waiter behind one of them for 20 s, no fault. The
    stall rule (15 s with no grant) had called it stuck; nobody else's hold was subtracted."""
    assert LivenessChecker(grace_s=5).check(_queue([20.0], 0.05)).valid is True


def test_the_same_wait_with_the_lock_free_is_a_stall():
    res = LivenessChecker(grace_s=5).check(_queue([2.0], 18.0))
    assert res.valid is False and res.details["stuck"][0]["clients"] == [2]


@given(
    holds=st.lists(st.floats(0.1, 40.0), min_size=1, max_size=6),
    gap=st.floats(0.0, 40.0),
)
@settings(max_examples=300, deadline=None)
def test_a_stall_is_time_the_lock_stood_free_while_someone_waited(holds, gap):
    """Whatever the holds before client 2's grant, it is stalled exactly when a stretch with
    no grant held at least stall_s (15 s) of free lock, i.e. a free gap of 15 s or more
    between a release and the next grant: a queue of long holds is never one."""
    res = LivenessChecker(grace_s=5).check(_queue(holds, gap))
    free_gaps = [gap + 0.01] * len(holds)  # each release to the next grant, the lock free
    assert (res.valid is False) == any(g >= 15.0 for g in free_gaps), (holds, gap, res.details)


def _wedged(kill_end=None):
    """h2-2 (store/h2-redis_ex_units/.../hunt-kill-client/20261129T124337): client 3 granted at
    60.76 s, its process killed at 60.84 s (kill-client, healed 67.33 s); its key, put with a
    lease of 2000 s where 2 s was meant, outlives it; clients 1, 2 and 4, asking since 57-61 s,
    wait to the run's end (78.6 s), nobody granted. `kill_end`: the kill's end record (None:
    it was seen to kill client 3)."""
    from landed import with_observation

    start = {"fault_id": 1, "phase": "start", "targets": ["c3"]}
    end = with_observation("kill-client", ["c3"], kill_end)
    recs = [
        (57.06, 2, "invoke", "acquire", None),
        (57.07, 4, "invoke", "acquire", None),
        (60.74, 1, "invoke", "acquire", None),
        (60.70, 3, "invoke", "acquire", None),
        (60.76, 3, "ok", "acquire", {"token": 7}),
        (60.84, "nemesis", "info", "kill-client", start),
        (67.33, "nemesis", "info", "kill-client", {**start, "phase": "end", **end}),
        (78.6, 1, "info", "acquire", None),
        (79.0, 2, "info", "acquire", None),
        (79.6, 4, "info", "acquire", None),
    ]
    return _ops(recs)


def test_a_dead_holder_holds_nothing_a_lock_it_wedged_is_stuck():
    res = LivenessChecker(grace_s=5).with_bound(2.0, 5.0).check(_wedged())
    assert res.valid is False, res.details
    stuck = res.details["stuck"][0]
    assert stuck["clients"] in ([1], [2], [4]) and stuck["waited_s"] > 7.0
    assert "every waiter within" not in summarise(res)


def test_a_kill_that_did_not_kill_its_holder_leaves_it_holding():
    not_killed = {"detail": {"killed": [], "not_killed": ["c3"]}}
    res = LivenessChecker(grace_s=5).with_bound(2.0, 5.0).check(_wedged(not_killed))
    assert res.valid is True  # a live holder keeps the others waiting: a queue
