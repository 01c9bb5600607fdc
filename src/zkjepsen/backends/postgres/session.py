"""A client session with PostgreSQL (psycopg 3), shaped for the workloads (see
client/services/__init__.py): the protected resource, fencing tokens, and connections for the
PostgreSQL lock recipes (recipes/pg), which each open their own (the lock lives in it).

The resource is a row of `zkjepsen_kv` (backends/postgres/schema.py) per workload path: `version`
counts its accepted writes, `top_token` is the highest fencing token it accepted. A fenced
write is one `UPDATE ... WHERE top_token <= token`: refused (`Fenced`) when a later holder
already wrote, atomically with the write. Tokens come from the `zkjepsen_fence` sequence.

Every connection is autocommit with libpq's `connect_timeout` 3 s, TCP keepalives and
`tcp_user_timeout` 5 s, so a statement on a cut connection fails within seconds (an unknown
outcome) instead of waiting out the kernel's 15-minute retransmission limit. A connection that
failed is dropped; the next statement opens a new one, as an application's pool would.
Runs inside client containers (and on the host for setup and the final read).
"""

from __future__ import annotations

from typing import Any

from kazoo.exceptions import NodeExistsError, NoNodeError

from zkjepsen.backends.session import BadVersion, ConnectionSession, Fenced, Stat

CLIENT_CONNINFO: dict[str, Any] = {
    "user": "postgres",
    "dbname": "postgres",
    "connect_timeout": 3,
    "keepalives": 1,
    "keepalives_idle": 2,
    "keepalives_interval": 1,
    "keepalives_count": 3,
    "tcp_user_timeout": 5000,
}
SET_SQL = """UPDATE zkjepsen_kv SET data = %(data)s, version = version + 1,
       top_token = CASE WHEN %(fenced)s THEN %(token)s ELSE top_token END
 WHERE path = %(path)s AND (%(version)s = -1 OR version = %(version)s)
   AND (NOT %(fenced)s OR top_token <= %(token)s)
RETURNING version"""


class PostgresSession(ConnectionSession):
    """`PostgresSession(hosts, timeout=...)`, hosts `ip:5432`: kazoo-shaped (start/get/...)."""

    def __init__(self, hosts: str, timeout: float = 4.0, **_: Any) -> None:
        self.hosts = hosts
        self.timeout = timeout
        host, _sep, port = hosts.split(",")[0].partition(":")
        self.host, self.port = host, int(port or 5432)
        self.conn: Any = None

    def connect(self, role: str) -> Any:
        """A new autocommit connection named `zkjepsen-<role>` in pg_stat_activity."""
        # here, not at the top: a service's client library, loaded by runs of that service
        import psycopg

        return psycopg.connect(
            host=self.host,
            port=self.port,
            application_name=f"zkjepsen-{role}"[:63],
            autocommit=True,
            **CLIENT_CONNINFO,
        )

    @property
    def session_id(self) -> str:
        """No sessions: name the resource connection's backend (the history's `session`)."""
        return f"pg-{self.conn.info.backend_pid}" if self.conn is not None else "pg-none"

    # -- the protected resource -------------------------------------------------------------
    def create(self, path: str, value: bytes = b"") -> str:

        row = self._execute(
            "INSERT INTO zkjepsen_kv (path, data) VALUES (%s, %s) ON CONFLICT DO NOTHING "
            "RETURNING path",
            (path, value.decode()),
        )
        if row is None:
            raise NodeExistsError()
        return path

    def get(self, path: str) -> tuple[bytes | None, Stat]:

        row = self._execute("SELECT data, version FROM zkjepsen_kv WHERE path = %s", (path,))
        if row is None:
            raise NoNodeError()
        return (row[0].encode() if row[0] is not None else None), Stat(int(row[1]))

    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        return self._set(path, data, version, None, fenced=False)

    def fenced_set(self, path: str, data: bytes, version: int, token: int | None) -> Stat:
        if token is None:
            raise Fenced("no fencing token")
        return self._set(path, data, version, token, fenced=True)

    def next_token(self, lock_path: str) -> int:
        """The fencing token of an acquisition: the next value of one global sequence (never
        rolled back, so a later acquisition always draws a larger token)."""
        return int(self._execute("SELECT nextval('zkjepsen_fence')")[0])

    # -- helpers ----------------------------------------------------------------------------
    def _set(self, path: str, data: bytes, version: int, token: int | None, fenced: bool) -> Stat:

        args = {
            "path": path,
            "data": data.decode(),
            "version": int(version),
            "fenced": fenced,
            "token": token or 0,
        }
        row = self._execute(SET_SQL, args)
        if row is not None:
            return Stat(int(row[0]))
        # Refused (definitely: the UPDATE matched nothing); say why, for the history.
        now = self._execute("SELECT version, top_token FROM zkjepsen_kv WHERE path = %s", (path,))
        if now is None:
            raise NoNodeError()
        if fenced and now[1] > args["token"]:
            raise Fenced(f"token {args['token']} < stored {now[1]}")
        raise BadVersion(f"version {now[0]}, not {version}")

    def _execute(self, sql: str, args: Any = None) -> Any:
        if self.conn is None or self.conn.closed:
            self.conn = self.connect("data")
        try:
            return self.conn.execute(sql, args).fetchone()
        except Exception:
            self._drop()  # its state is unknown: the next statement gets a new connection
            raise
