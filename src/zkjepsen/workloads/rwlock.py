"""`rwlock`: readers share, writers exclude. Each acquisition picks a mode (read with probability
`read_frac`); the acquire's invoke and ok values carry `"mode"`, so the lock checker lets
read holds overlap each other and nothing else. Readers read the resource (`f: "read"`),
writers write it with their token (`f: "write"`, as in `lock`).

The recipe must offer `with_mode(mode)` (the `rwlock` recipe does); a plain mutex is used for
both modes (stricter than needed, still correct).
Params: lock_path, resource_path, resource, hold_s, think_s, read_frac, acquire_timeout_s.
Checkers: lock (mode-aware belief + effect overlap), fencing.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.recipes.base import param
from zkjepsen.workloads.common import (
    acquire_op,
    discard,
    error_name,
    read_resource,
    release_op,
    resource_mode,
)
from zkjepsen.workloads.lock import LockWorkload


class RWLockWorkload(LockWorkload):
    def __init__(self) -> None:
        super().__init__("rwlock", default_path="/zkjepsen/shared_lock")
        self.description = "read/write lock: readers share, writers exclude (mode in values)"
        self.multi_step = False  # a writer writes one step

    def writes_resource(self, params: dict[str, Any]) -> bool:
        return param(params, "read_frac", 0.6) < 1  # only readers: nothing written

    def run_client(self, ctx: Any) -> None:
        from zkjepsen.client.loop import LockLoop
        from zkjepsen.workloads.inprocess import InProcessLockClient

        p = ctx.params
        lock, resource = self._paths(p)
        resource_mode(p)  # a bad mode fails here; the lock section reads it again
        hold_s, think_s = param(p, "hold_s", 0.05), param(p, "think_s", 0.05)
        read_frac = param(p, "read_frac", 0.6)
        timeout = param(p, "acquire_timeout_s", 10.0)
        recipes: dict[str, Any] = {}
        while ctx.running():
            m = "read" if ctx.rng.random() < read_frac else "write"
            if m not in recipes:
                try:
                    base = ctx.make_recipe(lock)
                    recipes[m] = base.with_mode(m) if hasattr(base, "with_mode") else base
                except Exception as e:  # noqa: BLE001
                    ctx.event("recipe-error", f"{error_name(e)}: {e}")
                    ctx.sleep(0.5)
                    continue
            recipe = recipes[m]
            tok, usable = acquire_op(ctx, recipe, lock, timeout, extra={"mode": m})
            if tok is not None:
                hold = ctx.rng.uniform(0, 2 * hold_s)
                if m == "write":
                    writer = InProcessLockClient(ctx, lock)
                    writer.recipe = recipe  # the lock section of `lock`, one step
                    LockLoop(ctx, writer, "lock").lock_section(tok.to_value(), 1, hold, None)
                else:
                    op = ctx.invoke("read", key=resource)
                    try:
                        doc, _ = read_resource(ctx.session, resource)
                    except Exception as e:  # noqa: BLE001 - a read has no effect
                        op.fail(error=error_name(e))
                    else:
                        op.ok(doc)
                    ctx.sleep(hold)
                usable = release_op(ctx, recipe, lock, extra={"mode": m})
            if not usable:
                discard(recipes.pop(m))
            ctx.sleep(ctx.rng.uniform(0, 2 * think_s))
        for r in recipes.values():
            discard(r)


RWLOCK = RWLockWorkload()
