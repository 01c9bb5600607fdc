"""Redis as a lock service: three shapes of servers (one master; a master, replicas and
Sentinels; Redlock's five masters), no settings of its own yet (backends/plugin.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zkjepsen.backends.plugin import BackendInfo, NoSettings, Service


@dataclass(frozen=True)
class RedisSettings(NoSettings):
    name = "redis"


def _server_recipe(settings: Any):
    # here, not at the top: the services' declarations stay import-light (no docker)
    from zkjepsen.backends.redis.cluster import redis_image

    return redis_image()


_TARGET = "zkjepsen.backends.redis.cluster:redis_backend"
SERVICE = Service(
    name="redis",
    label="Redis",
    settings=RedisSettings,
    backends=(
        BackendInfo(
            "redis",
            "redis",
            "one Redis 7.0 master (no replicas, no persistence)",
            _TARGET,
            nodes=1,
            ready_timeout_s=30.0,
            service="Redis 7.0",
            abilities=frozenset({"leader", "server-clock"}),
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
            abilities=frozenset({"peers", "leader", "server-clock"}),
        ),
        BackendInfo(
            "redlock",
            "redis",
            "5 independent Redis 7.0 masters (Redlock)",
            _TARGET,
            nodes=5,
            ready_timeout_s=30.0,
            service="Redis 7.0",
            abilities=frozenset({"independent-masters", "server-clock"}),
        ),
    ),
    server_recipe=_server_recipe,
)
