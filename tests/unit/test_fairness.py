"""Issue 23: failed releases are said in the verdict (and make a run with no fault UNKNOWN), and a
client that starved while others held the lock is a liveness finding, not an untested run.
Hand-built histories; exact verdicts and words (checker/fairness.py states the rules)."""

from __future__ import annotations

from zkjepsen.checker import compose
from zkjepsen.checker.exercised import Exercised
from zkjepsen.checker.liveness import LivenessChecker
from zkjepsen.history import History, Op
from zkjepsen.report.summary import summarise
from zkjepsen.workloads import get_workload

S = 1_000_000_000
NOT_ALL = ": the run did not test all it claims to"


def history(*recs: tuple) -> History:
    """(time_s, client, type, f, value[, error]) records; the client is also the process."""
    ops = []
    for i, (t, c, typ, f, v, *err) in enumerate(sorted(recs, key=lambda r: r[0])):
        d = {"index": i, "time": int(t * S), "process": c, "type": typ, "f": f, "value": v}
        if c != "nemesis":
            d |= {"client": c, "key": "/l"}
        if err:
            d["error"] = err[0]
        ops.append(Op.from_dict(d))
    return History(ops)


def cycle(t: float, c: int, token: int, release: str = "ok", error: str | None = None) -> list:
    """acquire ok -> write ok -> release (`release`: its completion type) by client c at t."""
    return [
        (t, c, "invoke", "acquire", None),
        (t + 0.1, c, "ok", "acquire", {"token": token}),
        (t + 0.15, c, "invoke", "write", {"token": token}),
        (t + 0.18, c, "ok", "write", {"token": token}),
        (t + 0.2, c, "invoke", "release", None),
        (t + 0.3, c, release, "release", None, *([error] if error else [])),
    ]


def fault(start: float, end: float) -> list:
    v = {"fault_id": 1, "targets": ["c1"]}
    return [
        (start, "nemesis", "info", "pause-client", {**v, "phase": "start"}),
        (end, "nemesis", "info", "pause-client", {**v, "phase": "end"}),
    ]


def lock_parts(h: History):
    return compose(get_workload("lock").checkers({"writes": 1})).check(h)


# --- failed releases ---


def test_a_release_that_always_raises_makes_a_run_without_faults_unknown():
    # The recipe: release() really releases, then raises; every release is `info`.
    h = history(*[r for i in range(6) for r in cycle(i, 1 + i % 2, i + 1, "info", "RuntimeError")])
    res = lock_parts(h)
    assert res.valid == "unknown"
    assert res.parts["lock"].valid is True  # the belief checks are still sound
    ex = res.parts["exercised"]
    assert ex.reason == "no release succeeded (6 completed, all failed)" + NOT_ALL
    assert ex.details["releases_failed_without_fault"] == 6
    assert ex.details["first_failed_release"]["error"] == "RuntimeError"


def test_one_release_failing_with_no_fault_makes_the_run_unknown():
    h = history(*cycle(0, 1, 1), *cycle(1, 2, 2, "info", "RuntimeError"), *cycle(2, 1, 3))
    ex = lock_parts(h).parts["exercised"]
    assert ex.valid == "unknown"
    assert ex.reason == (
        "1 of 3 release(s) failed with no fault active (first, client 2: info RuntimeError), "
        "so the lock's hand-over was not tested" + NOT_ALL
    )


def test_releases_failing_during_a_fault_keep_the_verdict_and_are_said():
    # One fails inside the fault, one 2 s after it healed (within the 5 s grace).
    h = history(
        *cycle(0, 1, 1),
        *fault(0.9, 1.5),
        *cycle(1, 2, 2, "info", "ConnectionLoss"),
        *cycle(3.2, 1, 3, "info", "ConnectionLoss"),
        *cycle(12, 2, 4),
    )
    res = lock_parts(h)
    ex = res.parts["exercised"]
    assert ex.valid is True
    assert ex.details["releases_failed_in_faults"] == 2
    assert ex.details["note"] == "2 of 4 release(s) failed during faults (2 ConnectionLoss)"
    assert summarise(ex) == ex.details["note"]  # the CLI's verdict line shows it


def test_a_run_without_releases_is_not_judged_on_them():
    h = history(*cycle(0, 1, 1)[:4])
    r = Exercised(release=("release",)).check(h)
    assert r.valid is True and r.details["releases"] == 0 and "note" not in r.details


# --- starvation ---


def starving(error: str | None = None, typ: str = "fail") -> History:
    """Clients 1 and 3 take turns holding for 10 s; client 2 polls (1 s timeouts), never wins."""
    recs = [r for i in range(10) for r in cycle(i, 1 + 2 * (i % 2), i + 1)]
    for i in range(8):
        recs += [(i + 0.5, 2, "invoke", "acquire", None), (i + 1.45, 2, typ, "acquire", None)]
        if error:
            recs[-1] = (*recs[-1], error)
    return history(*recs)


def test_a_client_that_timed_out_while_others_held_starved():
    h = starving("timeout")
    ex = Exercised(per_client=("acquire",)).check(h)
    assert ex.valid is True
    assert ex.details["starved"] == [2]
    assert ex.details["note"] == "client(s) 2 starved (liveness)"
    live = LivenessChecker().check(h)
    assert live.valid is True
    fair = live.details["fairness"]
    assert fair["acquisitions"] == {1: 5, 3: 5, 2: 0}
    assert fair["starved"] == [2]
    assert fair["longest_wait_s"][2] == 7.95  # 0.5 s to 8.45 s, each retry within 1 s
    assert summarise(live) == (
        "starvation: client(s) 2 never got the lock while others did (longest wait 8.0 s); "
        "acquisitions per client 0-5"
    )


def test_a_client_that_could_not_acquire_because_of_errors_is_untested():
    for h, why in [
        (starving("ConnectionLoss"), "an acquire ended fail (ConnectionLoss)"),
        (starving(typ="info"), "an acquire ended info (no error)"),
    ]:
        ex = Exercised(need=("acquire",), per_client=("acquire",)).check(h)
        assert ex.valid == "unknown"
        assert ex.reason == (
            f"client(s) 2 invoked acquire but no acquire of theirs succeeded (2: {why})" + NOT_ALL
        )
        assert LivenessChecker().check(h).details["fairness"]["starved"] == []


def test_a_client_that_logged_errors_or_that_nobody_beat_is_untested():
    from zkjepsen.checker.fairness import fairness

    h = history(
        *cycle(0, 1, 1),
        (1, 2, "invoke", "acquire", None),
        (2, 2, "fail", "acquire", None, "timeout"),
        (3, 3, "invoke", "acquire", None),
        (3.5, 3, "event", "recipe-error", "boom"),
        (4, 3, "fail", "acquire", None, "timeout"),
    )
    assert fairness(h.ops, ("acquire",))["untested"] == {
        2: "nobody got the lock while it asked",
        3: "it logged error events",
    }


def test_an_unfair_recipe_runs_fewer_clients_unless_told():
    from zkjepsen.run.resolve import settle, spec_from_json
    from zkjepsen.run.spec import TestSpec

    assert TestSpec().clients is None  # the plain value names no registry: resolve settles it
    assert settle(TestSpec()).clients == 10
    assert settle(TestSpec(recipe="pg-for-update")).clients == 5  # NOWAIT polling starves
    assert spec_from_json({"recipe": "pg-for-update", "clients": 10}).clients == 10
    assert settle(TestSpec(recipe="pg-advisory")).clients == 10
