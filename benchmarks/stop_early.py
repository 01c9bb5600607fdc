"""How fast a gate answers: `--stop-on-violation`, `--until-power` and `zkjepsen gate`.

Groups (figures only, nothing asserted; run alone: several timed at once on 2 cores mean little):
- `stop`: kazoo's Lock (unguarded resource) under a holder pause triggered on an acquire, with
  stop-on-violation and a 40 s cap, --runs times: how many were caught, and the median and max
  time from the main phase's start to the stop;
- `fixed`: the same run without stopping, the whole 40 s (--fixed-runs times), for comparison;
- `power`: a fenced kazoo resource judged on effects (property=effect, one write per hold) with
  pauses triggered on every acquire and `until_power` --power-target, capped at --power-cap:
  the time to reach the bound and the bound reached (--power-runs times);
- `gate`: `zkjepsen gate` on kazoo (expect exit 1; again with `--run-all`, every scenario to its
  own end) and on the fenced variant, command start to
  exit (images present).

    .venv/bin/python benchmarks/stop_early.py [--runs 20] [--fixed-runs 3] [--power-runs 5]
        [--only stop,fixed,power,gate] [--store DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from zkjepsen.nemesis.generator import fault, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec

PAUSE_HOLDER = steps(sleep(2), on(on_acquire(retries=10), fault("pause-client", duration="1.5x")))
FENCED = {"resource": "fenced", "property": "effect", "writes": 1, "hold_s": 1.0}


def base(seed: int, **kw) -> TestSpec:
    settings = dict(
        recipe="kazoo",
        workload="lock",
        nemesis=["pause-client"],
        nodes=3,
        clients=3,
        time_limit_s=40,
        recovery_s=1,
        session_timeout_s=2,
        seed=seed,
        name="bench-stop-early",
        params={"resource": "unguarded", "hold_s": 0.4},
    )
    settings.update(kw)
    return TestSpec(**settings)


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def emit(group: str, **fig) -> None:
    print(json.dumps({"group": group, "load": load(), **fig}), flush=True)


def stop_group(runs: int, store: Path | None) -> None:
    afters, caught = [], 0
    for seed in range(runs):
        t = time.monotonic()
        r = run_test(base(seed, stop_on_violation=True), store, gen=PAUSE_HOLDER)
        early = r.results.get("early_stop") or {}
        hit = bool(early.get("stopped_early")) and early.get("reason") == "violation"
        caught += hit
        if hit:
            afters.append(early["after_main_start_s"])
        emit("stop-run", seed=seed, caught=hit, after_s=early.get("after_main_start_s"),
             wall_s=round(time.monotonic() - t, 1), valid=r.valid)  # fmt: skip
    emit(
        "stop",
        runs=runs,
        caught=caught,
        median_s=statistics.median(afters) if afters else None,
        max_s=max(afters) if afters else None,
    )


def fixed_group(runs: int, store: Path | None) -> None:
    walls = []
    for seed in range(runs):
        t = time.monotonic()
        r = run_test(base(seed), store, gen=PAUSE_HOLDER)
        walls.append(time.monotonic() - t)
        emit("fixed-run", seed=seed, wall_s=round(walls[-1], 1), valid=r.valid)
    emit("fixed", runs=runs, median_wall_s=round(statistics.median(walls), 1), main_s=40)


def power_group(runs: int, target: float, cap: float, store: Path | None) -> None:
    for seed in range(runs):
        spec = base(
            seed,
            time_limit_s=cap,
            interval_s=1.0,
            fault_trigger="acquired",
            until_power=target,
            params=FENCED,
            name="bench-until-power",
        )
        t = time.monotonic()
        r = run_test(spec, store)
        early = r.results.get("early_stop") or {}
        power = r.results.get("power") or {}
        emit("power-run", seed=seed, target=target, reached=bool(early.get("stopped_early")),
             after_s=early.get("after_main_start_s"), upper=power.get("upper"),
             line=power.get("line") or power.get("reason"), valid=r.valid,
             wall_s=round(time.monotonic() - t, 1))  # fmt: skip


def gate_group(store: Path | None) -> None:
    cmd = [sys.executable, "-m", "zkjepsen.cli", "gate", "--recipe", "kazoo"]
    if store:
        cmd += ["--store", str(store)]
    fenced = [a for k, v in FENCED.items() for a in ("--param", f"{k}={v}")]
    variants = (("kazoo", []), ("kazoo-run-all", ["--run-all"]), ("kazoo-fenced", fenced))
    for name, extra in variants:
        t = time.monotonic()
        p = subprocess.run(cmd + extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = [x for x in p.stdout.splitlines() if x.strip()]
        emit("gate", variant=name, exit=p.returncode, wall_s=round(time.monotonic() - t, 1),
             lines=lines[1:])  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--fixed-runs", type=int, default=3)
    ap.add_argument("--power-runs", type=int, default=5)
    ap.add_argument("--power-target", type=float, default=0.10)
    ap.add_argument("--power-cap", type=float, default=240.0)
    ap.add_argument("--only", default="stop,fixed,power,gate")
    ap.add_argument("--store", type=Path, default=None)
    a = ap.parse_args()
    only = set(a.only.split(","))
    if "stop" in only:
        stop_group(a.runs, a.store)
    if "fixed" in only:
        fixed_group(a.fixed_runs, a.store)
    if "gate" in only:
        gate_group(a.store)
    if "power" in only:
        power_group(a.power_runs, a.power_target, a.power_cap, a.store)


if __name__ == "__main__":
    main()
