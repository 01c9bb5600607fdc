"""`pg-insert`: the lock is a row that exists; take it by inserting it, give it up by deleting it.

Source: seed 003's database locks (a comparison of database, Redis and ZooKeeper locks):
`INSERT INTO locks (name, owner, ...)` on a table whose primary key is the lock name;
a unique violation means somebody holds it, so poll (every 100 ms here) until the timeout;
release with `DELETE ... WHERE name = ? AND owner = ?`. The fencing token is drawn from the
sequence in the same insert. Each statement commits on its own: the lock outlives the
connection that took it.

Expected flaw: nothing ever expires the row. A holder that crashes (or is killed, or is cut off
and never comes back) leaves the row behind and every other client waits forever: no overlap,
but no progress either (liveness). A holder cut off from the server keeps the lock through the
cut, however long, and its belief stays true, so it is not split; the others just stall.
"""

from __future__ import annotations

import os
import time

from zkjepsen.backends.session import close_quietly
from zkjepsen.recipes.base import Token, service_token
from zkjepsen.recipes.pg.base import ConnectionLock

POLL_S = 0.1


class InsertLock(ConnectionLock):
    """Its connection is autocommit: the row is the lock."""

    def setup(self) -> None:
        super().setup()
        self.owner = f"{self.identifier}-{os.urandom(6).hex()}"  # this lock object, no other

    def acquire(self, timeout: float | None) -> Token | None:
        # here, not at the top: a service's client library, loaded by runs of that service
        import psycopg.errors as pe

        if not self.connected():
            return None  # no connection: certainly not acquired

        deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
        while True:
            try:
                row = self.conn.execute(
                    "INSERT INTO zkjepsen_lock_claims (name, owner, token) "
                    "VALUES (%s, %s, nextval('zkjepsen_fence')) RETURNING token",
                    (self.path, self.owner),
                ).fetchone()
            except pe.UniqueViolation:
                if time.monotonic() + POLL_S > deadline:
                    return None
                time.sleep(POLL_S)
                continue
            self.held = True
            token = int(row[0])
            return service_token(self.path, token)

    def release(self) -> None:
        self.held = False
        if self.conn is not None:
            self.conn.execute(
                "DELETE FROM zkjepsen_lock_claims WHERE name = %s AND owner = %s",
                (self.path, self.owner),
            )

    def holding(self) -> bool:
        return self.held

    def close(self) -> None:
        """Remove our own leftover row (an insert whose answer was lost may have committed),
        as a ZooKeeper client removes its own leftover node; never another owner's."""
        try:
            if self.conn is not None:
                self.conn.execute(
                    "DELETE FROM zkjepsen_lock_claims WHERE name = %s AND owner = %s",
                    (self.path, self.owner),
                )
        except Exception:  # noqa: BLE001 - connection gone: the row stays, as after a crash
            pass
        close_quietly(self.conn)
