"""ZooKeeper as a lock service: its settings (the servers' version, tickTime, the clients'
Debian suite), its backend, its command-line options and its images (backends/plugin.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from zkjepsen.backends.plugin import BackendInfo, Service, ServiceOption
from zkjepsen.backends.zookeeper import versions
from zkjepsen.backends.zookeeper.config import ZkSettings
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds.abilities import (
    DATA_FILES,
    LEADER,
    PEERS,
    RECONFIGURE,
    RESTART_SERVERS,
    SERVER_CLOCK,
    UPGRADE,
    ZK_WIRE,
)
from zkjepsen.spec import TestSpec

DEFAULT_TICK_MS = 500
FSYNC = ("strict", "relaxed")  # --fsync: the durability preset (forceSync yes / no)
# How a killed server comes back: with its container (docker kill/start) or as a new process
# in the container it keeps (docker/supervise.py: the gate's leader kills, seconds faster).
RESTARTS = ("container", "process")


@dataclass(frozen=True)
class ZooKeeperSettings:
    """None: not given (a refusal names only what was given); `settled` fills the defaults."""

    version: str | None = None  # the servers' version: 3.4, 3.8, 3.9 (versions.py)
    # tickTime: 500 ms makes failover fast and bounds session timeouts to [2, 20] ticks.
    tick_ms: int | None = None
    client_suite: str | None = None  # the clients' suite or a version naming one; None: servers'
    # strict: forceSync=yes (each txn fsynced before its ack); relaxed: forceSync=no.
    fsync: str | None = None
    # how often the servers delete empty container nodes, ms (None: ZooKeeper's 60 s)
    container_check_ms: int | None = None
    restart: str | None = None  # RESTARTS; None: container
    name = "zookeeper"
    # added after runs were stored: one stored without them ran with forceSync=yes (strict),
    # ZooKeeper's own container interval and server restarts with the container: the defaults
    absent_means_default = ("fsync", "container_check_ms", "restart")

    def __post_init__(self) -> None:
        if self.version is not None:
            object.__setattr__(self, "version", versions.get(self.version).name)
        if self.tick_ms is not None and (
            isinstance(self.tick_ms, bool)
            or not isinstance(self.tick_ms, int)
            or not 50 <= self.tick_ms <= 10_000
        ):
            raise BadInput(f"tick_ms must be a whole number from 50 to 10000, not {self.tick_ms!r}")
        if self.client_suite is not None:
            versions.client_suite(self.client_suite)
        if self.fsync is not None and self.fsync not in FSYNC:
            raise BadInput(f"fsync must be strict or relaxed, not {self.fsync!r}")
        if self.restart is not None and self.restart not in RESTARTS:
            raise BadInput(f"restart must be container or process, not {self.restart!r}")
        c = self.container_check_ms
        if c is not None and (isinstance(c, bool) or not isinstance(c, int) or not 100 <= c):
            raise BadInput(f"container_check_ms must be a whole number of at least 100, not {c!r}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def settled(self) -> ZooKeeperSettings:
        return replace(
            self,
            version=self.version or versions.DEFAULT,
            tick_ms=self.tick_ms or DEFAULT_TICK_MS,
            fsync=self.fsync or "strict",
        )

    def check(self, spec: TestSpec, language: str) -> None:
        """ZooKeeper grants a session timeout within [2, 20] ticks and silently clamps one
        outside it: the run would not test the timeout asked for."""
        tick = self.tick_ms or DEFAULT_TICK_MS
        lo, hi = 2 * tick / 1000, 20 * tick / 1000
        if not lo <= spec.session_timeout_s <= hi:
            raise BadInput(
                f"session timeout {spec.session_timeout_s:g}s is outside what the "
                f"servers grant with tickTime {tick} ms ([{lo:g}s, {hi:g}s])"
            )

    def lacks(self) -> dict[str, str]:
        """Abilities the backend declares that this version has not (ability -> why)."""
        v = versions.get(self.version)
        out = {}
        if not v.reconfig:
            out[RECONFIGURE] = f"ZooKeeper {v.name} has no dynamic reconfiguration (3.5+ has)"
        if v.name not in versions.UPGRADES:
            steps = ", ".join(f"{a} -> {b}" for a, b in versions.UPGRADES.items())
            out[UPGRADE] = f"ZooKeeper {v.name} has no next version to roll to (upgrades: {steps})"
        return out

    def describe(self) -> str:
        suite = f" (clients: {self.suite().suite})" if self.client_suite else ""
        relaxed = " forceSync=no" if self.fsync == "relaxed" else ""
        in_place = " (servers restarted in place)" if self.restart == "process" else ""
        return f"ZooKeeper {versions.get(self.version).name}{relaxed}{suite}{in_place}"

    def suite(self) -> versions.ZkVersion:
        """The version whose image runs the clients."""
        return versions.client_suite(self.client_suite, self.version)


def _server_recipe(settings: Any):
    # here, not at the top: the services' declarations stay import-light (no docker)
    from zkjepsen.backends.zookeeper.image import zookeeper_recipe

    return zookeeper_recipe(settings.version)


def _client_recipe(settings: Any):
    """The clients run the servers' image unless a client suite is asked for."""
    # here, not at the top: the services' declarations stay import-light (no docker)
    from zkjepsen.backends.zookeeper.image import zookeeper_recipe

    return zookeeper_recipe(settings.suite().name) if settings.client_suite else None


def ensemble_spec(
    settings: ZooKeeperSettings | None, nodes: int, image: str, client_image: str | None = None
):
    """The ensemble's own spec (zoo.cfg's knobs) for a test's settings."""
    # here, not at the top: the services' declarations stay import-light (no docker)
    from zkjepsen.backends.zookeeper.config import ZkSettings
    from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec

    settled = (settings or ZooKeeperSettings()).settled()
    assert settled.tick_ms is not None and settled.version is not None  # settled
    return EnsembleSpec(
        nodes=nodes,
        image=image,
        client_image=client_image,
        settings=ZkSettings(
            tick_ms=settled.tick_ms,
            zk_version=settled.version,
            force_sync=settled.fsync != "relaxed",
            container_check_ms=settled.container_check_ms,
        ),
        restart_in_place=settled.restart == "process",
    )


def zookeeper_backend(
    spec: TestSpec,
    store_dir: Path,
    *,
    backend: BackendInfo,
    client,
    engine,
    server_image,
    client_image,
):
    # here, not at the top: the services' declarations stay import-light (no docker)
    from zkjepsen.backends.zookeeper.ensemble import ZooKeeperEnsemble

    settings = spec.service if isinstance(spec.service, ZooKeeperSettings) else None
    ens_spec = ensemble_spec(settings, spec.nodes, server_image, client_image)
    return ZooKeeperEnsemble(ens_spec, store_dir, client=client, engine=engine)


def _suite(text: str) -> str:
    versions.client_suite(text)
    return text


def _fsync(text: str) -> str:
    return ZooKeeperSettings(fsync=text).fsync or text


def _tick(tick: int) -> int:
    return ZooKeeperSettings(tick_ms=tick).tick_ms or tick


SERVICE = Service(
    name="zookeeper",
    label="ZooKeeper",
    settings=ZooKeeperSettings,
    backends=(
        BackendInfo(
            "zookeeper",
            "zookeeper",
            "a ZooKeeper ensemble of --nodes servers (3.8.0, Debian bookworm)",
            "zkjepsen.backends.zookeeper.service:zookeeper_backend",
            abilities=frozenset(
                {PEERS, LEADER, SERVER_CLOCK, ZK_WIRE, RECONFIGURE, DATA_FILES}
                | {RESTART_SERVERS, UPGRADE}
            ),
            # (initLimit + syncLimit) ticks + 5 s at tick 500 ms: 12.5 s (a restarted JVM too)
            election_s=ZkSettings().election_limit_s,
        ),
    ),
    server_recipe=_server_recipe,
    clients=_client_recipe,
    options=(
        ServiceOption(
            "--zk-version",
            "version",
            f"ZooKeeper version of the servers: {', '.join(versions.VERSIONS)} "
            f"(default {versions.DEFAULT}).",
            lambda text: versions.get(text).name,
            metavar="VERSION",
        ),
        ServiceOption(
            "--zk-versions",
            "version",
            "Run every ZooKeeper row on each of these versions (e.g. 3.4,3.8,3.9).",
            versions.parse_list,
            metavar="V1,V2,...",
            commands=frozenset({"matrix", "scenario"}),
            axis=True,
            row_tag="zk",
        ),
        ServiceOption(
            "--client-suite",
            "client_suite",
            "The clients' Debian suite, i.e. their Curator and go-zookeeper: bullseye "
            "(Curator 2.7.1), bookworm (5.4.0), trixie (5.7.1), or a ZooKeeper version naming "
            "one. Default: the servers' own.",
            _suite,
            metavar="SUITE",
            commands=frozenset({"test", "cluster", "matrix", "scenario"}),
        ),
        ServiceOption(
            "--fsync",
            "fsync",
            "Durability preset: strict (forceSync=yes, the default) or relaxed (forceSync=no: "
            "a txn is acked before it is fsynced). Shows with the disk faults (power-loss-*).",
            _fsync,
            metavar="strict|relaxed",
            commands=frozenset({"test", "cluster", "matrix", "scenario", "gate"}),
            owner="ZooKeeper's fsync preset",
        ),
        ServiceOption(
            "--tick-ms",
            "tick_ms",
            "ZooKeeper's tickTime in ms (default 500: session timeouts from 1 s to 10 s).",
            _tick,
            metavar="MS",
            commands=frozenset({"cluster"}),
            owner="ZooKeeper's tickTime",
            int_range=(50, 10_000),
        ),
    ),
    legacy={
        "zk_version": "version",
        "tick_ms": "tick_ms",
        "client_suite": "client_suite",
        "zk_versions": "version",  # a matrix manifest's axis, before services had tables
    },
    legacy_ignored={"tick_ms": DEFAULT_TICK_MS},
)
