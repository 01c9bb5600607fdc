"""`pg-terminate-holder`: the PostgreSQL server ends the lock holder's connection.

`SELECT pg_terminate_backend(pid)` for the backends whose `application_name` is the target
client's lock connection (`zkjepsen-client-<N>-lock`, set by recipes/pg/base.py), run with psql
in the server container. It is what an operator's `pg_terminate_backend`, a failover or the
server's own timeouts (`idle_in_transaction_session_timeout`, a keepalive verdict) do to a
holder: its transaction or session ends on the server at once, the client is not told, and the
lock is free for the next client while the old holder still believes it holds. Nothing to undo:
the client's next statement on that connection fails, and the driver opens a new one.

Only meaningful on the postgres backend (it needs `psql` in the server container). It lands
when PostgreSQL ended a backend (`terminated`: how many pg_terminate_backend returned true for;
faultkinds/landing.py): a client with no lock connection open is a miss.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import ClassVar

from zkjepsen.nemesis import NemesisError
from zkjepsen.nemesis.family import Detail, FaultFamily, Params
from zkjepsen.nemesis.process import note_holding
from zkjepsen.nemesis.targets import NemesisContext, resolve_client

SQL = (
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
    "WHERE application_name = 'zkjepsen-client-{n}-lock'"
)


@dataclass(frozen=True)
class TerminateHolder:
    family: ClassVar[FaultFamily]

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        client, how = resolve_client(ctx, target, rng)
        return [client], {"chosen": how}

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:

        primary = ctx.backend.nodes[0]
        argv = ["psql", "-h", "/tmp", "-U", "postgres", "-X", "-qAt", "-c"]
        code, out = ctx.backend.exec(primary, [*argv, SQL.format(n=int(targets[0].lstrip("c")))])
        if code != 0:
            raise NemesisError(
                f"pg_terminate_backend on {primary.name} failed ({code}): {out.strip()[-200:]} "
                "(pg-terminate-holder needs the postgres backend)"
            )
        detail["terminated"] = int(out.strip() or 0)
        note_holding(ctx, targets[0], detail)

    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        pass  # the connection is gone for good; the client reconnects on its own


def heal(ctx: NemesisContext, everything: bool = False) -> list[str]:
    """Nothing stays to heal: a terminated connection is gone for good at once, and the client
    opens a new one on its own."""
    return []


PG = FaultFamily("pg", heal=heal, rank=4)
TerminateHolder.family = PG
