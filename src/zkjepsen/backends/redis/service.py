"""Redis as a lock service: three shapes of servers (one master; a master, replicas and
Sentinels; Redlock's five masters) and one setting, the durability preset (backends/plugin.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from zkjepsen.backends.plugin import BackendInfo, Service
from zkjepsen.backends.shared import fsync_option, parse_fsync
from zkjepsen.faultkinds.abilities import (
    DATA_FILES,
    INDEPENDENT_MASTERS,
    LEADER,
    PEERS,
    SERVER_CLOCK,
)
from zkjepsen.spec import TestSpec

# --fsync: strict (AOF, appendfsync always), relaxed (AOF, appendfsync everysec); "off" (no
# AOF, no RDB: how Redis is commonly run for locks) is what runs when --fsync is not given.
OFF = "off"


@dataclass(frozen=True)
class RedisSettings:
    # None: not given; settled: "off" (no persistence, as before --fsync existed)
    fsync: str | None = None
    name = "redis"
    # added after runs were stored: one stored without it ran without persistence ("off")
    absent_means_default = ("fsync",)

    def __post_init__(self) -> None:
        if self.fsync not in (None, OFF):
            parse_fsync(self.fsync)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def settled(self) -> RedisSettings:
        return replace(self, fsync=self.fsync or OFF)

    def check(self, spec: TestSpec, language: str) -> None:
        pass

    def lacks(self) -> dict[str, str]:
        """Nothing its backends declare depends on its settings."""
        return {}

    def describe(self) -> str:
        return {"strict": "AOF appendfsync always", "relaxed": "AOF appendfsync everysec"}.get(
            self.fsync or OFF, ""
        )


def _server_recipe(settings: Any):
    # here, not at the top: the services' declarations stay import-light (no docker)
    from zkjepsen.backends.redis.cluster import redis_image

    return redis_image()


_TARGET = "zkjepsen.backends.redis.cluster:redis_backend"
_DISK = DATA_FILES  # the power-loss layer under /srv/data (its AOF and dump.rdb)
SERVICE = Service(
    name="redis",
    label="Redis",
    settings=RedisSettings,
    backends=(
        BackendInfo(
            "redis",
            "redis",
            "one Redis 7.0 master (no replicas; no persistence unless --fsync)",
            _TARGET,
            nodes=1,
            ready_timeout_s=30.0,
            service="Redis 7.0",
            abilities=frozenset({LEADER, SERVER_CLOCK, _DISK}),
        ),
        BackendInfo(
            "redis-sentinel",
            "redis",
            "a Redis 7.0 master, 2 replicas and 3 Sentinels (quorum 2): kill the master and a "
            "replica is promoted",
            _TARGET,
            nodes=3,
            ready_timeout_s=60.0,
            # down-after 2 s + failover-timeout 6 s (cluster.py), then the clients find it
            election_s=10.0,
            service="Redis 7.0",
            abilities=frozenset({PEERS, LEADER, SERVER_CLOCK, _DISK}),
        ),
        BackendInfo(
            "redlock",
            "redis",
            "5 independent Redis 7.0 masters (Redlock)",
            _TARGET,
            nodes=5,
            ready_timeout_s=30.0,
            service="Redis 7.0",
            abilities=frozenset({INDEPENDENT_MASTERS, SERVER_CLOCK, _DISK}),
        ),
    ),
    server_recipe=_server_recipe,
    options=(
        fsync_option(
            "strict (AOF, appendfsync always: each write fsynced before its reply) or relaxed "
            "(AOF, appendfsync everysec); not given: no AOF, no RDB, as before.",
            "Redis's fsync preset",
        ),
    ),
)
