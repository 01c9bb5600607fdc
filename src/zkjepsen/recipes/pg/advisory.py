"""`pg-advisory`: PostgreSQL's session-scoped advisory lock, `pg_advisory_lock(key)`.

Source: seed 003's database locks (a comparison of database, Redis and ZooKeeper locks)
and the PostgreSQL manual (13.3.5 Advisory Locks): `SELECT pg_advisory_lock(key)` blocks
until the lock is free and holds it until `pg_advisory_unlock(key)` or the end of the session.
The key is `hashtext(lock name)`; the wait is bounded with `lock_timeout` (which advisory lock
waits obey), so a timeout is a definite "not acquired". The fencing token is drawn from a
sequence once the lock is ours.

Expected flaw: the lock is exactly as alive as the holder's session, and the holder cannot see
the session die. A holder whose connection is cut keeps the lock until the server notices the
dead connection (TCP keepalive / `tcp_user_timeout`; with Linux's defaults, 2 hours); after the
server drops the session, the holder still believes it holds (`holding()` is a flag) and goes on
writing while another client holds the lock. No transaction is open while it holds, so
`idle_in_transaction_session_timeout` never ends it. The lock is re-entrant per session: a
second acquire on the same session succeeds at once (the driver never does that).
"""

from __future__ import annotations

from zkjepsen.backends.session import close_quietly
from zkjepsen.recipes.base import Token
from zkjepsen.recipes.pg.base import ConnectionLock, token_for


class AdvisoryLock(ConnectionLock):
    """Its connection is autocommit: the session, not a transaction, holds the lock."""

    def acquire(self, timeout: float | None) -> Token | None:
        # here, not at the top: a service's client library, loaded by runs of that service
        import psycopg.errors as pe

        if not self.connected():
            return None  # no connection: certainly not acquired

        wait_ms = max(1, int((timeout if timeout is not None else 3600) * 1000))
        self.conn.execute(f"SET lock_timeout = {wait_ms}")
        try:
            self.conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (self.path,)).fetchone()
        except pe.LockNotAvailable:
            return None
        self.held = True
        return token_for(self.session, self.path)

    def release(self) -> None:
        self.held = False
        if self.conn is not None:
            self.conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (self.path,)).fetchone()

    def holding(self) -> bool:
        return self.held

    def close(self) -> None:
        close_quietly(self.conn)  # the session's advisory locks end with it
