"""The NATS combination on locks (issue 34; Jepsen's NATS 2.12.1 analysis, 2025: one OS crash
plus a pause): on one acquire after 4 s, a power loss of a majority of the servers (ZooKeeper,
or etcd 3.5 with `--service etcd`; of the one server of `--service redis|postgres`, where a
majority is all) and a pause of the holder (1.5 session, lease or TTL timeouts),
side by side in two lanes, with `--fsync strict` and `relaxed`. Prints one line per run (the
lock and fencing verdicts, their violation kinds, whether both faults landed, the bytes each
power loss dropped per server) and per preset the rate of runs whose lock or fencing broke,
with its 95 % interval.

    .venv/bin/python benchmarks/nats_combination.py [--runs 10]
        [--service zookeeper|etcd|redis|postgres] [--recipe NAME] [--etcd-version 3.5]
        [--fsync strict relaxed] [--store DIR]

Each run is a real 3-server ensemble (one server for Redis and PostgreSQL) and 5 clients for
20 s; one run at a time.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from zkjepsen.nemesis.generator import fault, lanes, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire
from zkjepsen.report.stats import rate_text
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec

# Per service: the recipe run by default, the servers, the power fault (a single server's
# majority is itself: power-loss-all).
SERVICES = {
    "zookeeper": ("kazoo-careful", 3, "power-loss-majority"),
    "etcd": ("etcd3-python", 3, "power-loss-majority"),
    "redis": ("redis-set-px", 1, "power-loss-all"),
    "postgres": ("pg-advisory", 1, "power-loss-all"),
}


def combination(power: str):
    """Two lanes, each one fault on the first acquire after 4 s (steps() over lanes() would
    take only the first lane's first fault)."""
    return lanes(
        steps(sleep(4), on(on_acquire(retries=10), fault(power, duration=8.0))),
        steps(sleep(4), on(on_acquire(retries=10), fault("pause-client", duration="1.5x"))),
    )


def _one(recipe: str, service: dict, seed: int, store: Path) -> dict:
    _, nodes, power = SERVICES[service["name"]]
    spec = TestSpec(
        recipe=recipe,
        workload="lock",
        nemesis=[power, "pause-client"],
        nodes=nodes,
        clients=5,
        time_limit_s=20.0,
        recovery_s=5.0,
        session_timeout_s=3.0,
        seed=seed,
        params={"resource": "fenced"},
        service=service,
        name=f"nats-{recipe}-{service['fsync']}",
    )
    run = run_test(spec, store, gen=combination(power))
    faults = json.loads((run.store_dir / "schedule.json").read_text()).get("faults") or []
    lost = [
        sum((f.get("detail") or {}).get("lost_bytes", {}).values())
        for f in faults
        if f.get("f") == power
    ]
    unbootable = sorted(
        n for f in faults for n in ((f.get("detail") or {}).get("failed_to_start") or {})
    )
    parts = {k: run.results.get(k) or {} for k in ("lock", "fencing")}
    kinds = sorted({v.get("kind", "?") for p in parts.values() for v in p.get("violations") or []})
    return {
        "seed": seed,
        "lock": parts["lock"].get("valid"),
        "fencing": parts["fencing"].get("valid"),
        "kinds": kinds,
        "landed": sorted(f["f"] for f in faults if f.get("applied_ns")),
        "lost_bytes": lost,
        "failed_to_start": unbootable,
        "store": str(run.store_dir),
        "load": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--service", choices=sorted(SERVICES), default="zookeeper")
    ap.add_argument(
        "--recipe", help="default: " + ", ".join(f"{r} on {s}" for s, (r, _, _) in SERVICES.items())
    )
    ap.add_argument("--etcd-version", default="3.5", help="relaxed needs 3.5 (--unsafe-no-fsync)")
    ap.add_argument(
        "--fsync", nargs="+", choices=("strict", "relaxed"), default=["strict", "relaxed"]
    )
    ap.add_argument("--store", type=Path, default=Path("store-nats"))
    args = ap.parse_args()
    recipe = args.recipe or SERVICES[args.service][0]
    for fsync in args.fsync:
        service = {"name": args.service, "fsync": fsync}
        if args.service == "etcd":
            service["version"] = args.etcd_version
        broke = 0
        for seed in range(1, args.runs + 1):
            r = _one(recipe, service, seed, args.store)
            broke += r["lock"] is False or r["fencing"] is False
            print(fsync, json.dumps(r), flush=True)
        print(f"{fsync}: lock or fencing broken in {rate_text(broke, args.runs)}", flush=True)


if __name__ == "__main__":
    main()
