"""Membership faults through each service's own reconfiguration (issue 35), on real ZooKeeper
3.8 and etcd 3.4 in Docker: after `member-replace` the cluster has the run's size, a leader
and a new member (empty data directory at its start) that holds the data written before it
joined; the configuration before and after is in the fault's detail; a rolling restart then
restarts every server in turn, the leader last, each step recording every server's version;
teardown leaves nothing of the added or removed members. On etcd the restarts are a rolling
upgrade to 3.5 (each member's 3.4 data directory carried over), each step's versions showing
the servers moved so far. (ZooKeeper 3.4 with a membership
fault is refused, 254, before anything is created: tests/unit/test_bad_input.py.) One cluster
of each, of their own (the session's shared ensemble must keep n1..n3)."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
from kazoo.client import KazooClient
from killed_runs import labelled

from zkjepsen.backends.etcd import gateway
from zkjepsen.backends.registry import make_backend
from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
from zkjepsen.docker import resources
from zkjepsen.nemesis.faults import FAULTS
from zkjepsen.nemesis.targets import NemesisContext

pytestmark = pytest.mark.integration


def _fault(backend, name: str, target: str) -> tuple[list[str], dict]:
    fault, ctx = FAULTS[name], NemesisContext(backend)
    targets, detail = fault.resolve(ctx, target, random.Random(35), {})
    fault.apply(ctx, targets, detail)
    fault.undo(ctx, targets, detail)
    return targets, detail


def _replace(backend, target: str) -> tuple[list[str], dict]:
    return _fault(backend, "member-replace", target)


def _rolling_restart(backend) -> None:
    """Every server restarted in turn (the leader last), each step's versions recorded."""
    leader = backend.leader().name
    targets, detail = _fault(backend, "rolling-restart", "all")
    assert targets[-1] == leader and sorted(targets) == sorted(n.name for n in backend.nodes)
    assert "failed" not in detail, detail
    assert [s["node"] for s in detail["steps"]] == targets
    assert all(v for s in detail["steps"] for v in s["versions"].values()), detail
    assert detail["versions_at_end"] == detail["versions"] and backend.leader() is not None


def _rolling_upgrade(backend, to: str) -> None:
    """Every server moved to version `to` in turn, on its own data (the leader last), each
    step recording every server's version: the earlier steps' servers already on `to`."""
    leader = backend.leader().name
    targets, detail = _fault(backend, "rolling-upgrade", "all")
    assert targets[-1] == leader and "failed" not in detail, detail
    assert not any(v.startswith(to) for v in detail["versions"].values()), detail
    for i, step in enumerate(detail["steps"], start=1):
        done = {s["node"] for s in detail["steps"][:i]}
        assert all(v.startswith(to) == (n in done) for n, v in step["versions"].items()), step
    assert all(v.startswith(to) for v in detail["versions_at_end"].values()), detail
    assert backend.leader() is not None


def test_zookeeper_member_replace_of_the_leader(docker_client, zk_image, tmp_path):
    ens = ZooKeeperEnsemble(EnsembleSpec(nodes=3, image=zk_image), tmp_path, client=docker_client)
    with ens:
        zk = KazooClient(hosts=ens.connect_string(), timeout=10)
        zk.start(timeout=15)
        zk.create("/i35", b"before the change")
        zk.stop()
        old_leader = ens.leader()
        targets, detail = _replace(ens, "leader")
        assert targets == [old_leader.name] and detail["removed"] == old_leader.name
        assert detail["added"] == "n4", detail
        assert detail["before"]["members"] == ["n1", "n2", "n3"]
        assert (
            old_leader.name not in detail["after"]["members"] and "n4" in detail["after"]["members"]
        )
        assert int(detail["after"]["version"], 16) > int(detail["before"]["version"], 16)
        assert len(ens.nodes) == 3 and ens.leader() is not None
        only_new = KazooClient(hosts=ens.node("n4").address, timeout=10)
        only_new.start(timeout=15)  # the new member alone answers with the data
        assert only_new.get("/i35")[0] == b"before the change"
        only_new.stop()
        _rolling_restart(ens)
    assert labelled(docker_client, ens.run_id) == ([], [])


def test_etcd_member_replace_of_a_follower(docker_client, etcd_image, etcd_next_image, tmp_path):
    b = make_backend(
        "etcd",
        SimpleNamespace(nodes=3, tick_ms=500, params={}, service=None),
        tmp_path,
        client=docker_client,
        engine=resources.DEFAULT_ENGINE,
        server_image=etcd_image,
        client_image=etcd_image,
    )
    with b:
        put = {"key": gateway.b64("i35"), "value": gateway.b64("before the change")}
        gateway.call(b.nodes[0].address, "v3/kv/put", put, timeout=5)
        targets, detail = _replace(b, "one")
        assert targets != [b.leader().name] or detail["leader"] is None
        assert detail["added"] == "n4" and detail["removed"] == targets[0]
        assert detail["before"]["members"] == ["n1", "n2", "n3"]
        assert sorted(detail["after"]["members"]) == sorted(n.name for n in b.nodes)
        assert len(b.nodes) == 3 and b.leader() is not None
        local = {"key": gateway.b64("i35"), "serializable": True}  # from n4's own store
        got = gateway.call(b.node("n4").address, "v3/kv/range", local, timeout=5)
        assert gateway.unb64(got["kvs"][0]["value"]) == b"before the change"
        _rolling_upgrade(b, "3.5")  # a rolling restart, each member on 3.5's image
        got = gateway.call(b.node("n4").address, "v3/kv/range", local, timeout=5)
        assert gateway.unb64(got["kvs"][0]["value"]) == b"before the change"  # 3.4's data
    assert labelled(docker_client, b.run_id) == ([], [])
