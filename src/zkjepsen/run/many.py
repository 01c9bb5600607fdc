"""Where a command's runs go: here (`--parallel` slots on one engine, run/fanout.py) or, with
`--cluster`, as tasks on a Dask cluster's workers (run/dask_executor.py). Both give the
outcomes in job order with the same rules for errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from zkjepsen.docker.engine import Engine
from zkjepsen.run import dask_executor, fanout
from zkjepsen.run.fanout import Job, Outcome


def run_jobs(
    jobs: list[Job],
    engine: Engine | None = None,
    parallel: int = 1,
    store_root: Path | None = None,
    on_start: Callable[[int, Job, Any], None] = lambda i, j, e: None,
    on_done: Callable[[int, Outcome], None] = lambda i, o: None,
    keep_going: bool = False,
    cluster: Any = None,
    stop_when: Callable[[Outcome], bool] | None = None,
    ask_at_violation: bool = False,
) -> list[Outcome]:
    """`fanout.run_jobs`, or with `cluster` (a connected Dask client) every job a task there."""
    if cluster is None:
        return fanout.run_jobs(
            jobs,
            engine,
            parallel,
            store_root,
            on_start,
            on_done,
            keep_going,
            stop_when,
            ask_at_violation,
        )
    return dask_executor.run_jobs_on_cluster(
        jobs,
        "",
        store_root,
        on_start,
        on_done,
        keep_going,
        client=cluster,
        stop_when=stop_when,
        ask_at_violation=ask_at_violation,
    )
