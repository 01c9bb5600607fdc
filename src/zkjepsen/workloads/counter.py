"""`counter`: lock-protected read-modify-write increments of one shared znode, then a final read.

Each client loops: acquire, `add 1` (read the counter znode, write value+1 the way `resource`
says: unguarded blind set, fenced transaction, or token compare-and-set on the version read),
release. If two clients hold at once and both read n, one increment is lost: the final read
falls short of the acknowledged adds (atomicity broken). `final` reads the counter once more
(client 0, after the faults are healed).

Params: lock_path, counter_path, resource, hold_s, think_s, acquire_timeout_s, retry_writes
(default true: the application retries its writes with kazoo's KazooRetry, see common.py).
Checkers: counter (bounds + lost updates), lock (belief overlap).
"""

from __future__ import annotations

import time
from typing import Any

from zkjepsen.checker.counter import CounterChecker
from zkjepsen.checker.exercised import Exercised
from zkjepsen.checker.liveness import LivenessChecker
from zkjepsen.checker.lock import LockChecker
from zkjepsen.recipes.base import param
from zkjepsen.workloads.common import (
    ensure,
    error_name,
    read_resource,
    resource_mode,
)
from zkjepsen.workloads.inprocess import run_lock_loop

FINAL_RETRY_S = 40.0  # within the runner's 60 s bound on the final reads (a restart: 15 s)


class CounterWorkload:
    name = "counter"
    description = "lock-protected read-modify-write increments; final read (lost updates)"

    @staticmethod
    def _paths(params: dict[str, Any]) -> tuple[str, str]:
        return (
            param(params, "lock_path", "/zkjepsen/lock"),
            param(params, "counter_path", "/zkjepsen/counter"),
        )

    def setup(self, ctx: Any) -> None:
        lock, counter = self._paths(ctx.params)
        resource_mode(ctx.params)
        ctx.session.ensure_path(lock)
        ensure(ctx.session, counter, b'{"value": 0}')

    def run_client(self, ctx: Any) -> None:

        run_lock_loop(ctx, self.name)

    def final(self, ctx: Any) -> None:
        _, counter = self._paths(ctx.params)
        op = ctx.invoke("read", key=counter)
        # Retried for a while: a power loss of every server expires the runner's own session
        # too, and its client takes a new one only after (a read has no effect: safe to retry).
        # A session not connected is restarted before each try (kazoo: a new one, which waits
        # up to 15 s to connect): kazoo's own reconnects back off to minutes once the servers
        # refused it for a while (they refuse a client that has seen a zxid they lost), and a
        # read queued on such a session waits for that backoff.
        give_up = time.monotonic() + FINAL_RETRY_S
        for _ in range(1000):
            if not getattr(ctx.session, "connected", True) and hasattr(ctx.session, "restart"):
                _restart(ctx.session)
            try:
                ctx.session.sync(counter)
                doc, _ = read_resource(ctx.session, counter)
                break
            except Exception as e:  # noqa: BLE001 - a read has no effect: fail
                if time.monotonic() >= give_up:
                    op.fail(error=error_name(e))
                    return
                time.sleep(1.0)
        op.ok(int(doc.get("value", 0)))

    def checkers(self, params: dict[str, Any]) -> dict[str, Any]:

        return {
            "counter": CounterChecker(),
            "lock": LockChecker(fail_on=("belief",)),
            "liveness": LivenessChecker(),
            "exercised": Exercised(
                need=("acquire", "add", "read"), per_client=("acquire",), release=("release",)
            ),
        }


def _restart(session: Any) -> None:
    """A new session (kazoo: stop, then start, which waits up to 15 s to connect); one that
    cannot connect yet is left for the next try."""
    try:
        session.restart()
    except Exception:  # noqa: BLE001 - no server serves yet: the next try says
        pass


COUNTER = CounterWorkload()
