"""PostgreSQL as a lock service: one server; its one setting is the durability preset
(`fsync`: strict or relaxed; `--fsync`, which several services declare, or TOML
`[postgres] fsync = "relaxed"`) (backends/plugin.py, backends/shared.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from zkjepsen.backends.plugin import BackendInfo, Service
from zkjepsen.backends.shared import fsync_option
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds.abilities import DATA_FILES, LEADER, TERMINATE_SESSION
from zkjepsen.spec import TestSpec

# --fsync: strict is PostgreSQL's durable default (fsync=on, synchronous_commit=on: a commit is
# acknowledged once its WAL is flushed); relaxed is synchronous_commit=off (the commit is
# acknowledged at once, the WAL writer flushes it within ~3 x wal_writer_delay, 200 ms).
FSYNC = ("strict", "relaxed")


@dataclass(frozen=True)
class PostgresSettings:
    fsync: str | None = None  # None: not given (strict when settled)
    name = "postgres"
    # added after runs were stored: one stored without it ran PostgreSQL's defaults (strict)
    absent_means_default = ("fsync",)

    def __post_init__(self) -> None:
        if self.fsync is not None and self.fsync not in FSYNC:
            raise BadInput(f"fsync must be strict or relaxed, not {self.fsync!r}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def settled(self) -> PostgresSettings:
        return replace(self, fsync=self.fsync or "strict")

    def check(self, spec: TestSpec, language: str) -> None:
        """Nothing needs the whole test. (A power loss of a majority or of the leader of its
        one server is refused by the faults' own predicate: faultkinds `SEVERAL_SERVERS`.)"""

    def lacks(self) -> dict[str, str]:
        """Nothing its backend declares depends on its settings."""
        return {}

    def describe(self) -> str:
        return "PostgreSQL 15 synchronous_commit=off" if self.fsync == "relaxed" else ""

    def server_args(self) -> list[str]:
        """The preset as `postgres -c name=value` arguments."""
        commit = "off" if self.fsync == "relaxed" else "on"
        return ["-c", "fsync=on", "-c", f"synchronous_commit={commit}"]


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
            abilities=frozenset({LEADER, TERMINATE_SESSION, DATA_FILES}),
        ),
    ),
    server_recipe=_server_recipe,
    options=(
        fsync_option(
            "strict (fsync=on, synchronous_commit=on, the default) or relaxed "
            "(synchronous_commit=off: a commit is acked before its WAL is flushed).",
            "PostgreSQL's fsync preset",
        ),
    ),
)
