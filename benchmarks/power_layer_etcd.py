"""What the power-loss layer (docker/powerfs.c) costs etcd: prints figures, asserts nothing.

A 3-member etcd cluster with and without the layer under its data directories (--fsync strict:
as shipped; relaxed: --unsafe-no-fsync, etcd 3.5), then one client doing synchronous puts of
one key through the JSON gateway (each a raft entry every member appends to its WAL and, strict,
fsyncs) for --seconds; ops/s per cluster, --repeat times each, alternating. Take figures one
at a time:
`flock /tmp/zkj-timing.lock .venv/bin/python benchmarks/power_layer_etcd.py`, with `uptime`.
"""

from __future__ import annotations

import time
from pathlib import Path

from power_layer import alternate, parse_args  # beside this file: run as a script from benchmarks/

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
    args = parse_args(__doc__ or "")
    version = "3.5" if args.fsync == "relaxed" else None
    settings = EtcdSettings(version=version, fsync=args.fsync).settled()
    alternate(
        lambda layer, store: one(layer, settings, args.seconds, store),
        args.repeat,
        f"etcd {settings.version} fsync={args.fsync}",
    )


if __name__ == "__main__":
    main()
