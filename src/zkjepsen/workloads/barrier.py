"""`barrier`: members meet at a barrier round after round (the scenarios article's barrier).

Every client is a member. Round r is the node `<barrier_path>/round-<r>`, holding n (param
`members`, default: the number of clients). Each client loops: `enter` (create its child), `pass`
(wait until the barrier lets it through, at most `pass_timeout_s`), work `work_s`, and with the
double barrier (`double`, default true) `leave` (delete its child, wait until nobody is left);
then the next round. A member that gives up waiting withdraws its child (event `withdraw`) and
goes on. A member that starts (or restarts after a kill) joins the newest round, as an
application rejoining its group would.

The barrier object comes from the recipe when it is a barrier (`barrier`, `double-barrier`, or
a `package.module:Name` with `enter`/`wait`/`leave`); any other recipe name uses
`double-barrier` (or `barrier` with `double=false`). Members of the plain barrier never delete
their child (as the article's barrier; it goes with their session).

History conventions (checker/barrier.py reads them): `key` = the round's path; `enter` invoke
value `{"round": r, "n": n}`, ok `{"node": path}`; `pass` ok `{"count": children seen, "n": n
read from the node}`, fail `error: "timeout"` (gave up) or `"stopped"` (the run ended); `leave`
likewise. Params: barrier_path, members, double, work_s, pass_timeout_s, think_s.
Runs inside client containers: stdlib and kazoo only.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.checker.barrier import BarrierChecker
from zkjepsen.checker.exercised import Exercised
from zkjepsen.recipes.barrier import DoubleBarrier, QueueBarrier
from zkjepsen.recipes.base import param
from zkjepsen.workloads.common import ensure, error_name, is_definite

ROUND = "round-"


def _size(params: dict[str, Any], nclients: int) -> int:
    return max(1, param(params, "members", 0) or nclients)


def latest_round(zk: Any, base: str) -> int:
    rounds = [int(c[len(ROUND) :]) for c in zk.get_children(base) if c.startswith(ROUND)]
    return max(rounds, default=0)


def _barrier(ctx: Any, path: str) -> Any:
    """The recipe's barrier when it names one (registry `barrier`/`double-barrier`, or a user's
    `package.module:Name` with enter/wait/leave), else ours (param `double`)."""
    if ctx.recipe in ("barrier", "double-barrier") or ":" in ctx.recipe:
        b = ctx.make_recipe(path)
        if all(hasattr(b, m) for m in ("enter", "wait", "leave")):
            return b

    cls = DoubleBarrier if param(ctx.params, "double", True) else QueueBarrier
    return cls(ctx.session, path, params=ctx.params)


def _wait(ctx: Any, f: str, path: str, b: Any, timeout: float) -> bool | None:
    """One recorded wait (`pass` or `leave`): True passed, False gave up, None unknown."""
    call = b.wait if f == "pass" else b.leave
    value = None
    op = ctx.invoke(f, key=path)
    try:
        ok = call(timeout, lambda: not ctx.running())
    except Exception as e:  # noqa: BLE001
        if is_definite(e):
            op.fail(value, error=error_name(e))
            return False
        op.info(value, error=error_name(e))
        return None
    if not ok:
        op.fail(value, error="stopped" if not ctx.running() else "timeout")
        return False
    op.ok({"count": b.count, "n": getattr(b, "n", None)})
    return True


class BarrierWorkload:
    name = "barrier"
    description = (
        "members meet at a (double) barrier round after round; none passes early, none stuck"
    )

    def setup(self, ctx: Any) -> None:
        base = param(ctx.params, "barrier_path", "/zkjepsen/queue_barrier")
        ensure(ctx.session, base, str(_size(ctx.params, ctx.nclients)).encode())

    def run_client(self, ctx: Any) -> None:
        p = ctx.params
        base = param(p, "barrier_path", "/zkjepsen/queue_barrier")
        n = _size(p, ctx.nclients)
        work_s, think_s = param(p, "work_s", 0.2), param(p, "think_s", 0.0)
        timeout = param(p, "pass_timeout_s", 30.0)
        r = None
        while ctx.running():
            try:
                latest = latest_round(ctx.session, base)
                r = latest if r is None else max(r, latest)
                path = f"{base}/{ROUND}{r:06d}"
                ensure(ctx.session, path, str(n).encode())
                b = _barrier(ctx, path)
            except Exception as e:  # noqa: BLE001 - e.g. no connection right now
                ctx.event("barrier-error", f"{error_name(e)}: {e}")
                ctx.sleep(0.5)
                continue
            r += 1
            op = ctx.invoke("enter", key=path, value={"round": r - 1, "n": n})
            try:
                node = b.enter()
            except Exception as e:  # noqa: BLE001
                if is_definite(e):
                    op.fail({"round": r - 1, "n": n}, error=error_name(e))
                else:  # a child may exist that we cannot find: go on to the next round
                    op.info({"round": r - 1, "n": n}, error=error_name(e))
                continue
            op.ok({"node": node})
            passed = _wait(ctx, "pass", path, b, timeout)
            if passed:
                ctx.sleep(work_s)
                if getattr(b, "double", False):  # the plain barrier's child stays
                    _wait(ctx, "leave", path, b, timeout)
            elif passed is False:
                ctx.event("withdraw", {"node": node})
                try:
                    b.close()
                except Exception:  # noqa: BLE001 - its session may be gone with the node
                    pass
            ctx.sleep(ctx.rng.uniform(0, 2 * think_s))

    def final(self, ctx: Any) -> None:
        pass

    def checkers(self, params: dict[str, Any]) -> dict[str, Any]:

        return {
            "barrier": BarrierChecker(n=param(params, "members", 0) or None),
            # every member entered at least once, someone passed, and no client errors
            "exercised": Exercised(need=("enter", "pass"), per_client=("enter",)),
        }


BARRIER = BarrierWorkload()
