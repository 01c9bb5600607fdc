"""PostgreSQL as a lock service: one server, no settings of its own yet (backends/plugin.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zkjepsen.backends.plugin import BackendInfo, NoSettings, Service


@dataclass(frozen=True)
class PostgresSettings(NoSettings):
    name = "postgres"


def _server_recipe(settings: Any):
    # here, not at the top: the services' declarations stay import-light (no docker)
    from zkjepsen.backends.postgres.image import postgres_image

    return postgres_image()


SERVICE = Service(
    name="postgres",
    label="PostgreSQL",
    settings=PostgresSettings,
    backends=(
        BackendInfo(
            "postgres",
            "postgres",
            "one PostgreSQL 15 server (Debian bookworm); TCP keepalives tuned so a cut-off "
            "client is dropped within ~5 s",
            "zkjepsen.backends.postgres.cluster:postgres_backend",
            nodes=1,
            ready_timeout_s=60.0,
            service="PostgreSQL 15",
            abilities=frozenset({"leader", "terminate-session"}),
        ),
    ),
    server_recipe=_server_recipe,
)
