"""Reports drawn from a stored run: timeline.html, latency.png, rate.png (and, for the
linearizability checker, counterexample.html via `report.counterexample`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from zkjepsen.report.plots import write_plots

if TYPE_CHECKING:
    from zkjepsen.report.files import ReportFiles


def render_run(files: ReportFiles, history: Any, results: dict | None) -> list[Path]:
    """Write every report of one run into its folder; returns the paths written."""

    # here, not at the top: keeps the commands' start-up light (`list`, `--help`)
    from zkjepsen.report.timeline import write_timeline

    records = [op.to_dict() for op in history] if not isinstance(history, list) else history
    return [write_timeline(files, records, results), *write_plots(files, records)]
