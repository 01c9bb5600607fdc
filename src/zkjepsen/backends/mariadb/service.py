"""MariaDB as a lock service: one server; its one setting is the durability preset (`fsync`:
strict or relaxed; `--fsync`, which several services declare, or TOML `[mariadb] fsync =
"relaxed"`) (backends/plugin.py, backends/shared.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from zkjepsen.backends.plugin import BackendInfo, Service
from zkjepsen.backends.shared import fsync_option, parse_fsync
from zkjepsen.faultkinds.abilities import DATA_FILES, LEADER
from zkjepsen.spec import TestSpec

# --fsync: strict is InnoDB's durable default, innodb_flush_log_at_trx_commit=1 (a commit is
# acknowledged once its redo log is written and fsynced); relaxed is =2 (written to the
# operating system at each commit, fsynced about once a second: a power loss takes up to a
# second of acknowledged commits; a process crash takes none).
FLUSH_AT_COMMIT = {"strict": 1, "relaxed": 2}


@dataclass(frozen=True)
class MariaDBSettings:
    fsync: str | None = None  # None: not given (strict when settled)
    name = "mariadb"

    def __post_init__(self) -> None:
        if self.fsync is not None:
            parse_fsync(self.fsync)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def settled(self) -> MariaDBSettings:
        return replace(self, fsync=self.fsync or "strict")

    def check(self, spec: TestSpec, language: str) -> None:
        """Nothing needs the whole test. (A power loss of a majority or of the leader of its
        one server is refused by the faults' own predicate: faultkinds `SEVERAL_SERVERS`.)"""

    def lacks(self) -> dict[str, str]:
        """Nothing its backend declares depends on its settings."""
        return {}

    def describe(self) -> str:
        return "MariaDB 10.11 innodb_flush_log_at_trx_commit=2" if self.fsync == "relaxed" else ""

    def server_args(self) -> list[str]:
        """The preset as mariadbd arguments."""
        return [f"--innodb-flush-log-at-trx-commit={FLUSH_AT_COMMIT[self.fsync or 'strict']}"]


def _server_recipe(settings: Any):
    # here, not at the top: the services' declarations stay import-light (no docker)
    from zkjepsen.backends.mariadb.image import mariadb_image

    return mariadb_image()


SERVICE = Service(
    name="mariadb",
    label="MariaDB",
    settings=MariaDBSettings,
    backends=(
        BackendInfo(
            "mariadb",
            "mariadb",
            "one MariaDB 10.11 server (Debian bookworm); TCP keepalives tuned so a cut-off "
            "client is dropped within ~5 s",
            "zkjepsen.backends.mariadb.cluster:mariadb_backend",
            nodes=1,
            ready_timeout_s=60.0,
            service="MariaDB 10.11",
            abilities=frozenset({LEADER, DATA_FILES}),
        ),
    ),
    server_recipe=_server_recipe,
    options=(
        fsync_option(
            "strict (innodb_flush_log_at_trx_commit=1, the default) or relaxed (=2: the "
            "redo log is fsynced about once a second, after the commit is acked).",
            "MariaDB's fsync preset",
        ),
    ),
)
