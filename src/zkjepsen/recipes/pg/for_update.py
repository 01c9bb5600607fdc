"""`pg-for-update`: the lock is a row, held by `SELECT ... FOR UPDATE` in an open transaction.

Source: seed 003 (a comparison of database, Redis and ZooKeeper locks): begin a transaction,
`SELECT ... FOR UPDATE NOWAIT` the lock's row; if it is taken, roll back, sleep 1 s and try
again, 4 tries in all; hold the lock for as long as the transaction stays open; release by
committing. The fencing token is drawn from a sequence once the row is ours.

Expected flaw: the lock is exactly as alive as the holder's transaction, and the holder cannot
see it die. A holder whose connection is cut keeps the row locked until the server notices the
dead connection (TCP keepalive / `tcp_user_timeout`; with Linux's defaults, 2 hours), and once
the server has ended the transaction (that, `pg_terminate_backend`, or
`idle_in_transaction_session_timeout`) the holder still believes it holds until its commit
fails: `holding()` stays true, so the application goes on writing the protected resource while
another client holds the row. A frozen holder (paused process) keeps the lock for as long as it
is frozen: its kernel still answers the server's keepalives.
"""

from __future__ import annotations

import time

from zkjepsen.backends.session import close_quietly
from zkjepsen.recipes.base import Token
from zkjepsen.recipes.pg.base import ConnectionLock, token_for

TRIES = 4  # seed 003's retry loop: 4 tries ...
RETRY_SLEEP_S = 1.0  # ... 1 s apart


class ForUpdateLock(ConnectionLock):
    def on_connect(self) -> None:
        self.conn.execute(
            "INSERT INTO zkjepsen_lock_rows (name) VALUES (%s) ON CONFLICT DO NOTHING",
            (self.path,),
        )
        # From here the row lock's transaction stays open between statements (psycopg begins
        # one at the first statement; commit or rollback ends it).
        self.conn.autocommit = False

    def acquire(self, timeout: float | None) -> Token | None:
        # here, not at the top: a service's client library, loaded by runs of that service
        import psycopg.errors as pe

        if not self.connected():
            return None  # no connection: certainly not acquired
        deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
        for attempt in range(TRIES):
            try:
                self.conn.execute(
                    "SELECT name FROM zkjepsen_lock_rows WHERE name = %s FOR UPDATE NOWAIT",
                    (self.path,),
                ).fetchone()
            except pe.LockNotAvailable:
                self.conn.rollback()
                if attempt == TRIES - 1 or time.monotonic() + RETRY_SLEEP_S > deadline:
                    return None
                time.sleep(RETRY_SLEEP_S)
                continue
            self.held = True
            return token_for(self.session, self.path)
        return None

    def release(self) -> None:
        self.held = False  # whatever the commit says, the application stops believing
        if self.conn is not None:
            self.conn.commit()  # ends the transaction: the row lock goes with it

    def holding(self) -> bool:
        return self.held

    def close(self) -> None:
        close_quietly(self.conn)  # the server rolls an open transaction back
