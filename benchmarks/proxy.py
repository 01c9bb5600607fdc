"""What the ZooKeeper wire proxy costs when it injects nothing: p50/p99 of getData and setData
through the proxy vs straight to the servers, same ensemble, same client, interleaved in batches.

    .venv/bin/python benchmarks/proxy.py [--ops 2000] [--nodes 3]

Prints figures; asserts nothing (target: the proxy adds at most 1 ms at p50).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from kazoo.client import KazooClient

from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
from zkjepsen.client.zkproxy import ZkProxy


def timings(zk: KazooClient, ops: int, write: bool) -> list[float]:
    out = []
    for i in range(ops):
        t0 = time.perf_counter()
        if write:
            zk.set("/bench-proxy", str(i).encode())
        else:
            zk.get("/bench-proxy")
        out.append(time.perf_counter() - t0)
    return out


def pct(xs: list[float], q: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=2000)
    ap.add_argument("--nodes", type=int, default=3)
    args = ap.parse_args()
    with (
        tempfile.TemporaryDirectory() as d,
        ZooKeeperEnsemble(EnsembleSpec(nodes=args.nodes), d) as ens,
    ):
        proxy = ZkProxy([ens.nodes[0].address], base_port=0).start()
        direct = KazooClient(hosts=ens.nodes[0].address)
        via = KazooClient(hosts=proxy.connect_string())
        for zk in (direct, via):
            zk.start(timeout=15)
        direct.ensure_path("/bench-proxy")
        results: dict[str, list[float]] = {}
        for _ in range(10):  # interleave in batches so drift hits both alike
            for name, zk in (("direct", direct), ("proxy", via)):
                for write in (False, True):
                    key = f"{'setData' if write else 'getData'} {name}"
                    results.setdefault(key, []).extend(timings(zk, args.ops // 10, write))
        for zk in (direct, via):
            zk.stop()
            zk.close()
        proxy.stop()
    for key in sorted(results):
        xs = results[key]
        print(
            f"{key:16s} p50 {pct(xs, 0.5):6.3f} ms  p99 {pct(xs, 0.99):6.3f} ms  "
            f"mean {statistics.mean(xs) * 1000:6.3f} ms  ({len(xs)} ops)"
        )
    for op in ("getData", "setData"):
        added = pct(results[f"{op} proxy"], 0.5) - pct(results[f"{op} direct"], 0.5)
        print(f"{op}: the proxy adds {added:.3f} ms at p50 (target <= 1 ms)")


if __name__ == "__main__":
    main()
