"""What the power-loss layer (docker/powerfs.c) costs etcd: prints figures, asserts nothing.

A 3-member etcd cluster with and without the layer under its data directories (--fsync strict:
as shipped; relaxed: --unsafe-no-fsync, etcd 3.5), then one client doing synchronous puts of
one key through the JSON gateway (each a raft entry every member appends to its WAL and, strict,
fsyncs) for --seconds; ops/s per cluster, --repeat times each, alternating. Take figures one
at a time:
`flock /tmp/zkj-timing.lock .venv/bin/python benchmarks/power_layer_etcd.py`, with `uptime`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from zkjepsen.backends.etcd import gateway
from zkjepsen.backends.etcd.cluster import EtcdBackend
from zkjepsen.backends.etcd.image import etcd_image
from zkjepsen.backends.etcd.service import EtcdSettings
from zkjepsen.backends.registry import backend_info
from zkjepsen.docker import resources
from zkjepsen.docker.image import default_tag


def one(layer: bool, settings: EtcdSettings, seconds: float, store: Path) -> tuple[float, dict]:
    image = default_tag(etcd_image(settings.version))
    info = backend_info("etcd")
    client = resources.docker_client()
    b = EtcdBackend(3, store, backend=info, server_image=image, client_image=image, client=client)
    b.settings, b.power_layer = settings, layer
    with b:
        leader = b.leader() or b.nodes[0]
        n, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < seconds:
            body = {"key": gateway.b64("/bench"), "value": gateway.b64(str(n))}
            gateway.call(leader.address, "v3/kv/put", body, timeout=10)
            n += 1
        rate = n / (time.monotonic() - t0)
        pending = b.power(b.nodes[0], "stat")
    return rate, pending


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fsync", choices=("strict", "relaxed"), default="strict")
    args = ap.parse_args()
    version = "3.5" if args.fsync == "relaxed" else None
    settings = EtcdSettings(version=version, fsync=args.fsync).settled()
    rates: dict[bool, list[float]] = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix="zkj-bench-power-etcd-") as tmp:
        for i in range(args.repeat):
            for layer in (False, True):
                rate, pending = one(layer, settings, args.seconds, Path(tmp) / f"{i}-{layer}")
                rates[layer].append(rate)
                extra = f"  (n1 pending at the end: {pending})" if layer else ""
                print(f"run {i + 1} layer={'on ' if layer else 'off'} {rate:8.1f} ops/s{extra}")
    load = os.getloadavg()[0]
    for layer in (False, True):
        r = rates[layer]
        print(
            f"etcd {settings.version} fsync={args.fsync} layer={'on ' if layer else 'off'}: "
            f"median {statistics.median(r):.1f}"
            f" ops/s (min {min(r):.1f}, max {max(r):.1f}, {len(r)} runs); load {load:.1f}"
        )


if __name__ == "__main__":
    main()
