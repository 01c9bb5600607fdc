"""How much power a run gets: the faults that landed where the lock could break, per run, and the
bound they put on the per-fault violation rate (docs/verdicts.md). Prints figures, asserts
nothing.

Variants (each `--time-limit` seconds of main phase, 3 servers, 3 clients):
- `fenced-triggered`: kazoo's Lock on a fenced resource judged by what it accepted
  (`property=effect`, one write per hold of mean 0.4 s), one triggered pause after another:
  whoever acquires is frozen for 1.5x its 2 s session, re-armed on a miss, 1 s apart;
- `fenced-random`: the same lock, the standard `pause-client` schedule (a pause of the holder
  every `--interval` s);
- `readme`: the README's CI example on kazoo (counter, 5 clients, session 3 s, at most 2
  random pauses).

    .venv/bin/python benchmarks/power.py [--runs 2]
        [--only fenced-triggered] [--time-limit 40] [--store DIR]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from zkjepsen.nemesis.generator import fault, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire
from zkjepsen.report.summary import power_of_results
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec

FENCED = {"resource": "fenced", "property": "effect", "writes": 1, "hold_s": 0.4}


def one_pause_after_another(n: int = 60):
    pause = on(on_acquire(retries=10), fault("pause-client", duration="1.5x"))
    return steps(sleep(2), *[g for _ in range(n) for g in (pause, sleep(1))])


def variant(name: str, seed: int, limit: float, interval: float) -> tuple[TestSpec, object]:
    common = dict(nodes=3, time_limit_s=limit, recovery_s=5, seed=seed, name=f"bench-power-{name}")
    if name == "readme":
        spec = TestSpec(
            recipe="kazoo", workload="counter", nemesis=["pause-client"], clients=5,
            session_timeout_s=3.0, max_faults=2, **common,
        )  # fmt: skip
        return spec, None
    spec = TestSpec(
        recipe="kazoo", workload="lock", nemesis=["pause-client"], clients=3,
        session_timeout_s=2.0, interval_s=interval, params=FENCED, **common,
    )  # fmt: skip
    return spec, one_pause_after_another() if name == "fenced-triggered" else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--only", choices=("fenced-triggered", "fenced-random", "readme"))
    ap.add_argument("--time-limit", type=float, default=40.0)
    ap.add_argument("--interval", type=float, default=4.0)
    ap.add_argument("--store", type=Path, default=None)
    a = ap.parse_args()
    names = [a.only] if a.only else ["fenced-triggered", "fenced-random", "readme"]
    print(f"load before: {os.getloadavg()}", flush=True)
    for name in names:
        for i in range(a.runs):
            spec, gen = variant(name, 200 + i, a.time_limit, a.interval)
            t0 = time.monotonic()
            r = run_test(spec, a.store, gen=gen)
            wall = time.monotonic() - t0
            p = power_of_results(r.results)
            figures = (
                f"{p.faults()} faults, {p.opportunities()} landed, {p.violated()} violated; "
                f"{p.line()}"
                if p
                else "no power part"
            )
            print(
                f"{name} run {i + 1}: {r.valid}  {figures}  ({wall:.0f} s wall, load "
                f"{os.getloadavg()[0]:.1f})  {r.store_dir}",
                flush=True,
            )


if __name__ == "__main__":
    main()
