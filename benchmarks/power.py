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
  random pauses);
- `gate`: the passing gate's three scenarios (`zkjepsen gate --recipe kazoo --param
  resource=fenced --param property=effect --param writes=1`), all at once as the gate runs
  them, each for the whole `--time-limit` (no power target, so the count is per minute and not
  cut short): per scenario the landed opportunities per minute of main phase and the bound
  they reach at 60 s (the gate's cap) at that rate.

    .venv/bin/python benchmarks/power.py [--runs 2]
        [--only fenced-triggered] [--time-limit 40] [--store DIR]
    .venv/bin/python benchmarks/power.py --only gate --time-limit 60 --runs 1
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from zkjepsen.checker.bounds import upper_bound
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


GATE_PARAMS = {"resource": "fenced", "property": "effect", "writes": 1}


def gate_variant(seed: int, limit: float, store: Path | None) -> None:
    """The gate's scenarios side by side, no power target: landed per minute and the bound at
    60 s. (gate_specs needs a target; the smallest positive one is never reached.)"""
    from dataclasses import replace

    from zkjepsen.run.gate import gate_specs, run_gate, scenario_names

    names = scenario_names(None)
    settings = {"recipe": "kazoo", "seed": seed, "time_limit_s": limit, "params": GATE_PARAMS}
    specs = [replace(s, until_power=None) for s in gate_specs(settings, names, 0.5)]
    t0 = time.monotonic()
    rows = run_gate(specs, names, len(names), store, run_all=True)
    wall = time.monotonic() - t0
    for row in rows:
        results = json.loads((Path(row.store_dir) / "results.json").read_text())
        p = power_of_results(results)
        early = results.get("early_stop") or {}
        main_s = early.get("after_main_start_s") if early.get("stopped_early") else limit
        n = p.opportunities() if p else 0
        per_min = 60 * n / main_s
        at_60 = round(per_min)
        bound_60 = upper_bound(min(p.violated() if p else 0, at_60), at_60)
        print(
            f"gate {row.scenario} seed {seed}: {row.valid}  {p.faults() if p else 0} faults, "
            f"{n} landed in {main_s:g} s = {per_min:.1f} landed/min; bound at 60 s "
            f"{100 * bound_60:.1f} %  "
            f"({p.line() if p else 'no power part'})  {row.store_dir}",
            flush=True,
        )
    print(f"gate seed {seed}: {wall:.0f} s wall, load {os.getloadavg()}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--only", choices=("fenced-triggered", "fenced-random", "readme", "gate"))
    ap.add_argument("--time-limit", type=float, default=40.0)
    ap.add_argument("--interval", type=float, default=4.0)
    ap.add_argument("--store", type=Path, default=None)
    a = ap.parse_args()
    names = [a.only] if a.only else ["fenced-triggered", "fenced-random", "readme"]
    print(f"load before: {os.getloadavg()}", flush=True)
    if a.only == "gate":
        for i in range(a.runs):
            gate_variant(300 + i, a.time_limit, a.store)
        return
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
