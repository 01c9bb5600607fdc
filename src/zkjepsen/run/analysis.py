"""From a history to a verdict and its evidence: the workload's checkers, counts, and reports.
What the runner does after a run, and what `analyze` does to a stored one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from zkjepsen.backends.registry import backends
from zkjepsen.checker import Result, compose, merge_valid
from zkjepsen.checker.liveness import LivenessChecker
from zkjepsen.checker.lock import LockChecker
from zkjepsen.checker.lock_observe import observe
from zkjepsen.checker.nature import Context, with_effect_natures, with_natures
from zkjepsen.checker.power import power_of
from zkjepsen.checker.recovery import recovery_of
from zkjepsen.history import History
from zkjepsen.report import render_run
from zkjepsen.report.counterexample import write_failures
from zkjepsen.run.accounting import with_clients
from zkjepsen.spec import TestSpec
from zkjepsen.store import REPORTS, RunDir
from zkjepsen.store.writable import can_create_in
from zkjepsen.workloads import get_workload

if TYPE_CHECKING:
    from zkjepsen.checker import Result


class Judged(Protocol):
    """What the reports need of a run (a RunResult, a StoredRun): its folder, its results."""

    @property
    def store_dir(self) -> Path: ...

    @property
    def results(self) -> Any: ...


def check_history(
    history: History,
    spec: TestSpec,
    store_dir: Path | None = None,
    checkers: dict[str, Any] | None = None,
) -> Result:
    """Run the workload's checkers (or `checkers`, a resolved test's) on a history (also what
    `analyze` does); with `store_dir`, write a counterexample HTML for every refuted
    linearizability checker there."""

    if checkers is None:
        checkers = checkers_for(spec)
    checked = with_power(compose(checkers).check(history), history, spec, checkers)
    checked = with_recovery(checked, history)
    with_fault_natures(checked, history, checkers)
    if store_dir is not None and checked.valid is not True:
        try:
            write_failures(checked, checkers, store_dir, history)
        except Exception as e:  # noqa: BLE001 - evidence, not the verdict
            checked.details["counterexample_error"] = f"{type(e).__name__}: {e}"
    return checked


def check_run(
    history: History,
    spec: TestSpec,
    store_dir: Path | None = None,
    checkers: dict[str, Any] | None = None,
) -> Result:
    """A run's verdict, after a run and in `analyze`: `check_history`, then every client the
    spec started accounted for (run/accounting.py: one that is not makes the run UNKNOWN)."""
    checked = check_history(history, spec, store_dir, checkers)
    return with_clients(checked, history, spec.clients or 0)


def checkers_for(spec: TestSpec) -> dict[str, Any]:
    """The workload's checkers for a test, liveness bound by what its service declares: the
    session (lease) timeout plus the backend's election time (`BackendInfo.election_s`)."""
    checkers = get_workload(spec.workload).checkers(spec.params)
    info = backends().get(spec.backend or "")
    for checker in checkers.values():
        if isinstance(checker, LivenessChecker) and info is not None:
            checker.with_bound(spec.session_timeout_s, info.election_s)
        if isinstance(checker, LockChecker):  # a split's nature is judged against the lease
            ttl = (spec.params or {}).get("lock_ttl_s")  # a lease recipe's own, else the session
            checker.with_lease(float(ttl) if ttl is not None else spec.session_timeout_s)
    return checkers


def with_power(
    checked: Result, history: History, spec: TestSpec, checkers: dict[str, Any]
) -> Result:
    """Add the verdict's power (checker/power.py) as its part `power`, for a lock under faults:
    valid with its figures when some fault landed where the lock could break, unknown when none
    did (a VALID that tested no fault is worth nothing). Workloads without a lock checker, and
    runs with nemesis `none`, are left as they were."""

    lock = next((c for c in checkers.values() if isinstance(c, LockChecker)), None)
    if lock is None or all(n == "none" for n in spec.nemesis):
        return checked
    acquire, release, _ = lock.names
    prop = next((k for k in ("belief", "effect") if k in lock.fail_on), "any")
    power = power_of(
        history,
        violations=[v for _, v in checked.named_violations()],
        session_timeout_s=spec.session_timeout_s,
        acquire=acquire,
        release=release,
        prop=prop,
    )
    table = power.to_json()
    if power.opportunities():
        checked.parts["power"] = Result(True, table)
    else:
        checked.parts["power"] = Result("unknown", {**table, "reason": power.reason()})
    checked.valid = merge_valid([r.valid for r in checked.parts.values()])
    return checked


def with_fault_natures(checked: Result, history: History, checkers: dict[str, Any]) -> None:
    """Each violation of the lock's other parts (atomicity, fencing, phantom) classified as the
    fault's nature or a defect of the lock (checker/nature.py: the lock part classifies its own
    splits the same way), into each part's details. The verdict does not change with it; the
    hunt reads it to tell a finding from a fault's nature."""
    lock = next((c for c in checkers.values() if isinstance(c, LockChecker)), None)
    if lock is None or not any(p.violations for p in checked.parts.values()):
        return
    obs = observe(history, *lock.names)
    releases: dict[Any, set[int]] = {}
    abandons: dict[Any, list[int]] = {}  # a holder that gave up mid-update (client/loop.py)
    for op in history.ops:
        if op.type == "invoke" and op.f in lock.names[1]:
            releases.setdefault(op.actor, set()).add(op.time)
        elif op.type == "event" and op.f == "abandon":
            abandons.setdefault(op.actor, []).append(op.time)
    ctx = Context(
        obs.nemesis,
        obs.sessions,
        lock.lease_s,
        obs.last_time,
        obs.holds,
        releases,
        abandons,
        obs.acts,
        obs.told,
        obs.unsure,
        obs.dark,
        obs.back,
    )
    with_natures({n: p for n, p in checked.parts.items() if n != "lock"}, ctx)
    if "lock" in checked.parts:
        with_effect_natures(checked.parts["lock"], ctx)


def with_recovery(checked: Result, history: History) -> Result:
    """Add whether every server a disk fault stopped booted again (checker/recovery.py) as the
    part `recovery`, for a run with such a fault: a server that could not is a finding of its
    own (INVALID), whatever the lock saw."""
    recovery = recovery_of(history)
    if recovery is None:
        return checked
    checked.parts["recovery"] = recovery
    checked.valid = merge_valid([r.valid for r in checked.parts.values()])
    return checked


def history_stats(records: list[dict[str, Any]]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for r in records:
        if r.get("type") in ("ok", "fail", "info"):
            key = f"{r.get('f')}:{r['type']}"
            counts[key] = counts.get(key, 0) + 1
    return {"ops": counts, "records": len(records)}


def render_reports(run: Judged, history: History) -> None:
    """timeline.html, latency.png and rate.png; a failing renderer never changes the verdict."""
    try:
        render_run(RunDir(run.store_dir), history, run.results)
    except Exception as e:  # noqa: BLE001 - reports are evidence, not the verdict
        with RunDir(run.store_dir).run_log.open("a") as f:
            f.write(f"report rendering failed: {e}\n")


def finish_report(run: Judged, history: History) -> list[str]:
    """What an interrupted run's folder lacks, written now by `analyze`: results.json (only when
    there is none: a stored verdict is never overwritten, `analyze` compares with it) and the
    reports. Returns the names written; none when the folder is read-only (a corpus copy)."""

    d = RunDir(run.store_dir)
    _, missing = d.inventory()
    todo = [n for n in missing if n == d.results.name or n in REPORTS]
    if not todo or not can_create_in(str(d.path)):
        return []
    if d.results.name in todo:
        d.save_results(run.results)
    if any(n in REPORTS for n in todo):
        render_reports(run, history)
    _, still = d.inventory()
    return [n for n in todo if n not in still]
