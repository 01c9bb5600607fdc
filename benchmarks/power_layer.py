"""What the power-loss layer (docker/powerfs.c) costs ZooKeeper: prints figures, asserts nothing.

A 3-server ensemble with and without the layer under its data directories (forceSync as
--fsync says), then one kazoo client doing synchronous `set`s on one znode (each a txn the
servers log, and with strict, fsync) for --seconds; ops/s per ensemble, --repeat times each,
alternating. Take figures one at a time: `flock /tmp/zkj-timing.lock .venv/bin/python
benchmarks/power_layer.py`, and give `uptime` with them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

from zkjepsen.backends.zookeeper.config import ZkSettings
from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
from zkjepsen.backends.zookeeper.image import zookeeper_tag
from zkjepsen.docker import resources


def one(layer: bool, strict: bool, seconds: float, store: Path) -> tuple[float, dict]:
    spec = EnsembleSpec(nodes=3, image=zookeeper_tag(), settings=ZkSettings(force_sync=strict))
    ens = ZooKeeperEnsemble(spec, store, client=resources.docker_client())
    ens.power_layer = layer
    with ens:
        zk = KazooClient(hosts=ens.connect_string(), timeout=10)
        zk.start(timeout=30)
        zk.create("/bench", b"0")
        n, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < seconds:
            zk.set("/bench", str(n).encode())
            n += 1
        rate = n / (time.monotonic() - t0)
        zk.stop()
        zk.close()
        pending = ens.power(ens.nodes[0], "stat")
    return rate, pending


def alternate(run_one, repeat: int, label: str) -> None:
    """`run_one(layer, store)` -> (ops/s, the layer's counts), without and with the layer,
    `repeat` times, alternating; each run and the medians printed."""
    rates: dict[bool, list[float]] = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix="zkj-bench-power-") as tmp:
        for i in range(repeat):
            for layer in (False, True):
                rate, pending = run_one(layer, Path(tmp) / f"{i}-{layer}")
                rates[layer].append(rate)
                extra = f"  (n1 pending at the end: {pending})" if layer else ""
                print(f"run {i + 1} layer={'on ' if layer else 'off'} {rate:8.1f} ops/s{extra}")
    load = os.getloadavg()[0]
    for layer in (False, True):
        r = rates[layer]
        print(
            f"{label} layer={'on ' if layer else 'off'}: "
            f"median {statistics.median(r):.1f}"
            f" ops/s (min {min(r):.1f}, max {max(r):.1f}, {len(r)} runs); load {load:.1f}"
        )


def parse_args(doc: str) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fsync", choices=("strict", "relaxed"), default="strict")
    return ap.parse_args()


def main() -> None:
    args = parse_args(__doc__ or "")
    strict = args.fsync == "strict"
    alternate(
        lambda layer, store: one(layer, strict, args.seconds, store),
        args.repeat,
        f"fsync={args.fsync}",
    )


if __name__ == "__main__":
    main()
