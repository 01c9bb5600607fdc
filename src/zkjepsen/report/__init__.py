"""Reports drawn from a stored run: timeline.html, latency.png, rate.png (and, for the
linearizability checker, counterexample.html via `report.counterexample`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def render_run(store_dir: Path, history: Any, results: dict | None) -> list[Path]:
    """Write every report of one run into its store dir; returns the paths written."""
    from zkjepsen.report.plots import write_plots
    from zkjepsen.report.timeline import write_timeline

    records = [op.to_dict() for op in history] if not isinstance(history, list) else history
    return [write_timeline(store_dir, records, results), *write_plots(store_dir, records)]
