"""What the PostgreSQL locks share: each lock object owns its own connection (the lock lives
and dies with it: a row lock with its transaction, an advisory lock with its session), opened
by the client session (backends/postgres/session.py) with the same keepalive settings, and named
`zkjepsen-<identifier>-lock` in pg_stat_activity so a fault can find it (nemesis/pg.py). The
application's resource writes go through the session's own connection, as an application that
guards an outside resource does.

Runs inside the client containers: stdlib and psycopg 3.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.recipes.base import RecipeBase, Token, service_token


def lock_connection(session: Any, identifier: str) -> Any | None:
    """The lock's own connection, or None when the server cannot be reached right now: the
    acquire that needed it then certainly acquired nothing (a definite "not acquired", as a
    timeout), instead of a lock object that cannot even be made (a recipe-error)."""
    # here, not at the top: a service's client library, loaded by runs of that service
    import psycopg

    try:
        return session.connect(f"{identifier or 'anon'}-lock")
    except psycopg.OperationalError:
        return None


class ConnectionLock(RecipeBase):
    """A lock held through a PostgreSQL connection of its own (`conn`), opened by the first
    acquire (`connected`); `held`: whether this object believes it holds."""

    def setup(self) -> None:
        self.conn: Any = None
        self.held = False

    def connected(self) -> bool:
        """Whether the lock has its connection, opening it (and `on_connect`) the first time;
        False: the server cannot be reached right now, so the acquire certainly got nothing."""
        if self.conn is None:
            self.conn = lock_connection(self.session, self.identifier)
            if self.conn is not None:
                self.on_connect()
        return self.conn is not None

    def on_connect(self) -> None:
        """What the lock prepares on its new connection (nothing by default)."""


def token_for(session: Any, path: str) -> Token:
    """The fencing token of an acquisition, drawn right after it (client/services)."""
    token = session.next_token(path)
    return service_token(path, token)
