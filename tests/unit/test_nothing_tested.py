"""Issue 10: a run that exercised nothing is never VALID, and issue 11: typed verdicts.

Each case is a hand-built history; each asserts the exact verdict and the exact reason, so a
checker that drifts back to "valid" (or changes its words) fails here.
"""

from __future__ import annotations

import json
import math

import pytest

from zkjepsen.checker import Result, Violation, compose
from zkjepsen.checker.counter import CounterChecker
from zkjepsen.checker.exercised import Exercised
from zkjepsen.checker.fencing import FencingChecker
from zkjepsen.checker.linear import Linearizable, make_model
from zkjepsen.checker.liveness import LivenessChecker
from zkjepsen.checker.lock import LockChecker
from zkjepsen.checker.queue import QueueChecker
from zkjepsen.errors import BadInput
from zkjepsen.history import History, Op
from zkjepsen.reproduce.replay import first_violation_ns, violation_kinds
from zkjepsen.reproduce.scenarios import Expectation
from zkjepsen.run.analysis import check_history
from zkjepsen.run.spec import TestSpec
from zkjepsen.workloads import get_workload

S = 1_000_000_000
NOT_ALL = ": the run did not test all it claims to"


def history(*recs: tuple) -> History:
    """(time_s, client, type, f, value) records; the client is also the process."""
    return History(
        [
            Op.from_dict(
                {
                    "index": i,
                    "time": int(t * S),
                    "process": c,
                    "client": c,
                    "type": typ,
                    "f": f,
                    "value": v,
                    "key": "/l",
                }
            )
            for i, (t, c, typ, f, v) in enumerate(recs)
        ]
    )


def cycle(t: float, c: int, token: int) -> list[tuple]:
    """One acquire ok -> release ok by client c at t."""
    return [
        (t, c, "invoke", "acquire", None),
        (t + 0.1, c, "ok", "acquire", {"token": token}),
        (t + 0.2, c, "invoke", "release", None),
        (t + 0.3, c, "ok", "release", None),
    ]


def parts(workload: str, h: History) -> dict[str, Result]:
    return compose(get_workload(workload).checkers({})).check(h).parts


def test_an_unimportable_recipe_is_unknown_not_valid():
    # The issue's case: 120 recipe-error events, 0 acquires; today's verdict was VALID.
    err = "ModuleNotFoundError: No module named 'mypkg'"
    h = history(*[(i * 0.5, 1 + i % 5, "event", "recipe-error", err) for i in range(120)])
    res = compose(get_workload("lock").checkers({})).check(h)
    assert res.valid == "unknown"
    assert res.parts["exercised"].reason == (
        f"no acquire succeeded; 120 recipe-error event(s) (first, client 1: {err})" + NOT_ALL
    )
    assert res.parts["lock"].reason == (
        "no acquire succeeded: the lock was never held, so mutual exclusion was not tested"
    )
    assert res.parts["fencing"].reason == (
        "no acquire succeeded and no write was accepted: fencing was not tested"
    )
    assert res.parts["liveness"].reason == "no client ops: progress was not tested"


def test_a_class_without_acquire_is_unknown():
    from zkjepsen.recipes import make_recipe

    class NoAcquire:
        def __init__(self, zk, path):
            pass

        def release(self):
            pass

        def holding(self):
            return False

    import sys
    import types

    mod = types.ModuleType("zkj_test_noacquire")
    mod.NoAcquire = NoAcquire  # type: ignore[attr-defined]
    sys.modules[mod.__name__] = mod
    try:
        with pytest.raises(BadInput) as e:
            make_recipe("zkj_test_noacquire:NoAcquire", None, "/l")
    finally:
        del sys.modules[mod.__name__]
    # lock_loop records that error as a recipe-error event, every half second, per client
    err = f"BadInput: {e.value}"
    h = history(*[(i * 0.5, c, "event", "recipe-error", err) for i in range(4) for c in (1, 2)])
    res = compose(get_workload("election").checkers({})).check(h)
    assert res.valid == "unknown"
    assert res.parts["exercised"].reason == (
        f"no elected succeeded; 8 recipe-error event(s) (first, client 1: {err[:120]})" + NOT_ALL
    )


@pytest.mark.parametrize("workload", ["lock", "election", "rwlock", "counter", "register", "queue"])
def test_an_empty_history_is_unknown_for_every_checker(workload):
    # `analyze` on an empty history.jsonl runs exactly this
    spec = TestSpec(recipe="kazoo", workload=workload)
    result = check_history(History([]), spec)
    assert isinstance(result, Result) and result.valid == "unknown"
    for name, part in result.parts.items():
        assert part.valid == "unknown", (workload, name)
        assert part.reason, (workload, name)


def test_nan_time_limit_is_refused_before_anything_runs():
    with pytest.raises(BadInput, match="time limit must be a finite number of seconds, not nan"):
        TestSpec(time_limit_s=math.nan)


def test_a_client_that_never_got_the_lock_was_not_tested():
    # Its attempt ended unknown: nothing shows the lock would have let it in (issue 23: a
    # clean timeout while another client held is starvation instead, test_fairness.py).
    h = history(
        *cycle(0, 1, 1),
        *cycle(1, 1, 2),
        (0.5, 2, "invoke", "acquire", None),
        (2.5, 2, "info", "acquire", None),
    )
    r = Exercised(need=("acquire",), per_client=("acquire",)).check(h)
    assert r.valid == "unknown"
    assert r.reason == (
        "client(s) 2 invoked acquire but no acquire of theirs succeeded "
        "(2: an acquire ended info (no error))" + NOT_ALL
    )
    assert Exercised().check(h).valid is True  # not asked per client: one acquire is enough


def test_a_client_error_makes_a_clean_run_unknown():
    h = history(
        *cycle(0, 1, 1),
        *cycle(1, 2, 2),
        (2, 3, "event", "client-error", "could not connect: timeout"),
    )
    res = compose(get_workload("lock").checkers({})).check(h)
    assert res.valid == "unknown" and res.parts["lock"].valid is True
    assert res.parts["exercised"].reason == (
        "1 client-error event(s) (first, client 3: could not connect: timeout)" + NOT_ALL
    )


def test_a_violation_still_wins_over_unknown():
    h = history(
        (0, 1, "invoke", "acquire", None),
        (0.1, 1, "ok", "acquire", {"token": 1}),
        (0.2, 2, "invoke", "acquire", None),
        (0.3, 2, "ok", "acquire", {"token": 2}),
        (0.4, 3, "event", "recipe-error", "boom"),
    )
    res = compose(get_workload("lock").checkers({})).check(h)
    assert res.valid is False
    assert violation_kinds(res) == {"lock:belief"}
    (v,) = res.parts["lock"].violations
    assert (v.kind, v.clients, v.start, v.end) == ("belief", (1, 2), int(0.3 * S), None)


def test_counter_needs_an_acknowledged_add_and_a_read():
    no_add = history((0, 1, "invoke", "read", None), (0.1, 1, "ok", "read", 0))
    r = CounterChecker().check(no_add)
    assert (r.valid, r.reason) == ("unknown", "no add was acknowledged: the counter was not tested")
    no_read = history((0, 1, "invoke", "add", 1), (0.1, 1, "ok", "add", 1))
    r = CounterChecker().check(no_read)
    assert (r.valid, r.reason) == (
        "unknown",
        "no read completed: nothing shows whether the acknowledged adds were kept",
    )
    both = history(
        (0, 1, "invoke", "add", 1),
        (0.1, 1, "ok", "add", 1),
        (0.2, 0, "invoke", "read", None),
        (0.3, 0, "ok", "read", 1),
    )
    assert CounterChecker().check(both).valid is True
    lost = history(
        (0, 1, "invoke", "add", 1),
        (0.1, 1, "ok", "add", 1),
        (0.2, 0, "invoke", "read", None),
        (0.3, 0, "ok", "read", 0),
    )
    r = CounterChecker().check(lost)
    assert r.valid is False and [v.kind for v in r.violations] == ["read-out-of-bounds", "lost"]
    assert r.violations[1].evidence == {"lost": 1, "acknowledged": 1, "final_value": 0}


def test_register_needs_an_ok_write_and_read():
    reads_only = history((0, 1, "invoke", "read", None), (0.1, 1, "ok", "read", 0))
    p = parts("register", reads_only)
    assert p["linearizable"].valid is True  # a read of the initial value is linearizable...
    assert (p["exercised"].valid, p["exercised"].reason) == (
        "unknown",
        "no write succeeded" + NOT_ALL,
    )


def test_a_model_that_reads_none_of_the_ops_is_unknown():
    with pytest.raises(BadInput, match="model 'register' has no operation 'acquire'"):
        Linearizable(make_model("register")).check(history(*cycle(0, 1, 1)))  # 254 in `check`
    nil_reads = history((0, 1, "invoke", "read", None), (0.1, 1, "ok", "read", None))
    r = Linearizable(make_model("counter")).check(nil_reads)
    assert (r.valid, r.reason) == (
        "unknown",
        "none of the history's ops (read) is one model 'counter' reads: nothing was tested",
    )
    failed = history((0, 1, "invoke", "add", 1), (0.1, 1, "fail", "add", 1))
    assert Linearizable(make_model("counter")).check(failed).valid is True  # it read the add
    r = Linearizable(make_model("register")).check(History([]))
    assert r.reason == "the history has no client ops: nothing was tested"


def test_queue_needs_an_enqueue_and_a_take():
    r = QueueChecker().check(history(*cycle(0, 1, 1)))  # `check --model queue` on a lock run
    assert (r.valid, r.reason) == ("unknown", "no enqueue succeeded: the queue was not tested")
    only_enq = history((0, 1, "invoke", "enqueue", 1), (0.1, 1, "ok", "enqueue", 1))
    r = QueueChecker().check(only_enq)
    assert (r.valid, r.reason) == (
        "unknown",
        "no dequeue or drain took a value: nothing shows what the queue kept",
    )


def test_checkers_on_an_empty_history():
    for c in (
        LockChecker(),
        FencingChecker(),
        LivenessChecker(),
        CounterChecker(),
        QueueChecker(),
        Exercised(),
    ):
        assert c.check(History([])).valid == "unknown", type(c).__name__


# ---------------------------------------------------------------- typed verdicts, results.json


def test_results_json_round_trip_keeps_old_keys_and_adds_violations():
    h = history(
        (0, 1, "invoke", "acquire", None),
        (0.1, 1, "ok", "acquire", {"token": 1}),
        (0.2, 2, "invoke", "acquire", None),
        (0.3, 2, "ok", "acquire", {"token": 2}),
    )
    res = compose(get_workload("lock").checkers({})).check(h)
    stored = json.loads(json.dumps(res.to_json()))
    lock = stored["lock"]
    assert lock["belief_overlap_count"] == 1 and lock["belief_overlaps"][0]["clients"] == [1, 2]
    assert lock["violations"][0]["kind"] == "belief"
    back = Result.from_json(stored)
    assert back.valid is False and set(back.parts) == set(res.parts)
    assert [v.to_json() for v in back.parts["lock"].violations] == lock["violations"]
    assert first_violation_ns(stored) == first_violation_ns(res) == int(0.3 * S)


def test_stored_results_from_before_typed_violations_still_read():
    old = {
        "valid": False,
        "lock": {
            "valid": False,
            "belief_overlap_count": 1,
            "belief_overlaps": [
                {"clients": [1, 2], "start": 5, "end": 9, "faults": [{"fault_id": 3}]}
            ],
        },
    }
    r = Result.from_json(old)
    assert r.parts["lock"].violations == [
        Violation("belief", (1, 2), 5, 9, ({"fault_id": 3},), old["lock"]["belief_overlaps"][0])
    ]
    assert violation_kinds(old) == {"lock:belief"} and first_violation_ns(old) == 9


def test_an_unknown_run_is_never_as_expected_by_a_scenario():
    res = compose(get_workload("lock").checkers({})).check(History([]))
    ok, why = Expectation(absent=frozenset({"lock:belief"})).judge(res.valid, res.to_json())
    assert ok is False and why.startswith("verdict unknown (lock: no acquire succeeded")
