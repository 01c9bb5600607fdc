"""`mariadb-get-lock`: MariaDB's named user-level lock, `GET_LOCK(name, timeout)`.

Source: the MariaDB manual (GET_LOCK, RELEASE_LOCK; MySQL's are the same functions), as tooz's
MySQL driver and many applications use it: `SELECT GET_LOCK(name, timeout)` waits up to
`timeout` seconds and answers 1 (acquired), 0 (timed out) or NULL (an error, e.g. the wait was
killed); `SELECT RELEASE_LOCK(name)` gives it up. The lock belongs to the connection that took
it and ends with it. Since MariaDB 10.0.2 a connection may hold several locks and a second
GET_LOCK of the same name on the same connection succeeds at once (a count; the driver never
nests). The fencing token is the row version of a counter table, drawn once the lock is ours
(backends/mariadb/session.py: `UPDATE ... SET n = LAST_INSERT_ID(n + 1)`).

Expected flaw: the lock is exactly as alive as the holder's connection, and the holder cannot
see the connection die. A holder whose connection is cut keeps the lock until the server
notices (its TCP keepalives; with Linux's defaults and `wait_timeout`, hours); once the server
has dropped the connection, the lock is freed silently, the next waiter gets it, and the holder
still believes it holds (`holding()` is a flag: nothing tells it) and goes on writing. Like
PostgreSQL's session advisory lock (recipes/pg/advisory.py). A frozen holder keeps the lock for
as long as it is frozen: its kernel still answers the server's keepalives.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.backends.session import close_quietly
from zkjepsen.recipes.base import RecipeBase, Token, service_token

ANSWER_MARGIN_S = 5.0  # GET_LOCK answers within its wait; allow this much beyond it
FOREVER_S = 3600.0  # an acquire without a timeout waits this long at a time


class GetLock(RecipeBase):
    """The lock's own autocommit connection (`conn`), opened by the first acquire; `held`:
    whether this object believes it holds."""

    def setup(self) -> None:
        self.conn: Any = None
        self.held = False

    def connected(self) -> bool:
        """Whether the lock has its connection, opening it the first time; False: the server
        cannot be reached right now, so the acquire certainly got nothing."""
        # here, not at the top: a service's client library, loaded by runs of that service
        import pymysql

        if self.conn is None:
            try:
                self.conn = self.session.connect(f"{self.identifier or 'anon'}-lock")
            except pymysql.err.OperationalError:
                return False
        return True

    def acquire(self, timeout: float | None) -> Token | None:
        if not self.connected():
            return None  # no connection: certainly not acquired
        wait = float(timeout if timeout is not None else FOREVER_S)
        read_timeout = self.conn._read_timeout  # PyMySQL reads it before each answer
        self.conn._read_timeout = wait + ANSWER_MARGIN_S  # the answer takes up to the wait
        try:
            with self.conn.cursor() as cur:
                cur.execute("SELECT GET_LOCK(%s, %s)", (self.path, wait))
                (got,) = cur.fetchone()
        finally:
            self.conn._read_timeout = read_timeout
        if got != 1:
            return None  # 0: timed out; NULL: the wait ended in an error; either way not ours
        self.held = True
        return service_token(self.path, self.session.next_token(self.path))

    def release(self) -> None:
        self.held = False
        if self.conn is not None:
            with self.conn.cursor() as cur:
                cur.execute("SELECT RELEASE_LOCK(%s)", (self.path,))

    def holding(self) -> bool:
        return self.held

    def close(self) -> None:
        close_quietly(self.conn)  # the connection's locks end with it
