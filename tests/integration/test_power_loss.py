"""The power-loss layer (docker/powerfs.c) against a real ZooKeeper (issue 34): what the server
fsynced before it acked survives a power loss, what it acked without an fsync is gone, and the
layer counted it. One single-server ensemble per preset (forceSync yes / no), ~15 s each."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from zkjepsen.backends.zookeeper.config import ZkSettings
from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
from zkjepsen.docker import resources

pytestmark = pytest.mark.integration
KEYS = 20


def _znodes(ens: ZooKeeperEnsemble, create: bool) -> list[bool]:
    zk = KazooClient(hosts=ens.connect_string(), timeout=10)
    zk.start(timeout=30)
    try:
        if create:
            for i in range(KEYS):
                zk.create(f"/power{i}", b"x" * 100)  # acked: in the log, fsynced or not
        return [zk.exists(f"/power{i}") is not None for i in range(KEYS)]
    finally:
        zk.stop()
        zk.close()


@pytest.mark.parametrize("force_sync", [True, False], ids=["strict", "relaxed"])
def test_what_was_fsynced_survives_a_power_loss_and_what_was_not_is_gone(
    docker_client, zk_image, tmp_path, force_sync
):
    spec = EnsembleSpec(nodes=1, image=zk_image, settings=ZkSettings(force_sync=force_sync))
    ens = ZooKeeperEnsemble(spec, tmp_path, client=docker_client)
    ens.power_layer = True
    with ens:
        node = ens.nodes[0]
        zk = KazooClient(hosts=ens.connect_string(), timeout=10)
        zk.start(timeout=30)
        zk.create("/before")  # the txn log exists: the creates below overwrite its padding
        zk.stop()
        zk.close()
        ens.power(node, "sync")  # what start-up wrote is on disk (its snapshot is not fsynced)
        assert all(_znodes(ens, create=True))
        pending = ens.power(node, "stat")
        counts = ens.power(node, "drop")
        ens.kill(node)
        ens.restart(node)
        ens.wait_for_quorum(60)
        after = _znodes(ens, create=False)
        zk = KazooClient(hosts=ens.connect_string(), timeout=10)
        zk.start(timeout=30)
        kept = zk.exists("/before") is not None
        zk.stop()
        zk.close()
        fresh = ens.power(node, "stat")  # the new boot's layer: nothing pending yet
    assert resources.leftovers(docker_client, ens.run_id) == []
    assert fresh["dead"] == 0 and counts["lost_bytes"] == pending["pending_bytes"]
    assert kept  # synced before: on disk whatever the preset
    if force_sync:
        assert all(after), after  # each create was fsynced before its ack
    else:
        assert counts["lost_bytes"] > 0 and not any(after), (counts, after)
