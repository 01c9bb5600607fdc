"""Whether a fault can run is decided once (issue 49): `run.resolve.refusals(spec)`, the faults'
one predicate (faultkinds/facts.py) over the resolved run. The four cases the issue found (each
accepted, then failing or changing mid-run) are refused before anything is created, or run as
asked; a backend's declared abilities are exactly the ability protocols its class satisfies;
and nothing else decides (the old paths stay gone, fault names stay in their few places)."""

from __future__ import annotations

import ast
import importlib
import json
import re
import sys
from pathlib import Path

import pytest

from zkjepsen.backends.base import ABILITY_PROTOCOLS
from zkjepsen.backends.etcd.service import EtcdSettings
from zkjepsen.backends.registry import backends
from zkjepsen.backends.zookeeper.service import ZooKeeperSettings
from zkjepsen.faultkinds import KINDS, RunFacts, applicable, refusals
from zkjepsen.report import findings
from zkjepsen.run import resolve
from zkjepsen.spec import TestSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bad_input import assert_refused, here, run_cli  # noqa: E402, F401 - fixtures

SRC = Path(__file__).resolve().parents[2] / "src" / "zkjepsen"


# ---- the four cases: refused before anything is created, one sentence, 254 -------------------
@pytest.mark.parametrize(
    "args,words",
    [
        (
            ["--nemesis", "rolling-upgrade", "--zk-version", "3.9"],
            ["rolling-upgrade does not apply to backend zookeeper", "ZooKeeper 3.9 has no next"],
        ),
        (
            ["--recipe", "etcd3-python", "--etcd-version", "3.5", "--nemesis", "rolling-upgrade"],
            ["rolling-upgrade does not apply to backend etcd", "etcd 3.5.16 has no next version"],
        ),
        (
            ["--recipe", "redis-set-px", "--backend", "redis-sentinel"]
            + ["--nemesis", "rolling-restart"],
            ["rolling-restart does not apply to backend redis-sentinel", "one at a time"],
        ),
        (
            ["--nemesis", "partition-ring", "--nodes", "3"],
            ["partition-ring does not apply to backend zookeeper", "at least 4 servers"],
        ),
    ],
)
def test_the_issues_cases_are_refused_before_anything_is_created(args, words, here, capsys):  # noqa: F811
    code, err = run_cli(["test", *args], capsys)
    assert_refused(code, err, here, *words)


def test_what_they_refuse_runs_where_it_can():
    """The same faults where the run allows them: the upgrade from the versions that have a
    next one, the restart on a backend that restarts its servers, a real ring from 4 servers."""
    for spec in (
        TestSpec(nemesis=["rolling-upgrade"], service=ZooKeeperSettings(version="3.8")),
        TestSpec(recipe="etcd3-python", nemesis=["rolling-upgrade"], service=EtcdSettings()),
        TestSpec(recipe="etcd3-python", nemesis=["rolling-restart"], nodes=3),
        TestSpec(nemesis=["partition-ring"], nodes=4),
    ):
        assert resolve.refusals(spec, spec.nemesis) == {}
        resolve.validate_spec(spec)


def test_a_ring_of_four_is_a_ring_and_three_is_no_ring():
    """What partition-ring's predicate protects: from 4 servers every server sees a majority and
    no two the same one; with 3 the implementation refuses instead of running halves."""
    import random

    from zkjepsen.nemesis import NemesisError
    from zkjepsen.nemesis.partition import majorities_ring

    for n in (4, 5, 6, 7):
        names = [f"n{i}" for i in range(1, n + 1)]
        for seed in range(20):
            grudge = majorities_ring(names, random.Random(seed))
            seen = {x: frozenset(names) - set(grudge[x]) for x in names}
            assert all(len(s) > n // 2 and x in s for x, s in seen.items()), (n, seen)
            assert len(set(seen.values())) == n and any(grudge.values())
    with pytest.raises(NemesisError):
        majorities_ring(["n1", "n2", "n3"], random.Random(0))


def test_a_zk_versions_matrix_marks_one_cell_na_and_runs_its_twin(tmp_path, monkeypatch):
    """`matrix --zk-versions 3.4,3.9 --nemeses member-add`: the 3.4 cell is n/a with the reason,
    the 3.9 cell is checked and left to run (it is not refused whole). The shard that holds
    only the 3.4 cell runs the whole command without an engine (the 3.9 cell is shard 2's)."""
    from click.testing import CliRunner

    from zkjepsen.cli.app import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent")  # nothing may reach an engine
    cells = ["kazoo zk3.4|member-add", "kazoo zk3.9|member-add"]
    assert findings.cells_of_shard(cells, (1, 2)) == [cells[0]]  # its twin: shard 2
    args = ["matrix", "--recipes", "kazoo", "--nemeses", "member-add", "--zk-versions", "3.4,3.9"]
    args += ["--runs", "1", "--shard", "1/2", "--out", "m.md", "--store", "s"]
    got = CliRunner().invoke(cli, args)
    assert got.exit_code == 0, got.output
    manifest = json.loads((tmp_path / "s" / findings.MANIFEST).read_text())
    na = manifest["settings"]["not_applicable"]
    assert list(na) == [cells[0]]
    assert (
        "member-add does not apply to backend zookeeper: ZooKeeper 3.4 has no dynamic"
        in (na[cells[0]])
    )
    assert "n/a (ZooKeeper 3.4 has no dynamic reconfiguration" in (tmp_path / "m.md").read_text()


# ---- the one predicate -----------------------------------------------------------------------
def test_refusals_is_one_call_over_every_fault():
    """Every declared fault is either refused (with a sentence naming it and the backend) or
    applicable, for a run given as a spec or as facts: the hunt's menu is one call."""
    spec = TestSpec(recipe="redis-set-px", backend="redis-sentinel")
    refused = resolve.refusals(spec)
    faults = {n for n, k in KINDS.items() if k.power is not None}
    assert set(refused) <= faults and "none" not in refused
    run = resolve.run_facts(spec)
    assert refusals(run) == refused
    assert set(applicable(run)) == faults - set(refused)
    assert {"kill-leader", "partition-halves", "power-loss-one"} <= set(applicable(run))
    for name, why in refused.items():
        assert why.startswith(f"{name} does not apply to backend redis-sentinel"), why
        assert "\n" not in why


def test_what_a_run_offers_comes_from_the_resolved_run():
    """The facts: the declared abilities less what the version takes away, peers only with a
    second server, the clients' proxy and program."""
    zk34 = resolve.run_facts(TestSpec(service=ZooKeeperSettings(version="3.4")))
    assert "reconfigure" not in zk34.abilities and "upgrade" not in zk34.abilities
    assert "3.4" in zk34.why_not["reconfigure"]
    assert "upgrade" in resolve.run_facts(TestSpec()).abilities  # 3.8 by default
    one = resolve.run_facts(TestSpec(nodes=1))
    assert "peers" not in one.abilities and one.nodes == 1
    assert "partition-one" in refusals(one) and "kill-one" not in refusals(one)
    inproc = resolve.run_facts(TestSpec(client_mode="in-process"))
    assert "client-clock" not in inproc.clients and "wire-proxy" not in inproc.clients
    proxied = resolve.run_facts(TestSpec(recipe="curator-java", proxy=True))
    assert {"client-clock", "wire-proxy"} <= proxied.clients
    assert refusals(RunFacts("zookeeper", 3, zk34.abilities | {"upgrade"}))  # pure facts


def test_a_backends_declared_abilities_are_the_protocols_its_class_satisfies():
    """Declared ability <=> the backend's class has what the faults needing it call (Jepsen's
    `satisfies?`): a backend declaring one it cannot do, or doing one it does not declare,
    fails here (redis-sentinel once declared enough for rolling-restart and lacked it)."""
    from zkjepsen.backends.zookeeper.ensemble import ZooKeeperEnsemble

    checked = 0
    for info in backends().values():
        module, _, attr = info.target.partition(":")
        factory = getattr(importlib.import_module(module), attr)
        cls = getattr(factory, "__self__", None) or ZooKeeperEnsemble  # ZooKeeper's: a function
        bare = object.__new__(cls)  # no instance state: what the class itself offers
        for ability, protocol in ABILITY_PROTOCOLS.items():
            assert (ability in info.abilities) == isinstance(bare, protocol), (info.name, ability)
            checked += 1
    assert checked == len(backends()) * len(ABILITY_PROTOCOLS) >= 6 * 4


# ---- nothing else decides ---------------------------------------------------------------------
def _source(rel: str) -> str:
    return (SRC / rel).read_text()


def _modules() -> list[tuple[str, str]]:
    return [(p.relative_to(SRC).as_posix(), p.read_text()) for p in sorted(SRC.rglob("*.py"))]


GONE = {  # the applicability paths issue 49 removed: each one coming back fails here
    r"\bhasattr\(": "the nemesis probing a backend at fault time",
    r"getattr\([^)]*[\"']lacks[\"']": "a version's gaps found by getattr",
    r"\bnot_applicable\(|\bnot_applicable_cells\b|\bunmet\(": "a copy of the refusal for matrix",
    r"ONE_SERVER_REFUSED|check_warp_arch|_check_client_clock": "a service's or clients' check",
}


def test_the_removed_applicability_paths_stay_gone():
    found = []
    for rel, text in _modules():
        for pattern, what in GONE.items():
            if pattern == r"\bhasattr\(" and not rel.startswith("nemesis/"):
                continue
            found += [f"{rel}: {what}" for _ in re.finditer(pattern, text)]
    assert not found


def test_one_predicate_reads_what_a_fault_needs():
    """A fault kind's client needs and its own predicate are read in faultkinds/ alone; a
    settings' `lacks` and a backend's declared abilities only where the facts are built
    (run/resolve.py, and the stored matrix's check in report/findings.py)."""
    readers: dict[str, set[str]] = {
        r"\.client_needs\b|\bkind\.applies\b|\]\.applies\b": set(),
        r"\.lacks\(\)": {"run/resolve.py"},
        r"\binfo\.abilities\b|\)\.abilities\b": {"run/resolve.py", "report/findings.py"},
    }
    for pattern, allowed in readers.items():
        where = {
            rel
            for rel, text in _modules()
            if not rel.startswith("faultkinds/") and re.search(pattern, text)
        }
        assert where <= allowed, (pattern, where - allowed)


# Where a fault's name may be written outside its declaration (faultkinds/) and implementation
# (nemesis/): the scenario catalogues (their data: what a scenario runs, `zkjepsen gate`'s and
# `scenario run`'s) and `cluster demo`'s fixed run. Issue 49 found six places (a service's check
# of faults, the trigger defaults of `test` and `shrink`...); their words now live in the
# declarations (FaultKind.applies, FaultKind.on_acquire).
PLACES = {"reproduce/scenarios": "the scenario catalogue", "run/gate.py": "the scenario catalogue"}
PLACES_MAX = 2


def _place(rel: str) -> str:
    return next((p for prefix, p in PLACES.items() if rel.startswith(prefix)), rel)


def test_fault_names_are_written_in_at_most_two_places():
    names = {n for n, k in KINDS.items() if k.power is not None}
    places: dict[str, int] = {}
    for rel, text in _modules():
        if rel.startswith(("faultkinds/", "nemesis/")):
            continue
        tree = ast.parse(text)
        docs = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body
            and isinstance(n.body[0], ast.Expr)
        }
        hits = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value in names and id(n) not in docs
        ]
        if hits:
            places[_place(rel)] = places.get(_place(rel), 0) + len(hits)
    print(f"fault names outside faultkinds/ and nemesis/: {places}")
    assert len(places) <= PLACES_MAX, places


def test_a_zk_versions_scenario_run_leaves_out_the_version_a_fault_cannot_run_on(capsys):
    """`scenario run --zk-versions 3.4,3.9` of a member-add scenario: the 3.4 pair is n/a with
    the predicate's sentence, the 3.9 pair runs (as a matrix's cells)."""
    from zkjepsen.cli.reproduce import _scenario_plan
    from zkjepsen.reproduce.scenario import Scenario

    s = Scenario("grow", "t", "w", {"nemesis": ["member-add"], "workload": "lock"})
    plan = _scenario_plan([(s, "kazoo")], 1, {}, {"zookeeper": ("version", ["3.4", "3.9"])})
    assert [(p[0].name, p[1], p[2]) for p in plan] == [
        ("grow", "kazoo", ZooKeeperSettings(version="3.9"))
    ]
    err = capsys.readouterr().err
    assert (
        "n/a grow with kazoo: member-add does not apply to backend zookeeper: ZooKeeper 3.4" in err
    )
