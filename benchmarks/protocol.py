"""The client wire protocol's own cost: kazoo's Lock in-process vs the same through the protocol
(the recorder's ProgramClient -> pipe -> the Python driver -> kazoo), uncontended, on this host
against one ensemble; plus the bare round trip (`holding`, no ZooKeeper involved).

    .venv/bin/python benchmarks/protocol.py --rounds 300               # starts a 3-node ensemble
    .venv/bin/python benchmarks/protocol.py --hosts 10.x.y.11:2181     # or uses a running one

Acquire latency is measured exactly as the history measures it (invoke stamped before sending,
completion after the answer), alternating in-process and protocol rounds so both see the same
load. Prints p50/p90/p99 in ms and the difference of the p50s. Asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from pathlib import Path


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def measure(hosts: str, rounds: int, tmp: Path) -> dict[str, list[float]]:
    from kazoo.client import KazooClient

    from zkjepsen.client.program_client import ProgramClient
    from zkjepsen.client.recorder import Recorder
    from zkjepsen.recipes import make_recipe
    from zkjepsen.workloads.context import ClientContext

    zk = KazooClient(hosts=hosts, timeout=4.0)
    zk.start(timeout=15)
    path = f"/bench-protocol/{random.randrange(1 << 30)}"
    zk.ensure_path(path)
    lock = make_recipe("kazoo", zk, path + "/inproc", identifier="bench")
    rec = Recorder(str(tmp / "client-1.jsonl"), time.monotonic_ns(), 1, 1)
    ctx = ClientContext(
        client=1,
        nclients=1,
        session=None,
        hosts=hosts,
        recipe="kazoo",
        params={},
        recorder=rec,
        deadline=time.monotonic() + 3600,
        stop_event=threading.Event(),
    )
    client = ProgramClient(
        ctx,
        [sys.executable, "-m", "zkjepsen.workloads.driver", "kazoo"],
        servers=hosts,
        session_timeout_s=4.0,
        workload="lock",
        lock_path=path + "/proto",
    )
    assert client.start(), "the Python driver did not start"
    out: dict[str, list[float]] = {"in-process": [], "protocol": [], "round trip": []}
    for i in range(rounds + 20):
        t = time.monotonic_ns()
        lock.acquire(10)
        a = time.monotonic_ns() - t
        lock.release()
        t = time.monotonic_ns()
        r = client.call("acquire", 20, timeout_ms=10000)
        b = time.monotonic_ns() - t
        assert r.ok, r
        client.call("release")
        t = time.monotonic_ns()
        client.call("holding")
        c = time.monotonic_ns() - t
        if i >= 20:  # warm-up
            out["in-process"].append(a / 1e6)
            out["protocol"].append(b / 1e6)
            out["round trip"].append(c / 1e6)
    client.program.close()
    zk.delete(path, recursive=True)
    zk.stop()
    zk.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", default=None)
    ap.add_argument("--rounds", type=int, default=300)
    args = ap.parse_args()
    from zkjepsen.store import new_run_dir

    d = new_run_dir("bench-protocol").path
    if args.hosts:
        res = measure(args.hosts, args.rounds, d)
    else:
        from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble

        with ZooKeeperEnsemble(EnsembleSpec(nodes=3), d) as ens:
            res = measure(ens.connect_string(), args.rounds, d)
    print(f"{args.rounds} uncontended rounds, store {d}")
    print(f"{'':12}{'p50_ms':>10}{'p90_ms':>10}{'p99_ms':>10}{'mean_ms':>10}")
    for name, xs in res.items():
        print(
            f"{name:12}{pct(xs, 0.5):10.3f}{pct(xs, 0.9):10.3f}{pct(xs, 0.99):10.3f}"
            f"{statistics.fmean(xs):10.3f}"
        )
    print(
        f"protocol cost at p50 (acquire): "
        f"{pct(res['protocol'], 0.5) - pct(res['in-process'], 0.5):.3f} ms"
    )


if __name__ == "__main__":
    main()
