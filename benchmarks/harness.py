"""Harness figures: time from `up` to quorum (3 and 5 nodes, image cached, median of N), the
image size, memory per ZooKeeper node, and (with --cold) the cold image build time; and the
other backends' up-to-ready times (`--backends redis,redis-sentinel,redlock`: containers
created -> `ready()`, i.e. every server answers, replicas in sync and every Sentinel knows the
master, its replicas and the other Sentinels).

    .venv/bin/python benchmarks/harness.py [--runs 5] [--cold] [--backends LIST] [--no-zk]
        [--zk-versions 3.4,3.8,3.9] [--nodes 3,5] [--faketime on,off]

With --zk-versions, the figures are printed per ZooKeeper version (each its own image).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from zkjepsen.backends.zookeeper.config import ZkSettings
from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
from zkjepsen.backends.zookeeper.image import zookeeper_recipe
from zkjepsen.docker import resources
from zkjepsen.docker.image import build_image, default_tag


def rss_mb(container) -> float:
    """Resident memory of the JVM (the container's PID 1), read from the host's /proc."""
    container.reload()
    pid = container.attrs["State"]["Pid"]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def time_to_quorum(
    client, nodes: int, faketime: bool = True, version: str = "3.8"
) -> tuple[float, list[float]]:
    with tempfile.TemporaryDirectory() as d:
        spec = EnsembleSpec(
            nodes=nodes,
            faketime=faketime,
            image=default_tag(zookeeper_recipe(version)),
            settings=ZkSettings(zk_version=version),
        )
        ens = ZooKeeperEnsemble(spec, Path(d), client=client)
        t0 = time.monotonic()
        with ens:
            elapsed = time.monotonic() - t0
            time.sleep(2)  # let the JVMs settle before reading memory
            mem = [rss_mb(ens._container(n)) for n in ens.nodes]
        return elapsed, mem


def backend_ready_times(client, name: str, runs: int) -> list[float]:
    """Seconds from start() to ready for backend `name`, `runs` times (images cached)."""
    from types import SimpleNamespace

    from zkjepsen.backends.registry import backend_info, image_recipe, make_backend
    from zkjepsen.docker.image import ensure_image

    server = ensure_image(client, None, recipe=image_recipe(name)).tag
    info = backend_info(name)
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as d:
            b = make_backend(
                name,
                SimpleNamespace(nodes=info.nodes or 3, tick_ms=500, params={}, service=None),
                Path(d),
                client=client,
                engine=resources.DEFAULT_ENGINE,
                server_image=server,
                client_image=default_tag(zookeeper_recipe()),
            )
            t0 = time.monotonic()
            try:
                b.start()
                times.append(time.monotonic() - t0)
            finally:
                b.stop()
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cold", action="store_true", help="remove and rebuild the image first")
    ap.add_argument("--backends", default="", help="e.g. redis,redis-sentinel,redlock")
    ap.add_argument("--no-zk", action="store_true", help="skip the ZooKeeper figures")
    ap.add_argument("--zk-versions", default="3.8", help="e.g. 3.4,3.8,3.9")
    ap.add_argument("--nodes", default="3,5", help="ensemble sizes, e.g. 3,5")
    ap.add_argument("--faketime", default="on,off", help="on, off or on,off")
    args = ap.parse_args()
    client = resources.docker_client()
    for name in [b for b in args.backends.split(",") if b]:
        t = backend_ready_times(client, name, args.runs)
        print(
            f"backend {name}: up->ready median {statistics.median(t):.2f} s "
            f"(min {min(t):.2f}, max {max(t):.2f}, n={len(t)})"
        )
    if args.no_zk:
        return
    for version in args.zk_versions.split(","):
        zk_figures(client, args, version)


def zk_figures(client, args, version: str) -> None:
    recipe = zookeeper_recipe(version)
    tag = default_tag(recipe)
    if args.cold:
        try:
            client.images.remove(tag, force=True)
        except Exception:  # noqa: BLE001 - not there yet
            pass
        info = build_image(client, tag, recipe=recipe)
        print(f"ZooKeeper {version}: cold image build: {info.build_seconds:.1f} s")
    info = build_image(client, tag, recipe=recipe)
    print(f"ZooKeeper {version}: image {tag} ({recipe.suite}): {info.size_bytes / 1e6:.0f} MB")
    for faketime in [f == "on" for f in args.faketime.split(",")]:
        for nodes in [int(n) for n in args.nodes.split(",")]:
            times, mems = [], []
            for _ in range(args.runs):
                t, m = time_to_quorum(client, nodes, faketime, version)
                times.append(t)
                mems += m
            print(
                f"ZooKeeper {version}, {nodes} nodes, faketime {'on ' if faketime else 'off'}: "
                "up->quorum median "
                f"{statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f},"
                f" n={len(times)}); RSS per node median {statistics.median(mems):.0f} MB "
                f"(max {max(mems):.0f})"
            )


if __name__ == "__main__":
    main()
