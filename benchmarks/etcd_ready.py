"""Up-to-ready time of an etcd cluster (issue 25): `EtcdBackend.start()` from nothing (the
run's network, the member containers) until every member's /health is true and every member's
status names the same leader; and, separately, the part spent waiting for etcd itself.

    .venv/bin/python benchmarks/etcd_ready.py [--members 3] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from types import SimpleNamespace

from zkjepsen.backends.registry import image_recipe, make_backend
from zkjepsen.docker import resources
from zkjepsen.docker.image import ensure_image


def one(members: int, image: str, client) -> tuple[float, float]:
    b = make_backend(
        "etcd",
        SimpleNamespace(nodes=members, tick_ms=500, params={}, service=None),
        tempfile.mkdtemp(prefix="etcd-ready-"),
        client=client,
        engine=resources.DEFAULT_ENGINE,
        server_image=image,
        client_image=image,
    )
    waited: list[float] = []
    real_wait = b.wait_ready
    b.wait_ready = lambda timeout_s: waited.append(real_wait(timeout_s)) or waited[-1]
    t0 = time.monotonic()
    try:
        b.start()
        total = time.monotonic() - t0
    finally:
        b.stop()
    return total, waited[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    client = resources.docker_client()
    image = ensure_image(client, None, recipe=image_recipe("etcd")).tag
    totals, waits = [], []
    for _ in range(args.runs):
        total, wait = one(args.members, image, client)
        totals.append(total)
        waits.append(wait)
        print(f"start {total:.2f} s (waiting for etcd {wait:.2f} s)", flush=True)
    print(
        f"{args.members} members, {args.runs} runs: start median {statistics.median(totals):.2f} s "
        f"(min {min(totals):.2f}, max {max(totals):.2f}); waiting for etcd median "
        f"{statistics.median(waits):.2f} s"
    )


if __name__ == "__main__":
    main()
