"""etcd as a lock service: its settings (the servers' version, whose image also runs the
clients), its backend, its option and its images (backends/plugin.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from zkjepsen.backends.etcd import versions
from zkjepsen.backends.plugin import SERVERS_IMAGE, BackendInfo, Service, ServiceOption
from zkjepsen.backends.shared import fsync_option, parse_fsync
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds.abilities import (
    DATA_FILES,
    LEADER,
    PEERS,
    RECONFIGURE,
    RESTART_SERVERS,
    SERVER_CLOCK,
    UPGRADE,
)
from zkjepsen.spec import TestSpec


@dataclass(frozen=True)
class EtcdSettings:
    version: str | None = None  # 3.4 or 3.5 (versions.py); None: not given (3.4 when settled)
    # strict: etcd as shipped (the WAL fsynced before a write is acked); relaxed:
    # --unsafe-no-fsync (nothing fsynced; etcd 3.5+). None: not given (strict when settled).
    fsync: str | None = None
    name = "etcd"
    # added after runs were stored: one stored without it ran etcd as shipped (strict)
    absent_means_default = ("fsync",)

    def __post_init__(self) -> None:
        if self.version is not None:
            object.__setattr__(self, "version", versions.get(self.version).name)
        if self.fsync is not None:
            parse_fsync(self.fsync)  # as shipped, or --unsafe-no-fsync

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def settled(self) -> EtcdSettings:
        """Refused here, not as the settings are made: what a run would start (a test, a
        cluster) settles them first, while a matrix makes every row's settings and marks the
        cells settling refuses n/a with the reason (report/services.py: without_driver)."""
        v = versions.get(self.version)
        if self.fsync == "relaxed" and not v.unsafe_no_fsync:
            raise BadInput(
                f"--fsync relaxed is etcd's --unsafe-no-fsync, which etcd {v.etcd} lacks "
                "(3.5 has it; add --etcd-version 3.5)"
            )
        return replace(self, version=v.name, fsync=self.fsync or "strict")

    def check(self, spec: TestSpec, language: str) -> None:
        """A Go recipe needs a driver built for the version's client packages."""
        why = versions.without_driver(versions.get(self.version), spec.recipe, language)
        if why:
            raise BadInput(why)

    def lacks(self) -> dict[str, str]:
        """Abilities the backend declares that this version has not (ability -> why)."""
        v = versions.get(self.version)
        if v.name in versions.UPGRADES:
            return {}
        steps = ", ".join(f"{a} -> {b}" for a, b in versions.UPGRADES.items())
        return {UPGRADE: f"etcd {v.etcd} has no next version to roll to (upgrades: {steps})"}

    def describe(self) -> str:
        v = versions.get(self.version)
        relaxed = " --unsafe-no-fsync" if self.fsync == "relaxed" and v.unsafe_no_fsync else ""
        return f"etcd {v.etcd}{relaxed}"


def _server_recipe(settings: Any):
    # here, not at the top: the services' declarations stay import-light (no docker)
    from zkjepsen.backends.etcd.image import etcd_image

    return etcd_image(settings.version)


def _version(text: str) -> str:
    return versions.get(text).name


_CHOICES = ", ".join(f"{v.name} ({v.suite}'s {v.etcd})" for v in versions.VERSIONS.values())
SERVICE = Service(
    name="etcd",
    label="etcd",
    settings=EtcdSettings,
    backends=(
        BackendInfo(
            "etcd",
            "etcd",
            "an etcd 3.4.23 cluster of --nodes (1, 3, 5 or 7) members (Debian bookworm)",
            "zkjepsen.backends.etcd.cluster:etcd_backend",
            sizes=(1, 3, 5, 7),
            service="etcd 3.4.23",
            abilities=frozenset(
                {PEERS, LEADER, RECONFIGURE, SERVER_CLOCK, DATA_FILES, RESTART_SERVERS, UPGRADE}
            ),
            # election timeout 1 s (etcd's default) + a restarted member replaying its WAL
            election_s=5.0,
        ),
    ),
    server_recipe=_server_recipe,
    clients=SERVERS_IMAGE,  # gRPC, the etcd3 client and its Go driver live in its image
    options=(
        ServiceOption(
            "--etcd-version",
            "version",
            f"etcd version of the servers (and their clients): {_CHOICES}; default "
            f"{versions.DEFAULT}.",
            _version,
            metavar="VERSION",
        ),
        fsync_option(
            "strict (as shipped: the WAL fsynced before an ack, the default) or relaxed "
            "(--unsafe-no-fsync, etcd 3.5+).",
            "etcd's fsync preset",
        ),
    ),
    legacy={"etcd_version": "version"},
)
