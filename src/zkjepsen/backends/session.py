"""Client sessions of the lock services other than ZooKeeper (Redis, PostgreSQL).

A service session is shaped like the small part of kazoo's KazooClient that the lock-shaped
workloads and the Python driver use, so the same code drives every backend:
`start(timeout)`, `stop()`, `close()`, `ensure_path(path)`, `create(path, value)` (kazoo's
NodeExistsError when it exists), `get(path) -> (bytes, stat)` (`stat.version` counts the
accepted writes), `sync(path)`; and the protected resource's writes:
`set(path, data, version=-1)` and `fenced_set(path, data, version, token)`.

The convention that lets the ZooKeeper checkers judge every backend unchanged:
- the lock's token is a number from the service (Redis `INCR` of a per-lock counter, a
  PostgreSQL sequence) drawn by the holder right after it acquires: it grows in acquisition
  order, and no two acquisitions share one;
- an `ok` acquire reports `{"token": t, "node": f"{lock_path}/{t:010d}"}` (seq = t);
- the protected resource lives in the service itself, beside the lock, with a version that
  counts its writes; a *fenced* write is refused (`Fenced`, a definite failure) when its token is
  lower than the highest token the resource has accepted (the resource checks the token, as in
  Kleppmann's fencing), atomically with the write (a Lua script, a transaction). An unguarded
  write is a plain conditional set. `resource=token` needs nothing more: the recorder composes
  it from `get` and a conditional `set`.

`session(init)` picks the session class for the backend family of the recipe.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

# backend family -> "module:Class" of its client session (imported only when used)
SESSIONS = {
    "redis": "zkjepsen.backends.redis.session:RedisSession",
    "postgres": "zkjepsen.backends.postgres.session:PostgresSession",
    "etcd": "zkjepsen.backends.etcd.session:EtcdSession",
    "mariadb": "zkjepsen.backends.mariadb.session:MariaDBSession",
    "memcached": "zkjepsen.backends.memcached.session:MemcachedSession",
}


class Fenced(Exception):
    """The resource refused a fenced write: its token is below the highest it accepted."""


def close_quietly(conn: Any) -> None:
    """Close a service connection on the way out (stop, or after an error left its state
    unknown): nothing useful can be done if closing fails, so it is not an error."""
    if conn is None:
        return
    try:
        conn.close()
    except Exception:  # noqa: BLE001 - closing on the way out
        pass


class ConnectionSession:
    """The kazoo-shaped lifecycle of a session that is one connection to one server
    (PostgreSQL, MariaDB): `start` connects the resource's connection (retried until its
    deadline: the server may still be starting), `stop`/`close` drop it. A subclass says
    `connect(role)`; rows need no parents and one server needs no sync."""

    conn: Any = None

    def connect(self, role: str) -> Any:
        raise NotImplementedError

    def start(self, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.conn = self.connect("data")
                return
            except Exception:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        self._drop()

    def close(self) -> None:
        self._drop()

    def ensure_path(self, path: str) -> None:
        pass  # rows need no parents

    def sync(self, path: str) -> None:
        pass  # one server: every read sees every committed write

    def _drop(self) -> None:
        conn, self.conn = self.conn, None
        close_quietly(conn)


class BadVersion(Exception):
    """A conditional write found another version: nothing was written."""


class Stat:
    """What `get` returns beside the data (kazoo's ZnodeStat has more; the workloads read
    only `version`)."""

    def __init__(self, version: int) -> None:
        self.version = version


def session_class(family: str) -> Any:
    target = SESSIONS.get(family)
    if target is None:
        raise ValueError(f"no client session for backend family {family!r}")
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def lock_node(lock_path: str, token: int) -> str:
    """The `node` of an acquisition on a lock service: the lock path and the token, so the
    history's `seq` (parsed from a 10-digit suffix) is the token."""
    return f"{lock_path}/{token:010d}"
