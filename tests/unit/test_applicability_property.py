"""`refusals()` agrees with what the nemesis can do (issue 49): for random runs (backend,
version, servers, the clients' recipe and runtime, proxy, faults), a run `validate_spec`
accepts resolves every one of its faults, dry, against a stand-in of the resolved cluster, and
each fault exercises something there (a cut cuts, a member change is served, a roll restarts
every server); a run it refuses for a fault is refused with `refusals()`'s own sentence.

The stand-in is made from the resolved run, not from the predicate: its servers are the run's,
it has a leader where the backend declares one, and it offers exactly the ability methods the
backend's real class has (backends/base.py's protocols, which test_applicability.py checks
against the declarations), with an upgrade that follows the real table of next versions. No
Docker: the faults' `resolve` (and, for the membership family, which acts through the backend
alone, `apply` and `undo`) run against it."""

from __future__ import annotations

import importlib
import random
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zkjepsen.backends.base import ABILITY_PROTOCOLS
from zkjepsen.backends.etcd import versions as etcd_versions
from zkjepsen.backends.etcd.service import EtcdSettings
from zkjepsen.backends.registry import backend_info, backends
from zkjepsen.backends.zookeeper import versions as zk_versions
from zkjepsen.backends.zookeeper.service import ZooKeeperSettings
from zkjepsen.docker.cluster import Node
from zkjepsen.errors import BadInput, EnvironmentProblem
from zkjepsen.faultkinds import KINDS
from zkjepsen.faultkinds.abilities import LEADER
from zkjepsen.nemesis.faults import FAULTS
from zkjepsen.nemesis.targets import NemesisContext
from zkjepsen.recipes import RECIPES
from zkjepsen.run.resolve import refusals, validate_spec
from zkjepsen.spec import TestSpec

FAULT_NAMES = sorted(n for n, k in KINDS.items() if k.power is not None)
TALLY: Counter[str] = Counter()


def real_class(backend: str) -> type:
    """The class a backend's servers are (its factory's class; ZooKeeper's is a function)."""
    from zkjepsen.backends.zookeeper.ensemble import ZooKeeperEnsemble

    module, _, attr = backend_info(backend).target.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    return getattr(factory, "__self__", None) or ZooKeeperEnsemble


class Cluster:
    """The resolved run's servers, as the faults see them: nodes, a leader, and (added per
    backend below) the ability methods its real class has."""

    def __init__(self, spec: TestSpec, rng: random.Random) -> None:
        self.run_id = "dry"
        self.nodes = [Node(f"n{i}", i, f"10.0.0.{i}", 2181) for i in range(1, spec.nodes + 1)]
        info = backend_info(spec.backend or "")
        self._leads = LEADER in info.abilities
        self._leader = rng.choice(self.nodes) if self.nodes else None
        service = spec.service
        self.version = getattr(service, "version", None) or ""
        self.zookeeper = isinstance(service, ZooKeeperSettings)
        self.upgrades = (
            zk_versions.UPGRADES
            if isinstance(service, ZooKeeperSettings)
            else etcd_versions.UPGRADES
        )

    def leader(self) -> Node | None:
        return self._leader if self._leads and self._leader in self.nodes else None

    def logs(self, node: Node) -> str:
        return ""

    def state(self, node: Node) -> str:
        return "running"

    # The ability methods: copied onto a backend's stand-in only where its real class has them.
    def membership(self) -> dict[str, Any]:
        return {"members": [n.name for n in self.nodes]}

    def remove_member(self, node: Node) -> None:
        self._reconfig()
        self.nodes.remove(node)
        if self._leader == node:
            self._leader = self.nodes[0] if self.nodes else None

    def add_member(self) -> Node:
        self._reconfig()
        i = max(n.id for n in self.nodes) + 1
        node = Node(f"n{i}", i, f"10.0.0.{i}", 2181)
        self.nodes.append(node)
        return node

    def _reconfig(self) -> None:
        """As the real servers: ZooKeeper before 3.5 has no `reconfig` (its version table)."""
        if self.zookeeper and not zk_versions.get(self.version).reconfig:
            raise RuntimeError(f"ZooKeeper {self.version}: reconfig is not a command")

    def server_version(self, node: Node) -> str | None:
        return f"{self.version}.0" if node in self.nodes else None

    def restart_server(self, node: Node, image: str | None, step: int) -> None:
        if image is not None:
            self.version = image

    def upgrade_image(self) -> str:
        """As the real ones: the next version of what the servers say they run, or none."""
        nxt = self.upgrades.get(self.version)
        if nxt is None:
            raise EnvironmentProblem(f"no upgrade from {self.version}")
        return nxt


ABILITY_METHODS = {
    name
    for protocol in ABILITY_PROTOCOLS.values()
    for name in getattr(protocol, "__protocol_attrs__", None) or protocol.__dict__
    if not name.startswith("_") and callable(getattr(Cluster, name, None))
}


def stand_in(spec: TestSpec, rng: random.Random) -> Any:
    cls = real_class(spec.backend or "")
    missing = {m: None for m in ABILITY_METHODS if not hasattr(cls, m)}
    fake = type(f"Dry{cls.__name__}", (Cluster,), missing)(spec, rng)
    for attr in ("data_files", "corrupt_files"):
        if hasattr(cls, attr):
            setattr(fake, attr, getattr(cls, attr))
    return fake


class Handle:
    def __init__(self, index: int) -> None:
        self.index, self.ip = index, f"10.0.1.{index}"

    def status(self) -> str:
        return "running"


class Pool:
    def __init__(self, clients: int) -> None:
        self.handles = [Handle(i) for i in range(1, clients + 1)]
        self.run_dir = None
        self.live = None


def dry_run(spec: TestSpec, name: str, seed: int) -> None:
    """Resolve fault `name` against the run's stand-in; a membership fault also goes in and is
    undone there. Raises what the nemesis would raise mid-run; asserts it exercised something."""
    rng = random.Random(seed)
    fake = stand_in(spec, rng)
    ctx = NemesisContext(fake, pool=Pool(spec.clients or 1), holder_wait_s=0.0)
    bound = FAULTS[name]
    assert bound.impl is not None
    targets, detail = bound.impl.resolve(ctx, KINDS[name].target, rng, {})
    names = {n.name for n in fake.nodes} | {f"c{h.index}" for h in ctx.clients()}
    assert set(targets) <= names, (name, targets)
    n = len(fake.nodes)
    if KINDS[name].target == "minority":  # what it says: fewer than half the servers
        assert 0 < len(targets) < n / 2, (name, targets)
    if KINDS[name].target == "majority":
        assert len(targets) > n / 2, (name, targets)
    if "grudge" in detail:  # a cut between servers cuts someone off from someone
        assert any(detail["grudge"].values()), (name, detail)
    if KINDS[name].observer in ("members", "roll"):
        size = len(fake.nodes)
        bound.impl.apply(ctx, targets, detail)
        assert "failed" not in detail, (name, detail)
        if KINDS[name].observer == "members":
            assert detail["served"] == detail["intended"], (name, detail)
        else:
            assert set(detail["served"]) == set(targets), (name, detail)
        bound.impl.undo(ctx, targets, detail)
        assert len(fake.nodes) == size


def recipes_for(backend: str) -> list[str]:
    return sorted(r for r, info in RECIPES.items() if backend in info.backends)


@st.composite
def runs(draw: Any) -> TestSpec:
    backend = draw(st.sampled_from(sorted(backends())))
    recipe = draw(st.sampled_from(recipes_for(backend)))
    info = backend_info(backend)
    # mostly runs the rest of validation accepts, so that the faults' side is what is tested
    nodes = draw(st.sampled_from(info.sizes) if info.sizes else st.integers(1, 7))
    in_process = backend == "zookeeper" and not RECIPES[recipe].command and draw(st.booleans())
    service: Any = None
    if backend == "zookeeper":
        service = ZooKeeperSettings(version=draw(st.sampled_from(sorted(zk_versions.VERSIONS))))
    elif backend == "etcd":
        service = EtcdSettings(version=draw(st.sampled_from(sorted(etcd_versions.VERSIONS))))
    return TestSpec(
        recipe=recipe,
        backend=backend,
        workload="lock",
        nodes=nodes,
        clients=draw(st.integers(1, 6)),
        client_mode="in-process" if in_process else "protocol",
        proxy=draw(st.booleans()) and backend == "zookeeper",
        nemesis=draw(st.lists(st.sampled_from(FAULT_NAMES), min_size=1, max_size=3, unique=True)),
        service=service,
    )


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=runs(), seed=st.integers(0, 2**16))
def check_one_run(spec: TestSpec, seed: int) -> None:
    TALLY["tried"] += 1
    try:
        refused = refusals(spec, spec.nemesis)
    except BadInput:
        TALLY["bad spec"] += 1  # settings its backend cannot take: not a fault's question
        return
    try:
        validate_spec(spec)
    except BadInput as e:
        first = next((n for n in spec.nemesis if n in refused), None)
        said = str(e)
        if " does not apply to backend " in said:
            assert first is not None and said == refused[first], (said, refused)
            TALLY["refused: a fault"] += 1
        else:
            TALLY["refused: something else"] += 1
            TALLY["why: " + said[:60]] += 1
        return
    assert not refused, (spec, refused)  # accepted: no fault of it is refused
    TALLY["accepted"] += 1
    for name in spec.nemesis:
        dry_run(spec, name, seed)
        TALLY["faults resolved dry"] += 1


def test_refusals_agree_with_what_the_nemesis_can_do():
    TALLY.clear()
    check_one_run()
    print(f"applicability property: {dict(TALLY)}")
    assert TALLY["accepted"] > 0 and TALLY["refused: a fault"] > 0, TALLY  # both sides reached
