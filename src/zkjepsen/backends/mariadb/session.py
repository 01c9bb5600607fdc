"""A client session with MariaDB (PyMySQL), shaped for the workloads (see
backends/session.py): the protected resource, fencing tokens, and connections for the MariaDB
lock recipes (recipes/mariadb), which each open their own (the lock lives in it).

The resource is a row of `zkjepsen_kv` (schema.py) per workload path: `version` counts its
accepted writes, `top_token` is the highest fencing token it accepted. A fenced write is one
`UPDATE ... WHERE top_token <= token`: refused (`Fenced`) when a later holder already wrote,
atomically with the write. MariaDB has no `UPDATE ... RETURNING`, so the new version comes back
as the statement's `LAST_INSERT_ID(version + 1)` (the connection's own, in the OK packet).
Tokens are the row version of the `zkjepsen_fence` counter, drawn the same way.

Every connection is autocommit with a 3 s connect timeout, 5 s read and write timeouts, and TCP
keepalives (idle 2 s, every 1 s, 3 probes) and `TCP_USER_TIMEOUT` 5 s on its socket, so a
statement on a cut connection fails within seconds (an unknown outcome) instead of waiting out
the kernel's 15-minute retransmission limit. A connection that failed is dropped; the next
statement opens a new one, as an application's pool would.
Runs inside client containers (and on the host for setup and the final read).
"""

from __future__ import annotations

import socket
from typing import Any

from kazoo.exceptions import NodeExistsError, NoNodeError

from zkjepsen.backends.mariadb.schema import DATABASE, PASSWORD, PORT, USER
from zkjepsen.backends.session import BadVersion, ConnectionSession, Fenced, Stat

READ_TIMEOUT_S = 5.0
CLIENT_ARGS: dict[str, Any] = {
    "user": USER,
    "password": PASSWORD,
    "database": DATABASE,
    "connect_timeout": 3,
    "read_timeout": READ_TIMEOUT_S,
    "write_timeout": READ_TIMEOUT_S,
    "autocommit": True,
    "charset": "utf8mb4",
}
KEEPALIVE = ((socket.TCP_KEEPIDLE, 2), (socket.TCP_KEEPINTVL, 1), (socket.TCP_KEEPCNT, 3))
USER_TIMEOUT_MS = 5000
SET_SQL = """UPDATE zkjepsen_kv SET data = %(data)s, version = LAST_INSERT_ID(version + 1),
       top_token = IF(%(fenced)s, %(token)s, top_token)
 WHERE path = %(path)s AND (%(version)s = -1 OR version = %(version)s)
   AND (NOT %(fenced)s OR top_token <= %(token)s)"""
TOKEN_SQL = "UPDATE zkjepsen_fence SET n = LAST_INSERT_ID(n + 1) WHERE id = 1"


def parse_hosts(hosts: str) -> tuple[str, int]:
    """`ip:3306` (the first of a list): (host, port); ValueError when it is not one."""
    first = hosts.split(",")[0].strip()
    if not first or "://" in first or "@" in first or "/" in first:
        raise ValueError(f"{hosts!r} is not host:port")
    host, _sep, port = first.partition(":")
    return host, int(port or PORT)


class MariaDBSession(ConnectionSession):
    """`MariaDBSession(hosts, timeout=...)`, hosts `ip:3306`: kazoo-shaped (start/get/...)."""

    def __init__(self, hosts: str, timeout: float = 4.0, **_: Any) -> None:
        self.hosts = hosts
        self.timeout = timeout
        self.host, self.port = parse_hosts(hosts)
        self.conn: Any = None

    def connect(self, role: str) -> Any:
        """A new autocommit connection (`role` names it in the client's own logs only: the
        server shows a connection by its thread id, `session_id`)."""
        # here, not at the top: a service's client library, loaded by runs of that service
        import pymysql

        conn = pymysql.connect(host=self.host, port=self.port, **CLIENT_ARGS)
        # PyMySQL sets SO_KEEPALIVE with the kernel's 2-hour defaults; its socket is private
        sock: socket.socket = conn._sock  # type: ignore[attr-defined]
        for opt, value in KEEPALIVE:
            sock.setsockopt(socket.IPPROTO_TCP, opt, value)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, USER_TIMEOUT_MS)
        return conn

    @property
    def session_id(self) -> str:
        """No sessions: name the resource connection's server thread (the history's
        `session`)."""
        return f"mariadb-{self.conn.thread_id()}" if self.conn is not None else "mariadb-none"

    # -- the protected resource -------------------------------------------------------------
    def create(self, path: str, value: bytes = b"") -> str:
        cur = self._execute(
            "INSERT IGNORE INTO zkjepsen_kv (path, data) VALUES (%s, %s)", (path, value.decode())
        )
        if cur.rowcount != 1:
            raise NodeExistsError()
        return path

    def get(self, path: str) -> tuple[bytes | None, Stat]:
        row = self._execute(
            "SELECT data, version FROM zkjepsen_kv WHERE path = %s", (path,)
        ).fetchone()
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
        """The fencing token of an acquisition: the next version of one global counter row
        (a later acquisition always draws a larger one, while the server keeps its commits)."""
        return int(self._execute(TOKEN_SQL).lastrowid)

    # -- helpers ----------------------------------------------------------------------------
    def _set(self, path: str, data: bytes, version: int, token: int | None, fenced: bool) -> Stat:
        args = {
            "path": path,
            "data": data.decode(),
            "version": int(version),
            "fenced": 1 if fenced else 0,
            "token": int(token or 0),
        }
        cur = self._execute(SET_SQL, args)
        if cur.rowcount == 1:
            return Stat(int(cur.lastrowid))
        # Refused (definitely: the UPDATE matched nothing); say why, for the history.
        now = self._execute(
            "SELECT version, top_token FROM zkjepsen_kv WHERE path = %s", (path,)
        ).fetchone()
        if now is None:
            raise NoNodeError()
        if fenced and int(now[1]) > int(token or 0):
            raise Fenced(f"token {token or 0} < stored {now[1]}")
        raise BadVersion(f"version {now[0]}, not {version}")

    def _execute(self, sql: str, args: Any = None) -> Any:
        if self.conn is None or not self.conn.open:
            self.conn = self.connect("data")
        try:
            cur = self.conn.cursor()
            cur.execute(sql, args)
            return cur
        except Exception:
            self._drop()  # its state is unknown: the next statement gets a new connection
            raise
