"""Issue 5's acceptance runs: N short tests per configuration, counted. Prints one line per run
and a table at the end; every history stays in the store (path printed per run).

    .venv/bin/python benchmarks/nemesis_acceptance.py --runs 5 --time-limit 45 pause-counter
    .venv/bin/python benchmarks/nemesis_acceptance.py --list

Figures, never assertions: how often a fault produced a belief overlap, an effect overlap (the
resource accepted writes from two holders), a lost update (counter).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# name -> (workload, nemesis, nodes, params)
CONFIGS: dict[str, tuple[str, str, int, dict]] = {
    "pause-counter": ("counter", "pause-client", 3, {"resource": "unguarded", "hold_s": 0.5}),
    "pause-lock-unguarded": (
        "lock",
        "pause-client",
        3,
        {"resource": "unguarded", "writes": 4, "hold_s": 0.6},
    ),
    "pause-lock-fenced": (
        "lock",
        "pause-client",
        3,
        {"resource": "fenced", "writes": 4, "hold_s": 0.6},
    ),
    "isolate-counter": ("counter", "isolate-client", 3, {"resource": "unguarded", "hold_s": 0.5}),
    "isolate-lock-unguarded": (
        "lock",
        "isolate-client",
        3,
        {"resource": "unguarded", "writes": 4, "hold_s": 0.6},
    ),
    "isolate-lock-fenced": (
        "lock",
        "isolate-client",
        3,
        {"resource": "fenced", "writes": 4, "hold_s": 0.6},
    ),
    "kill-leader-lock": ("lock", "kill-leader", 5, {"resource": "unguarded", "writes": 2}),
    "halves-lock": ("lock", "partition-halves", 5, {"resource": "unguarded", "writes": 2}),
    "clock-rate-lock": (
        "lock",
        "clock-rate-leader",
        3,
        {"resource": "unguarded", "writes": 4, "hold_s": 0.6},
    ),
}


def summarize(run) -> dict:
    res = run.results
    lock = res.get("lock", {}) or {}
    counter = res.get("counter", {}) or {}
    sched = (
        json.loads((run.store_dir / "schedule.json").read_text())
        if (run.store_dir / "schedule.json").exists()
        else {"faults": []}
    )
    return {
        "valid": run.valid,
        "store": str(run.store_dir),
        "faults": len(sched["faults"]),
        "holder_hits": sum(
            1 for f in sched["faults"] if (f.get("detail") or {}).get("chosen") == "holder"
        ),
        "belief": lock.get("belief_overlap_count"),
        "careful": lock.get("careful_belief_overlap_count"),
        "effect": lock.get("effect_overlap_count"),
        "accepted_writes": lock.get("accepted_writes"),
        "rejected_writes": lock.get("rejected_writes"),
        "lost": counter.get("lost"),
        "acknowledged": counter.get("acknowledged"),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("configs", nargs="*")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--time-limit", type=float, default=45)
    ap.add_argument("--clients", type=int, default=5)
    ap.add_argument("--interval", type=float, default=6)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--out", type=Path, default=Path("store/acceptance.jsonl"))
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list or not a.configs:
        for k, v in CONFIGS.items():
            print(f"{k:24s} {v}")
        return 0
    from zkjepsen.run.runner import run_test
    from zkjepsen.run.spec import TestSpec

    a.out.parent.mkdir(parents=True, exist_ok=True)
    for name in a.configs:
        workload, nemesis, nodes, params = CONFIGS[name]
        for i in range(a.runs):
            spec = TestSpec(
                recipe="kazoo",
                workload=workload,
                nemesis=[nemesis],
                nodes=nodes,
                clients=a.clients,
                time_limit_s=a.time_limit,
                recovery_s=8,
                session_timeout_s=4.0,
                seed=a.seed + i,
                interval_s=a.interval,
                params=params,
                name=f"acceptance-{name}",
            )
            t = time.monotonic()
            try:
                row = summarize(run_test(spec))
            except Exception as e:  # noqa: BLE001 - one broken run must not stop the series
                row = {"error": f"{type(e).__name__}: {e}"}
            row |= {"config": name, "seed": spec.seed, "wall_s": round(time.monotonic() - t)}
            print(json.dumps(row), flush=True)
            with a.out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
