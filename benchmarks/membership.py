"""Membership and upgrade times (issue 35), on one idle ZooKeeper ensemble (no clients):
`member-replace` of the leader (the removal until the rest serve with a leader; the fresh
member's up-to-ready time: from its start with an empty data directory until every member
serves and one leads, after `reconfig -add`), then a `rolling-upgrade` 3.8 -> 3.9 (each
step: a new container on the next image until every server serves and one leads). Figures
are the faults' own detail, as a run's schedule.json records them. `--backend etcd`: the same
on etcd (`member add/remove`; the upgrade 3.4 -> 3.5 on each member's own data directory).
Take under the lock:

    flock /tmp/zkj-timing.lock .venv/bin/python benchmarks/membership.py [--nodes 3] [--rounds 2]
        [--backend etcd]
"""

from __future__ import annotations

import argparse
import random
import tempfile
from types import SimpleNamespace

from zkjepsen.backends.etcd.image import etcd_image
from zkjepsen.backends.registry import make_backend
from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
from zkjepsen.backends.zookeeper.image import zookeeper_recipe
from zkjepsen.docker import resources
from zkjepsen.docker.image import ensure_image
from zkjepsen.nemesis.faults import FAULTS
from zkjepsen.nemesis.targets import NemesisContext


def fault(ens, name: str, target: str) -> dict:
    kind, ctx = FAULTS[name], NemesisContext(ens)
    targets, detail = kind.resolve(ctx, target, random.Random(35), {})
    kind.apply(ctx, targets, detail)
    kind.undo(ctx, targets, detail)
    return detail


def cluster(backend: str, nodes: int):
    """An idle cluster of `backend` on its older version, both versions' images built first
    (so no build is timed)."""
    client = resources.docker_client()
    scratch = tempfile.mkdtemp(prefix="i35-bench-")
    if backend == "zookeeper":
        image = ensure_image(client, None, recipe=zookeeper_recipe("3.8")).tag
        ensure_image(client, None, recipe=zookeeper_recipe("3.9"))
        return ZooKeeperEnsemble(EnsembleSpec(nodes=nodes, image=image), scratch, client=client)
    image = ensure_image(client, None, recipe=etcd_image("3.4")).tag
    ensure_image(client, None, recipe=etcd_image("3.5"))
    spec = SimpleNamespace(nodes=nodes, tick_ms=500, params={}, service=None)
    return make_backend(
        "etcd",
        spec,
        scratch,
        client=client,
        engine=resources.DEFAULT_ENGINE,
        server_image=image,
        client_image=image,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--backend", choices=("zookeeper", "etcd"), default="zookeeper")
    args = ap.parse_args()
    with cluster(args.backend, args.nodes) as ens:
        for r in range(args.rounds):
            d = fault(ens, "member-replace", "leader")
            print(
                f"member-replace leader round {r + 1}: removal {d['removed_s']:.2f} s, "
                f"fresh member up-to-ready {d['added_ready_s']:.2f} s ({d['added']})"
            )
        d = fault(ens, "rolling-upgrade", "all")
        for s in d.get("steps", []):
            print(f"rolling-upgrade step {s['node']}: {s['s']:.2f} s  versions {s['versions']}")
        if d.get("failed"):
            print(f"rolling-upgrade failed: {d['failed']}")


if __name__ == "__main__":
    main()
