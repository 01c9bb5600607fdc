"""`--cluster` benchmark: what a run costs as a Dask task, and a 4-run matrix on one worker vs two.

    .venv/bin/python benchmarks/dask_fanout.py   # ~6 min, root

The cluster is the integration tests' (tests/integration/dask_cluster.py): a scheduler, worker
"a" on this machine's engine, worker "b" in the network namespace of a second `dockerd`
(tests/second_engine.py) with the node image preloaded; each worker `--resources docker=1`.
Figures (printed; nothing is asserted):
- submit -> run started: from the moment the jobs are handed over to the moment each run's
  process began (its own wall clock, `Outcome.started_at`), for the first two runs of a
  4-run matrix, on the local fan-out (`--parallel 2`) and on the cluster (two workers);
- wall time of the same 4-run matrix: local --parallel 1 and 2, cluster on worker a alone and
  on both workers; with the 1-min load average after each.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "integration")]
from dask_cluster import Cluster, veth  # noqa: E402
from second_engine import NETNS, preload_image, second_engine  # noqa: E402

from zkjepsen.backends.zookeeper.image import zookeeper_recipe  # noqa: E402
from zkjepsen.docker.engine import Engine, provide_image  # noqa: E402
from zkjepsen.run import dask_executor, fanout  # noqa: E402
from zkjepsen.run.spec import TestSpec  # noqa: E402


def jobs() -> list[fanout.Job]:
    """4 runs: kazoo, one server, 2 clients, 4 s (as test_cluster.py's matrix)."""
    common = dict(nodes=1, clients=2, time_limit_s=4.0, session_timeout_s=3.0, recovery_s=5.0)
    return [
        fanout.Job(TestSpec(recipe="kazoo", nemesis=["none"], seed=s, **common), tag=s)
        for s in range(1, 5)
    ]


def timed(label: str, run) -> None:
    t0_wall, t0 = time.time(), time.monotonic()
    outcomes = run()
    wall = time.monotonic() - t0
    starts = sorted(o.started_at - t0_wall for o in outcomes if o.started_at)
    verdicts = [o.run.valid for o in outcomes]
    start_text = (
        f"submit->started of the first two {', '.join(f'{x:.2f}' for x in starts[:2])} s "
        f"(median of all {statistics.median(starts):.2f})"
        if starts
        else "runs in this process (one slot: no process per run)"
    )
    print(
        f"{label:<28} wall {wall:6.1f} s  {start_text}  verdicts {verdicts}  "
        f"load {os.getloadavg()[0]:.2f}",
        flush=True,
    )


def main() -> None:
    print(f"machine: {os.cpu_count()} cores, load now {os.getloadavg()}")
    image = provide_image([Engine()], recipe=zookeeper_recipe())
    with (
        tempfile.TemporaryDirectory(prefix="zkjepsen-dask-bench-") as tmp,
        second_engine(private_net=True) as url,
    ):
        preload_image(image, url)
        store = Path(tmp) / "store"
        for n in (1, 2):
            timed(f"local --parallel {n}", lambda n=n: fanout.run_jobs(jobs(), None, n, store))
        c = Cluster(url, NETNS[url], Path(tmp))
        with veth(c.netns):
            try:
                c.start_scheduler()
                c.start_worker("a")
                c.wait_for_workers(1)
                client = dask_executor.connect(c.address)
                run = lambda: dask_executor.run_jobs_on_cluster(  # noqa: E731
                    jobs(), "", store, client=client
                )
                run()  # warm: the workers' first import of zkjepsen, the image check
                timed("cluster, worker a alone", run)
                c.start_worker("b")
                c.wait_for_workers(2)
                run()
                timed("cluster, workers a and b", run)
                client.close()
            finally:
                c.stop_all()


if __name__ == "__main__":
    main()
