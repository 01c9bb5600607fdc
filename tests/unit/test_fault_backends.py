"""Which faults mean something on which backend (a matrix that mixes backends shows the rest
as n/a instead of stopping or running a fault that exercises nothing), and how the Redlock
faults choose their sides (pure logic: a fake context stands in for the containers)."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from zkjepsen.backends.etcd.service import EtcdSettings
from zkjepsen.backends.registry import backend_info
from zkjepsen.cli.matrix import cell_refusal
from zkjepsen.docker.cluster import Node
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import ABILITIES
from zkjepsen.nemesis.faults import KINDS
from zkjepsen.nemesis.redlock import PartitionRedlock
from zkjepsen.report import findings
from zkjepsen.run.resolve import validate_spec
from zkjepsen.run.spec import TestSpec


@pytest.mark.parametrize(
    "fault, backend, applies",
    [
        ("pause-client", "redlock", True),  # client faults apply everywhere
        ("clock-skew-client", "postgres", True),
        ("kill-leader", "redlock", False),  # five independent masters: nobody leads
        ("kill-leader", "redis-sentinel", True),
        ("partition-halves", "redis", False),  # one server: no peer to cut
        ("partition-halves", "redis-sentinel", True),
        ("clock-bump", "redis", True),  # zkj-timewarp patches redis-server's vDSO
        ("clock-bump", "postgres", False),  # PostgreSQL's locks read no server clock
        ("clock-rate-leader", "etcd", True),
        ("clock-rate-leader", "redlock", False),  # nobody leads
        ("clock-rate-one", "redlock", True),  # one master, whichever
        ("pg-terminate-holder", "zookeeper", False),
        ("pg-terminate-holder", "postgres", True),
        ("partition-redlock-restart", "redlock", True),
        ("partition-redlock-restart", "redis", False),
        ("proxy-drop-pings", "postgres", False),
    ],
)
def test_a_fault_applies_only_where_it_exercises_something(fault, backend, applies):
    (why,) = findings.fault_whys([fault], backend) or [None]
    assert (why is None) == applies, why
    lacking = KINDS[fault].needs - backend_info(backend).abilities
    assert bool(lacking) == (not applies)
    if why:  # one sentence naming the fault, the service and what it lacks
        assert why.startswith(f"{fault} does not apply to backend {backend}: ")
        assert all(ABILITIES[a] in why for a in lacking), why


def test_a_single_test_refuses_a_fault_that_does_not_apply(monkeypatch):
    spec = TestSpec(recipe="pg-advisory", nemesis=["kill-leader", "partition-redlock"])
    with pytest.raises(BadInput, match="partition-redlock does not apply to backend postgres"):
        validate_spec(spec)


def test_matrix_cells_not_applicable_are_named_with_their_reason():
    cells = [
        ("kazoo|pause-client", TestSpec(recipe="kazoo", nemesis=["pause-client"])),
        ("redlock|kill-leader", TestSpec(recipe="redlock", nemesis=["kill-leader"])),
        (
            "redis-set-px@redis-sentinel|kill-leader",
            TestSpec(recipe="redis-set-px", backend="redis-sentinel", nemesis=["kill-leader"]),
        ),
        ("kazoo|partition-redlock", TestSpec(recipe="kazoo", nemesis=["partition-redlock"])),
    ]
    na = {cell: why for cell, spec in cells if (why := cell_refusal(spec))}
    assert sorted(na) == ["kazoo|partition-redlock", "redlock|kill-leader"]
    assert "no leader" in na["redlock|kill-leader"]
    cell = {"na": na["redlock|kill-leader"]}
    assert findings.cell_text(cell) == "n/a (it has no leader)"
    run = {"runs": 5, "invalid": 1, "unknown": 0, "belief": 1, "effect": 0, "half_done": 0}
    table = findings.markdown_table(
        {"kazoo|pause-client": run, "redlock|kill-leader": cell},
        ["kazoo", "redlock"],
        ["pause-client", "kill-leader"],
        "h",
    )
    assert "| redlock | - | n/a (it has no leader) |" in table and "n/a: the fault" in table
    # n/a cells are not "missing runs": 5 runs per cell in every cell that ran.
    assert findings.runs_per_cell_text(5, {"a": run, "b": cell}, 2) == "5 runs per cell"


def test_a_go_recipe_on_an_etcd_without_its_driver_is_an_na_cell():
    """A 3.5 matrix over both etcd recipes runs the Python one and marks the Go one n/a, rather
    than refusing the whole matrix."""
    cells = [
        (f"{r}|none|{v}", TestSpec(recipe=r, nemesis=["none"], service=EtcdSettings(version=v)))
        for r in ("etcd-mutex-go", "etcd3-python")
        for v in ("3.4", "3.5")
    ]
    na = {cell: why for cell, spec in cells if (why := cell_refusal(spec))}
    assert sorted(na) == ["etcd-mutex-go|none|3.5"]
    assert "Go driver is built against etcd 3.4's client" in na["etcd-mutex-go|none|3.5"]


def test_merge_keeps_the_not_applicable_cells(tmp_path):
    settings = {
        "workload": "lock",
        "nodes": 3,
        "clients": 2,
        "time_limit_s": 4.0,
        "session_timeout_s": 3.0,
        "params": {},
        "runs": 1,
        "seed": 1,
        "recipes": ["redlock"],
        "nemeses": ["kill-leader"],
        "not_applicable": {"redlock|kill-leader": "kill-leader does not apply: it has no leader"},
    }
    path = findings.write_manifest(tmp_path / "st", settings, None, [])
    _, cells, _ = findings.merge([findings.read_manifest(path.parent)])
    assert cells == {
        "redlock|kill-leader": {"na": settings["not_applicable"]["redlock|kill-leader"]}
    }


def test_servers_per_backend_names_each_backends_shape():
    got = findings.servers_per_backend(["kazoo", "redis-set-px@redis-sentinel", "redlock"], 3)
    assert got == {"zookeeper": 3, "redis-sentinel": 3, "redlock": 5}
    header = findings.settings_header(
        {
            "workload": "lock",
            "nodes": 3,
            "clients": 4,
            "time_limit_s": 15.0,
            "session_timeout_s": 4.0,
            "params": {},
            "runs": 5,
            "seed": 1,
            "interval_s": 5.0,
            "recipes": ["kazoo", "redlock"],
            "nemeses": ["none"],
            "servers": got,
        },
        "now",
        "here",
    )
    assert "servers: zookeeper 3, redis-sentinel 3, redlock 5" in header
    assert "faults every ~5 s" in header


class FakeClient:
    def __init__(self, index: int) -> None:
        self.index = index

    def status(self) -> str:
        return "running"


def fake_ctx(clients: int, masters: int = 5):
    nodes = [Node(f"n{i}", i, f"10.0.0.{10 + i}", 6379) for i in range(1, masters + 1)]
    return SimpleNamespace(
        backend=SimpleNamespace(nodes=nodes),
        clients=lambda: [FakeClient(i) for i in range(1, clients + 1)],
        run_dir=None,
        live=None,  # no live history: nobody holds, the holder spec falls back to random
        state={},
        holder_wait_s=0.0,
    )


@pytest.mark.parametrize("seed", range(20))
def test_redlock_cut_gives_every_side_a_majority_and_spares_the_resource_master(seed):
    ctx = fake_ctx(clients=5)
    cut, d = PartitionRedlock(restart=True).resolve(ctx, "all", random.Random(seed), {})
    assert cut == d["cut_clients"] and len(cut) == 2  # half of 5, rounded down
    assert d["holder_when_cut"] is None  # nobody held: chosen at random
    assert len(d["unseen_masters"]) == 2 and "n1" not in d["unseen_masters"]
    assert sorted(d["seen_masters"] + d["unseen_masters"]) == [f"n{i}" for i in range(1, 6)]
    # The restarted master: one the cut side holds through, never n1 (tokens, resource).
    assert d["restart"] in d["seen_masters"] and d["restart"] != "n1"
    # Once it forgets: the other side's majority = the restarted master + the two unseen ones.
    assert len({d["restart"], *d["unseen_masters"]}) == 3


@pytest.mark.parametrize("seed", range(5))
def test_a_redlock_cut_aimed_at_named_clients_cuts_those(seed):
    """A scenario that triggers on one cut client names it: the cut is that side, and n1 (the
    master both sides always share) is never cut."""
    from zkjepsen.nemesis import NoTargets

    ctx = fake_ctx(clients=3)
    cut, d = PartitionRedlock(restart=False).resolve(ctx, "client:2", random.Random(seed), {})
    assert cut == d["cut_clients"] == ["c2"] and "n1" in d["seen_masters"]
    cut, _ = PartitionRedlock(restart=False).resolve(
        ctx, "client:3,client:1,client:9", random.Random(seed), {}
    )
    assert cut == ["c1", "c3"]  # c9 is not running
    with pytest.raises(NoTargets, match="none of client:9"):
        PartitionRedlock(restart=False).resolve(ctx, "client:9", random.Random(seed), {})


def test_redlock_faults_refuse_other_shapes():
    from zkjepsen.nemesis import NemesisError

    with pytest.raises(NemesisError, match="5 masters"):
        PartitionRedlock(restart=False).resolve(fake_ctx(4, masters=3), "all", random.Random(1), {})
    with pytest.raises(NemesisError, match="two running clients"):
        PartitionRedlock(restart=False).resolve(fake_ctx(1), "all", random.Random(1), {})


def test_matrix_header_names_each_backends_own_service():
    """The header says what the servers ran: etcd's, Redis's, PostgreSQL's own name and
    version, ZooKeeper's versions only when a recipe ran on ZooKeeper."""
    settings = {
        "workload": "lock",
        "nodes": 3,
        "clients": 5,
        "time_limit_s": 20.0,
        "session_timeout_s": 2.0,
        "params": {},
        "runs": 10,
        "seed": 1,
        "recipes": ["etcd3-python"],
        "nemeses": ["pause-client"],
        "zk_versions": ["3.8"],
        "servers": findings.servers_per_backend(["etcd3-python"], 3),
    }
    header = findings.settings_header(settings, "now", "here")
    assert "3 servers (etcd 3.4.23)" in header and "ZooKeeper" not in header
    settings["servers"] = findings.servers_per_backend(["kazoo", "pg-advisory", "redlock"], 3)
    assert findings.services_text(settings) == "ZooKeeper 3.8, PostgreSQL 15, Redis 7.0"
    # A manifest from before backends were recorded ran ZooKeeper.
    assert findings.services_text({"zk_versions": ["3.4", "3.9"]}) == "ZooKeeper 3.4, 3.9"
    tables = {"services": {"zookeeper": {"version": ["3.4", "3.9"], "client_suite": None}}}
    assert findings.services_text(tables) == "ZooKeeper 3.4, 3.9"


def test_cluster_status_attaches_to_the_backend_its_containers_name():
    from types import SimpleNamespace as NS

    from zkjepsen.backends.etcd.cluster import EtcdBackend
    from zkjepsen.backends.registry import backend_info, make_backend
    from zkjepsen.cli.attach import backend_of

    def member(i, role="server"):
        labels = {"zkjepsen.node": f"n{i}", "zkjepsen.myid": str(i), "zkjepsen.ip": f"10.9.0.{i}"}
        return NS(labels={**labels, "zkjepsen.role": role, "zkjepsen.backend": "etcd"})

    members = [member(2), member(1), member(3)]
    assert backend_of(members) == "etcd"
    assert backend_of([NS(labels={"zkjepsen.node": "n1"})]) == "zookeeper"  # ZooKeeper's: none
    ens = make_backend(
        "etcd",
        NS(nodes=3, service=None, params={}),
        Path("store/x"),
        client=object(),
        engine="local",
        server_image="img",
        client_image="img",
    )
    ens.adopt("run-1", members)
    assert isinstance(ens, EtcdBackend) and ens.info is backend_info("etcd")
    assert ens.run_id == "run-1" and [n.name for n in ens.nodes] == ["n1", "n2", "n3"]
    assert ens.connect_string() == "10.9.0.1:2379,10.9.0.2:2379,10.9.0.3:2379"
