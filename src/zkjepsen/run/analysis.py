"""From a history to a verdict and its evidence: the workload's checkers, counts, and reports.
What the runner does after a run, and what `analyze` does to a stored one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from zkjepsen.run.spec import TestSpec
from zkjepsen.store import RunDir

if TYPE_CHECKING:
    from zkjepsen.checker import Result


def check_history(
    history, spec: TestSpec, store_dir: Path | None = None, checkers: dict | None = None
) -> Result:
    """Run the workload's checkers (or `checkers`, a resolved test's) on a history (also what
    `analyze` does); with `store_dir`, write a counterexample HTML for every refuted
    linearizability checker there."""
    from zkjepsen.checker import compose
    from zkjepsen.workloads import get_workload

    if checkers is None:
        checkers = get_workload(spec.workload).checkers(spec.params)
    checked = compose(checkers).check(history)
    if store_dir is not None and checked.valid is not True:
        try:
            from zkjepsen.report.counterexample import write_failures

            write_failures(checked, checkers, store_dir, history)
        except Exception as e:  # noqa: BLE001 - evidence, not the verdict
            checked.details["counterexample_error"] = f"{type(e).__name__}: {e}"
    return checked


def history_stats(records: list[dict]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for r in records:
        if r.get("type") in ("ok", "fail", "info"):
            key = f"{r.get('f')}:{r['type']}"
            counts[key] = counts.get(key, 0) + 1
    return {"ops": counts, "records": len(records)}


def render_reports(run, history) -> None:
    """timeline.html, latency.png and rate.png; a failing renderer never changes the verdict.
    `ZKJEPSEN_REPORTS=off`: none (a controller container: they are rendered after the fetch)."""
    import os

    if os.environ.get("ZKJEPSEN_REPORTS", "").strip().lower() == "off":
        return
    try:
        from zkjepsen.report import render_run
    except ImportError:
        return
    try:
        render_run(RunDir(run.store_dir), history, run.results)
    except Exception as e:  # noqa: BLE001 - reports are evidence, not the verdict
        with RunDir(run.store_dir).run_log.open("a") as f:
            f.write(f"report rendering failed: {e}\n")


def finish_report(run, history) -> list[str]:
    """What an interrupted run's folder lacks, written now by `analyze`: results.json (only when
    there is none: a stored verdict is never overwritten, `analyze` compares with it) and the
    reports. Returns the names written; none when the folder is read-only (a corpus copy)."""
    from zkjepsen.store import REPORTS
    from zkjepsen.store.writable import can_create_in

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
