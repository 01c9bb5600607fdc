"""Which backend a running cluster is (`cluster status|down` find it by its containers'
labels)."""

from __future__ import annotations

from pathlib import Path

from zkjepsen.backends.zookeeper.ensemble import ZooKeeperEnsemble
from zkjepsen.docker import resources
from zkjepsen.store.regular import read_text


def backend_of(containers: list) -> str:
    """The backend a run's server containers belong to: their `zkjepsen.backend` label
    (ServerCluster sets it); ZooKeeper's servers carry none."""
    names = {c.labels.get("zkjepsen.backend", "zookeeper") for c in containers}
    return names.pop() if len(names) == 1 else "zookeeper"


def attach(client, run_id: str):
    """The handle of a running cluster, of whichever backend its containers say."""
    from zkjepsen.backends.registry import make_backend
    from zkjepsen.spec import TestSpec

    found = client.containers.list(all=True, filters={"label": f"{resources.RUN_LABEL}={run_id}"})
    servers = [c for c in found if "zkjepsen.backend" in c.labels]
    backend = backend_of(servers) if servers else "zookeeper"
    if backend == "zookeeper":
        return ZooKeeperEnsemble.attach(run_id, client)
    marker = resources.SCRATCH_ROOT / run_id / resources.DETACHED_MARKER
    store = Path(read_text(marker, "detached marker", 4096)) if marker.exists() else None
    store = store or Path("store/cluster") / run_id
    image = servers[0].image.tags[0] if servers[0].image.tags else servers[0].image.id
    roles = [c for c in servers if c.labels.get(resources.ROLE_LABEL) == "server"]
    ens = make_backend(
        backend,
        TestSpec(nodes=max(len(roles), 1)),  # servers all gone: still attached, to tear down
        store,
        client=client,
        engine=resources.DEFAULT_ENGINE,
        server_image=image,
        client_image=image,
    )
    ens.adopt(run_id, servers)
    return ens
