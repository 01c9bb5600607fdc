"""A server clock fault on ZooKeeper is landed only when the server's clock was seen moving: the
nemesis runs the C clock probe in the server's container with its JVM's own libfaketime
environment (nemesis/clock.py, as Jepsen's check-offsets runs `date` on a node) and records the
offset and rate it measured. A server that runs without libfaketime gets its control file
written all the same: the fault was sent, never felt, and is missed (issue 47)."""

from __future__ import annotations

import pytest

from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
from zkjepsen.faultkinds import landing
from zkjepsen.nemesis import clock
from zkjepsen.nemesis.targets import NemesisContext

KINDS = {
    "clock-bump": (clock.Bump(), {"offset_s": -7}),
    "clock-rate-leader": (clock.Rate(), {"rate": 4.0}),
    "clock-strobe": (clock.Strobe(), {"offset_s": 3, "period_s": 1.2}),
}


def end_record(node: str, detail: dict) -> dict:
    return {"fault_id": 1, "phase": "end", "targets": [node], "detail": detail}


@pytest.fixture
def one_server(docker_client, zk_image, tmp_path):
    def start(faketime: bool) -> ZooKeeperEnsemble:
        spec = EnsembleSpec(nodes=1, image=zk_image, faketime=faketime)
        return ZooKeeperEnsemble(spec, tmp_path / f"faketime-{faketime}", client=docker_client)

    return start


def test_each_server_clock_fault_is_seen_at_the_offset_or_rate_it_set(one_server):
    with one_server(True) as ens:
        node = ens.nodes[0]
        ctx = NemesisContext(ens)
        seen = {}
        for name, (kind, detail) in KINDS.items():
            kind.apply(ctx, [node.name], detail)
            seen[name] = detail["clock_seen"][node.name]
            kind.undo(ctx, [node.name], detail)
            assert landing(name, {}, end_record(node.name, detail)).landed, (name, detail)
        clock.heal(ctx)
    print(f"\n{seen}")
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
