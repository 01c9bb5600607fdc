"""Lock throughput and acquisition latency per recipe, against a raw create/delete loop.

One 3-node ensemble for every measurement (so they compare), N client containers per recipe
running the `lock` workload with no hold and no think time (an empty critical section unless
--writes), then the `raw` workload (create + delete of a private ephemeral node: no lock at all,
the ceiling). Throughput counts acquisitions completed while *all* clients were running
(containers start one after another); latency is acquire invoke -> ok. The lock checker runs on
every history, so a figure never hides a belief overlap.

    .venv/bin/python benchmarks/recipes.py --clients 10 --seconds 15
    .venv/bin/python benchmarks/recipes.py --recipes kazoo,curator --json out.json
    .venv/bin/python benchmarks/recipes.py --recipes kazoo --mode both --clients 1  # protocol cost
    .venv/bin/python benchmarks/recipes.py --mode both \
        --recipes raw,curator-java,curator-java-semaphore,go-zk,kazoo  # real libraries vs ceiling

`--mode` says how a Python recipe runs: `in-process` (the workload loop calls it directly),
`protocol` (through the client wire protocol and the Python driver, as `zkjepsen test` runs it)
or `both` (rows `NAME` and `NAME[protocol]`: the difference is the protocol's own cost). A
registered driver (`curator-java`, `curator-java-semaphore`, `go-zk`) is a program, so it always
runs through the protocol (one row, its plain name).

Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

DEFAULT = (
    "raw,kazoo,kazoo-careful,blog,herd,predecessor,paper,exclusive,curator,queue,election,rwlock"
)


def run(
    ens, out: Path, recipe: str, clients: int, seconds: float, writes: int, protocol: bool = False
) -> list[dict]:
    from zkjepsen.client.pool import ClientPool
    from zkjepsen.client.spec import ClientSpec
    from zkjepsen.history.jsonl import merge_records
    from zkjepsen.run.resolve import is_foreign, program_for

    workload = "raw" if recipe == "raw" else "lock"
    params = {
        "lock_path": f"/bench/{recipe}",
        "resource_path": f"/bench/{recipe}-res",
        "hold_s": 0.0,
        "think_s": 0.0,
        "writes": writes,
        "acquire_timeout_s": 10.0,
    }
    if recipe == "rwlock":
        params["mode"] = "write"  # as a mutex, to compare like with like
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=ens.connect_string(), timeout=4.0)
    zk.start(timeout=15)
    zk.ensure_path(params["lock_path"])
    zk.ensure_path(params["resource_path"])
    zk.set(params["resource_path"], b"{}")
    zk.stop()
    zk.close()
    # A registered driver (Java, Go) is a program: always through the protocol.
    plan = program_for(recipe, workload) if protocol or is_foreign(recipe) else None
    command = list(plan.argv) if plan else []
    from zkjepsen.store import RunDir

    run_dir = RunDir(Path(out))
    pool = ClientPool(ens, run_dir)
    t0 = time.monotonic_ns()
    # every client connects first (the start barrier), then all run for `seconds`
    pool.start(
        [
            ClientSpec(
                client=i,
                nclients=clients,
                hosts=ens.connect_string(),
                session_timeout_s=4,
                workload=workload,
                recipe=recipe,
                params=params,
                t0_ns=t0,
                seed=1,
                command=command,
            )
            for i in range(1, clients + 1)
        ]
    )
    try:
        pool.wait_connected(60)
        pool.release(time.monotonic() + seconds)
        pool.wait(seconds + 30)
        pool.stop()
    finally:
        for h in pool.handles:
            h.container.remove(force=True)
    return merge_records(run_dir.client_histories())


def figures(records: list[dict]) -> dict:
    from zkjepsen.checker.lock import LockChecker
    from zkjepsen.history import History, Op

    first, last = {}, {}
    for r in records:
        if r.get("client", 0) == 0:
            continue  # client 0 is the host's setup/final reads, not a contender
        if r["type"] == "invoke":
            first.setdefault(r["client"], r["time"])
        if r["type"] in ("ok", "fail", "info"):
            last[r["client"]] = r["time"]
    lo, hi = max(first.values()), min(last.values())  # all clients running
    pending, lat, n, fails = {}, [], 0, 0
    for r in records:
        if r["f"] != "acquire":
            continue
        if r["type"] == "invoke":
            pending[r["process"]] = r["time"]
        elif r["type"] == "ok":
            start = pending.pop(r["process"])
            if lo <= r["time"] <= hi:
                n += 1
                lat.append((r["time"] - start) / 1e6)
        else:
            fails += 1
    lat.sort()

    def pct(p: float) -> float:
        return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")

    lock = LockChecker().check(History([Op.from_dict(r) for r in records])).details
    return {
        "window_s": round((hi - lo) / 1e9, 2),
        "acquisitions": n,
        "per_s": round(n / max(1e-9, (hi - lo) / 1e9), 1),
        "p50_ms": round(pct(0.5), 2),
        "p90_ms": round(pct(0.9), 2),
        "p99_ms": round(pct(0.99), 2),
        "max_ms": round(lat[-1], 2) if lat else None,
        "mean_ms": round(statistics.fmean(lat), 2) if lat else None,
        "failed_acquires": fails,
        "belief_overlaps": lock["belief_overlap_count"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--recipes", default=DEFAULT)
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--writes", type=int, default=0, help="critical-section writes per hold")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--mode", choices=("in-process", "protocol", "both"), default="in-process")
    args = ap.parse_args()
    from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
    from zkjepsen.run.resolve import is_foreign
    from zkjepsen.store import new_run_dir

    d = new_run_dir("bench-recipes").path
    rows = {}
    with ZooKeeperEnsemble(EnsembleSpec(nodes=3), d) as ens:
        modes = [False, True] if args.mode == "both" else [args.mode == "protocol"]
        for recipe in args.recipes.split(","):
            # raw has no program; a driver (curator-java, go-zk) has nothing but its program
            for protocol in modes if recipe != "raw" and not is_foreign(recipe) else [False]:
                name = f"{recipe}[protocol]" if protocol else recipe
                rows[name] = figures(
                    run(ens, d / name, recipe, args.clients, args.seconds, args.writes, protocol)
                )
                print(name, rows[name], flush=True)
    cols = ["per_s", "p50_ms", "p90_ms", "p99_ms", "max_ms", "failed_acquires", "belief_overlaps"]
    print(f"\n{args.clients} clients, {args.seconds:g} s each, 3 nodes, store {d}")
    print(f"{'recipe':20}" + "".join(f"{c:>16}" for c in cols))
    for recipe, row in rows.items():
        print(f"{recipe:20}" + "".join(f"{row[c]!s:>16}" for c in cols))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
