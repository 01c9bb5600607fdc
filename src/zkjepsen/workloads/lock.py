"""`lock` (and `election`): acquire -> critical section writing a protected resource -> release.

Each client loops: acquire (timeout `acquire_timeout_s`), then `writes` writes to the resource
znode spread over a random hold time (mean `hold_s`), release, think (mean `think_s`). The
resource is written `unguarded`, `fenced` or `token` (param `resource`; see common.py). Before
each write the client asks the recipe whether it still holds (`holding()`): kazoo's Lock always
says yes, a careful application stops at SUSPENDED/LOST (an `abandon` event).

Multi-step updates (the paper lock's flaw; see multistep.py): every write but the last stores
`state: "half"`, the last `state: "done"` (with `step`/`steps`). A holder first reads the
resource (`f: "read"`, recorded with what it found); one that finds "half" also records a
`half-done-seen` event. With `ready_file` the update runs under the ready-file protocol. The gap
between the first and the second step is `hold_s` with `hold_fixed` (widen it so a fault aimed at
the holder lands inside it).

Params: lock_path, resource_path, resource, hold_s, hold_fixed, think_s, writes,
acquire_timeout_s, retry_writes (default true: writes go through KazooRetry, see common.py),
ready_file (default false), ready_path, nested (default false: see `nested_section`).
Checkers: lock (belief + effect overlap), fencing, liveness; atomicity when writes > 1.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.recipes.base import param
from zkjepsen.workloads.common import (
    ensure,
    error_name,
    is_definite,
    lock_loop,
    resource_mode,
    write_resource,
)
from zkjepsen.workloads.multistep import read_state, ready_path, set_ready


def critical_section(
    ctx: Any,
    recipe: Any,
    tok: Any,
    resource: str,
    mode: str,
    writes: int,
    hold: float,
    ready: str | None = None,
) -> None:
    """The holder's work: read the resource, then `writes` steps over `hold` seconds (the
    ready-file protocol around them when `ready` names the ready node), stopping once it stops
    holding."""
    if writes:
        seen = read_state(ctx, tok, resource, ready)
        if seen is not None and seen.get("state") == "half":
            ctx.event(
                "half-done-seen",
                {
                    "token": tok.token,
                    "left_by": seen.get("writer_token"),
                    "ready": seen.get("ready"),
                },
            )
    else:
        ctx.sleep(hold)
    if ready is not None and writes and not set_ready(ctx, ready, False, tok.token):
        ctx.event("abandon", {"token": tok.token, "after_writes": 0})
        return
    for i in range(writes):
        if i:
            ctx.sleep(hold / max(1, writes - 1))
        if not recipe.holding():
            ctx.event("abandon", {"token": tok.token, "after_writes": i})
            return
        value = {"token": tok.token, "step": i + 1, "steps": writes}
        op = ctx.invoke("write", key=resource, value=value)
        doc = {
            "state": "done" if i == writes - 1 else "half",
            "client": ctx.client,
            "step": i + 1,
            "steps": writes,
        }
        try:
            stat = write_resource(
                ctx.zk, resource, doc, tok, mode, retry=param(ctx.params, "retry_writes", True)
            )
        except Exception as e:  # noqa: BLE001
            if is_definite(e):
                op.fail(value, error=f"{error_name(e)}: {e}" if str(e) else error_name(e))
            else:
                op.info(value, error=error_name(e))
            if ready is not None:
                return  # the update did not complete: `ready` stays absent
            continue
        # The resource's version after our write: the order in which it accepted writes.
        version = getattr(stat, "version", None)
        op.ok(value if version is None else {**value, "version": version})
    if ready is not None and writes and recipe.holding():
        set_ready(ctx, ready, True, tok.token)


def nested_section(
    ctx: Any, recipe: Any, lock: str, timeout: float, resource: str, mode: str
) -> None:
    """A helper the holder calls that takes the lock itself (`with lock:` inside `with lock:`):
    acquire again, one write, release that inner level. The outer level still believes it
    holds afterwards (kazoo issue 291: a release that frees the lock under the outer holder
    leaves the rest of its critical section unprotected). Recorded as `acquire-nested` /
    `release-nested`, which the lock checkers do not count as holds of their own."""
    op = ctx.invoke("acquire-nested", key=lock)
    try:
        inner = recipe.acquire(timeout)
    except Exception as e:  # noqa: BLE001 - the inner level failed; the outer goes on
        (op.fail if is_definite(e) else op.info)(None, error=error_name(e))
        return
    if inner is None:
        op.fail(None, error="timeout")  # a lock that is not re-entrant (kazoo today) ends here
        return
    op.ok({"token": inner.token})
    critical_section(ctx, recipe, inner, resource, mode, 1, 0.0)
    op = ctx.invoke("release-nested", key=lock)
    try:
        recipe.release()
    except Exception as e:  # noqa: BLE001
        op.info(None, error=error_name(e))
        return
    op.ok(None)


class LockWorkload:
    def __init__(
        self,
        name: str = "lock",
        acquire_f: str = "acquire",
        release_f: str = "release",
        default_path: str = "/zkjepsen/lock",
    ) -> None:
        self.name = name
        self.multi_step = True  # updates of `writes` steps (the rwlock writes one)
        self.acquire_f, self.release_f = acquire_f, release_f
        self.default_path = default_path
        self.description = (
            "acquire -> write a protected resource (unguarded/fenced/token) -> release"
            if name == "lock"
            else "stand for election -> lead (write the resource) -> resign; at most one leader"
        )

    def _paths(self, params: dict[str, Any]) -> tuple[str, str]:
        return (
            param(params, "lock_path", self.default_path),
            param(params, "resource_path", "/zkjepsen/resource"),
        )

    def setup(self, ctx: Any) -> None:
        lock, resource = self._paths(ctx.params)
        resource_mode(ctx.params)  # a bad mode fails here, on the host, not in every client
        ctx.zk.ensure_path(lock)
        ensure(ctx.zk, resource, b"{}")

    def run_client(self, ctx: Any) -> None:
        p = ctx.params
        lock, resource = self._paths(p)
        mode = resource_mode(p)
        # A mean hold of 0.2 s: a real critical section, and long enough that a fault aimed at
        # the holder (docker pause takes ~0.1 s to land) usually finds it still holding.
        hold_s, think_s = param(p, "hold_s", 0.2), param(p, "think_s", 0.05)
        writes = max(0, param(p, "writes", 2))  # 0: an empty critical section (benchmarks)
        fixed = param(p, "hold_fixed", False)  # hold exactly hold_s (scripted scenarios)
        timeout = param(p, "acquire_timeout_s", 10.0)
        ready = ready_path(p, resource) if writes > 1 else None
        nested = param(p, "nested", False)

        def critical(recipe: Any, tok: Any) -> None:
            hold = hold_s if fixed else ctx.rng.uniform(0, 2 * hold_s)
            if nested:
                nested_section(ctx, recipe, lock, timeout, resource, mode)
            critical_section(ctx, recipe, tok, resource, mode, writes, hold, ready)

        lock_loop(ctx, lock, timeout, think_s, critical, self.acquire_f, self.release_f)

    def final(self, ctx: Any) -> None:
        pass

    def writes_resource(self, params: dict[str, Any]) -> bool:
        """Whether holders write the protected resource (`writes` 0: an empty section)."""
        return param(params, "writes", 2) > 0

    def checkers(self, params: dict[str, Any]) -> dict[str, Any]:
        from zkjepsen.checker.exercised import Exercised
        from zkjepsen.checker.fencing import FencingChecker
        from zkjepsen.checker.liveness import LivenessChecker
        from zkjepsen.checker.lock import LockChecker

        names = dict(acquire=(self.acquire_f,), release=(self.release_f,))
        checkers: dict[str, Any] = {
            "lock": LockChecker(**names),
            "liveness": LivenessChecker(acquire=(self.acquire_f,)),
            # every client that asked for the lock got it at least once (or starved cleanly),
            # no errors, and releases that worked (see checker/fairness.py)
            "exercised": Exercised(
                need=(self.acquire_f,), per_client=(self.acquire_f,), release=(self.release_f,)
            ),
        }
        if self.writes_resource(params):  # no write, no order to judge: fencing says unknown
            checkers["fencing"] = FencingChecker(**names)
        if self.multi_step and param(params, "writes", 2) > 1:  # judge the update's atomicity
            from zkjepsen.checker.atomicity import AtomicityChecker

            checkers["atomicity"] = AtomicityChecker(**names)
        return checkers


LOCK = LockWorkload()
ELECTION = LockWorkload("election", "elected", "resign", "/zkjepsen/master_election")
