"""A server clock fault is landed only when the server's own clock was seen moving (issue 47). On
ZooKeeper the nemesis runs the C clock probe in the server's container with its JVM's own
libfaketime environment (nemesis/clock.py, as Jepsen's check-offsets runs `date` on a node);
on Redis (and etcd) it reads zkj-timewarp's observation page, what redis-server itself read.
Either way it records the offset and rate it measured. A server that runs without libfaketime
gets its control file written all the same: the fault was sent, never felt, and is missed."""

from __future__ import annotations

import pytest
from clock_servers import end_record, under_clock_faults

from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
from zkjepsen.faultkinds import landing
from zkjepsen.nemesis import clock
from zkjepsen.nemesis.targets import NemesisContext

KINDS = {
    "clock-bump": (clock.Bump(), {"offset_s": -7}),
    "clock-rate-leader": (clock.Rate(), {"rate": 4.0}),
    "clock-strobe": (clock.Strobe(), {"offset_s": 3, "period_s": 1.2}),
}


@pytest.fixture
def one_server(docker_client, zk_image, tmp_path):
    def start(faketime: bool) -> ZooKeeperEnsemble:
        spec = EnsembleSpec(nodes=1, image=zk_image, faketime=faketime)
        return ZooKeeperEnsemble(spec, tmp_path / f"faketime-{faketime}", client=docker_client)

    return start


def each_kind(servers) -> dict:
    """Every server clock kind applied to the first server, then undone; what each saw."""
    node = servers.nodes[0]
    ctx = NemesisContext(servers)
    seen = {}
    for name, (kind, detail) in KINDS.items():
        for key in [k for k in detail if k not in ("offset_s", "period_s", "rate")]:
            del detail[key]  # the previous test's observations
        kind.apply(ctx, [node.name], detail)
        seen[name] = detail["clock_seen"][node.name]
        kind.undo(ctx, [node.name], detail)
        assert landing(name, {}, end_record(node.name, detail)).landed, (name, detail)
    clock.heal(ctx)
    print(f"\n{seen}")
    return seen


def test_each_server_clock_fault_is_seen_at_the_offset_or_rate_it_set(one_server):
    with one_server(True) as ens:
        seen = each_kind(ens)
    assert all(s["via"] == "libfaketime-probe" for s in seen.values())
    assert abs(seen["clock-bump"]["offset_s"] + 7) < 0.05
    assert abs(seen["clock-rate-leader"]["rate"] - 4.0) <= 0.04
    rate_detail = KINDS["clock-rate-leader"][1]
    assert rate_detail["heal_step_s"] < 0  # the heal stepped the lead the rate built back


def test_a_clock_fault_on_a_server_without_libfaketime_is_missed(one_server):
    with one_server(False) as ens:
        node = ens.nodes[0]
        ctx = NemesisContext(ens)
        kind, detail = clock.Bump(), {"offset_s": 30}
        kind.apply(ctx, [node.name], detail)  # the file is written; nobody reads it
        kind.undo(ctx, [node.name], detail)
    assert detail["clock_seen"][node.name]["samples"] == 0
    got = landing("clock-bump", {}, end_record(node.name, detail))
    assert not got.landed and got.why == "clock never read"


def test_each_clock_fault_on_redis_is_seen_from_what_redis_server_read(
    docker_client, redis_image, zk_image, tmp_path
):
    with under_clock_faults("redis", docker_client, redis_image, zk_image, tmp_path) as servers:
        seen = each_kind(servers)
    assert all(s["via"] == "timewarp" for s in seen.values())
    assert abs(seen["clock-bump"]["offset_s"] + 7) < 0.05
    assert abs(seen["clock-rate-leader"]["rate"] - 4.0) <= 0.04
    assert KINDS["clock-rate-leader"][1]["heal_step_via"] == "the control lines"
