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

from typing import Any

from zkjepsen.recipes.base import param
from zkjepsen.workloads.common import (
    ensure,
    error_name,
    is_definite,
    lock_loop,
    read_resource,
    resource_mode,
    write_resource,
)


def add_one(ctx: Any, tok: Any, counter: str, mode: str, hold: float) -> None:
    op = ctx.invoke("add", key=counter, value=1)
    try:
        doc, stat = read_resource(ctx.zk, counter)
    except Exception as e:  # noqa: BLE001 - nothing written yet: certainly no effect
        op.fail(1, error=error_name(e))
        return
    ctx.sleep(hold)  # the window in which another holder's increment can be lost
    value = int(doc.get("value", 0)) + 1
    try:
        # token mode: conditional on the version read, so the check covers the whole update
        write_resource(
            ctx.zk,
            counter,
            {"value": value, "client": ctx.client},
            tok,
            mode,
            version=stat.version if mode == "token" else -1,
            retry=param(ctx.params, "retry_writes", True),
        )
    except Exception as e:  # noqa: BLE001
        if is_definite(e):
            op.fail(1, error=error_name(e))
        else:
            op.info(1, error=error_name(e))
        return
    op.ok(1, read=value - 1)  # what it read: two adds that read the same n lost one


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
        ctx.zk.ensure_path(lock)
        ensure(ctx.zk, counter, b'{"value": 0}')

    def run_client(self, ctx: Any) -> None:
        p = ctx.params
        lock, counter = self._paths(p)
        mode = resource_mode(p)
        # A mean hold of 0.2 s: a real critical section, and long enough that a fault aimed at
        # the holder (docker pause takes ~0.1 s to land) usually finds it still holding.
        hold_s, think_s = param(p, "hold_s", 0.2), param(p, "think_s", 0.05)
        timeout = param(p, "acquire_timeout_s", 10.0)

        def critical(recipe: Any, tok: Any) -> None:
            if recipe.holding():
                add_one(ctx, tok, counter, mode, ctx.rng.uniform(0, 2 * hold_s))
            else:
                ctx.event("abandon", {"token": tok.token, "after_writes": 0})

        lock_loop(ctx, lock, timeout, think_s, critical)

    def final(self, ctx: Any) -> None:
        _, counter = self._paths(ctx.params)
        op = ctx.invoke("read", key=counter)
        try:
            ctx.zk.sync(counter)
            doc, _ = read_resource(ctx.zk, counter)
        except Exception as e:  # noqa: BLE001 - a read has no effect: fail
            op.fail(error=error_name(e))
            return
        op.ok(int(doc.get("value", 0)))

    def checkers(self, params: dict[str, Any]) -> dict[str, Any]:
        from zkjepsen.checker.counter import CounterChecker
        from zkjepsen.checker.exercised import Exercised
        from zkjepsen.checker.liveness import LivenessChecker
        from zkjepsen.checker.lock import LockChecker

        return {
            "counter": CounterChecker(),
            "lock": LockChecker(fail_on=("belief",)),
            "liveness": LivenessChecker(),
            "exercised": Exercised(
                need=("acquire", "add", "read"), per_client=("acquire",), release=("release",)
            ),
        }


COUNTER = CounterWorkload()
