"""The `postgres` backend: one real PostgreSQL 15 server (n1, the primary) in Docker.

A `ServerCluster` (docker/servers.py): the network, labels, teardown, node faults and client
endpoints are the shared ones, so pause, kill, partition and every client fault work unchanged.
Clients run zkjepsen's client image with psycopg, on the same network.

How the server notices a dead client matters more here than anything else: a `FOR UPDATE` row
lock or a session's advisory lock is held until PostgreSQL ends the holder's backend, and it
does that only once the connection is known dead. With Linux's defaults a silent peer is first
probed after 2 hours of idleness (`tcp_keepalive_time` 7200 s), so a client cut off while it
holds keeps the lock for hours (measured: benchmarks/pg_cut_holder.py). `PgSettings` therefore
sets TCP keepalives (idle 2 s, every 1 s, 3 probes) and `tcp_user_timeout` (5 s of
unacknowledged data): the server drops a cut-off client within about 5 s of its last packet,
the same order as the ZooKeeper session timeouts the other backends run with. Connections and
disconnections are logged with millisecond times (`nodes/n1/stdout.log`), so the log shows when
the server gave up on a client ("could not receive data from client: Connection timed out").

Durability (`--fsync`, service.py): strict is fsync=on, synchronous_commit=on; relaxed is
synchronous_commit=off. A run with disk faults boots the server through the power-loss layer
over its data directory (docker/powerfs.py); its WAL (`pg_wal/`) is its declared data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zkjepsen.backends.postgres import probe
from zkjepsen.backends.postgres.image import DATA_DIR, PG_USER
from zkjepsen.backends.postgres.schema import SETUP_SQL
from zkjepsen.backends.postgres.service import PostgresSettings
from zkjepsen.backends.postgres.session import PostgresSession
from zkjepsen.docker.cluster import Node
from zkjepsen.docker.servers import OneServerCluster
from zkjepsen.errors import EnvironmentProblem
from zkjepsen.spec import TestSpec

PG_PORT = 5432


@dataclass(frozen=True)
class PgSettings:
    """Server settings, passed as `postgres -c name=value`. Zero keepalive values mean the
    operating system's defaults (idle 7200 s, interval 75 s, 9 probes)."""

    keepalives_idle_s: int = 2
    keepalives_interval_s: int = 1
    keepalives_count: int = 3
    tcp_user_timeout_ms: int = 5000
    # PostgreSQL's default (0) is off: an open transaction may sit idle forever. Set it to see
    # a paused FOR UPDATE holder lose its transaction while it still believes it holds.
    idle_in_transaction_timeout_ms: int = 0
    max_connections: int = 200
    shared_buffers: str = "32MB"

    def args(self) -> list[str]:
        conf = {
            "listen_addresses": "*",
            "port": str(PG_PORT),
            "max_connections": str(self.max_connections),
            "shared_buffers": self.shared_buffers,
            "tcp_keepalives_idle": str(self.keepalives_idle_s),
            "tcp_keepalives_interval": str(self.keepalives_interval_s),
            "tcp_keepalives_count": str(self.keepalives_count),
            "tcp_user_timeout": str(self.tcp_user_timeout_ms),
            "idle_in_transaction_session_timeout": str(self.idle_in_transaction_timeout_ms),
            "log_connections": "on",
            "log_disconnections": "on",
            "log_line_prefix": "%m [%p] %r %a ",
            "unix_socket_directories": "/tmp",
        }
        return [a for k, v in conf.items() for a in ("-c", f"{k}={v}")]

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> PgSettings:
        """`--param pg_keepalives=os` leaves keepalives to the kernel; `--param
        pg_idle_tx_timeout_s=S` sets idle_in_transaction_session_timeout."""
        out = cls(
            idle_in_transaction_timeout_ms=int(float(params.get("pg_idle_tx_timeout_s", 0)) * 1000)
        )
        if params.get("pg_keepalives", "tuned") == "os":
            out = cls(0, 0, 0, 0, out.idle_in_transaction_timeout_ms)
        return out


class PostgresBackend(OneServerCluster):
    port = PG_PORT
    # The locks read no server clock (nothing expires by time on the server), so clock faults
    # there would test nothing; libfaketime is not preloaded into PostgreSQL.
    faketime = False
    no_faketime = "PostgreSQL's locks read no server clock; libfaketime is not preloaded"
    data_dir = DATA_DIR  # in the container (initdb'd in the image): the power-loss layer's
    data_files = ("pg_wal/0*",)  # the WAL segments: what a commit's durability rests on
    corrupt_files = data_files  # corrupt-file's choice: any of them

    def __init__(
        self,
        *args: Any,
        settings: PgSettings | None = None,
        service: PostgresSettings | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(*args, **kw)
        self.settings = settings or PgSettings.from_params(self.params)
        self.service = (service or PostgresSettings()).settled()

    @classmethod
    def for_spec(cls, spec: TestSpec, store_dir: Any, **kw: Any):
        """As every server cluster's, with the run's durability preset (`--fsync`)."""
        out = super().for_spec(spec, store_dir, **kw)
        if isinstance(spec.service, PostgresSettings):
            out.service = spec.service.settled()
        return out

    def args(self) -> list[str]:
        return self.settings.args() + self.service.server_args()

    def ready(self) -> bool:
        n = self.nodes[0]
        return probe.ready(n.ip, n.port, timeout=0.5)

    def start(self) -> None:
        super().start()
        (self.store_dir / "nodes" / "n1" / "postgres.args").write_text(" ".join(self.args()) + "\n")
        self.setup_schema()

    def psql(self, sql: str, node: Node | None = None, tcp: bool = False) -> str:
        """Run SQL with the image's psql inside the server container; returns psql's unaligned
        output, raises on an SQL error. `tcp`: over 127.0.0.1 rather than the Unix socket, for
        settings only TCP sessions have (keepalives)."""
        host = "127.0.0.1" if tcp else "/tmp"
        code, out = self.exec(
            node or self.nodes[0],
            ["psql", "-h", host, "-U", PG_USER, "-X", "-qAt", "-v", "ON_ERROR_STOP=1", "-c", sql],
        )
        if code != 0:
            raise EnvironmentProblem(f"psql failed on the postgres server: {out.strip()[-300:]}")
        return out

    def setup_schema(self) -> None:
        """The tables every client needs, once, before any client starts (concurrent
        `CREATE TABLE IF NOT EXISTS` is not safe)."""

        self.psql(SETUP_SQL)

    # ---- Backend ----------------------------------------------------------------------------
    def host_session(self, timeout_s: float):

        return PostgresSession(self.connect_string(), timeout=timeout_s)


postgres_backend = PostgresBackend.for_spec  # BackendInfo.target
