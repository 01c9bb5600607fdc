"""`lock` (and `election`): acquire -> critical section writing a protected resource -> release.

Each client loops: acquire (timeout `acquire_timeout_s`), then `writes` writes to the resource
znode spread over a random hold time (mean `hold_s`), release, think (mean `think_s`). The
resource is written `unguarded`, `fenced` or `token` (param `resource`; see common.py). Before
each write the client asks the recipe whether it still holds (`holding()`): kazoo's Lock always
says yes, a careful application stops at SUSPENDED/LOST (an `abandon` event).

Multi-step updates (the paper lock's flaw; see client/loop.py): every write but the last stores
`state: "half"`, the last `state: "done"` (with `step`/`steps`). A holder first reads the
resource (`f: "read"`, recorded with what it found); one that finds "half" also records a
`half-done-seen` event. With `ready_file` the update runs under the ready-file protocol. The gap
between the first and the second step is `hold_s` with `hold_fixed` (widen it so a fault aimed at
the holder lands inside it).

Params: lock_path, resource_path, resource, property, hold_s, hold_fixed, think_s, writes,
acquire_timeout_s, retry_writes (default true: writes go through KazooRetry, see common.py),
ready_file (default false), ready_path, nested (default false: see client/loop.py `nested_section`).
Checkers: lock (belief + effect overlap; effect only with property=effect), fencing, liveness;
atomicity when writes > 1.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.checker.atomicity import AtomicityChecker
from zkjepsen.checker.exercised import Exercised
from zkjepsen.checker.fencing import FencingChecker
from zkjepsen.checker.liveness import LivenessChecker
from zkjepsen.checker.lock import LockChecker
from zkjepsen.checker.phantom import PhantomChecker
from zkjepsen.client.loop import all_paths
from zkjepsen.recipes.base import param
from zkjepsen.workloads.common import ensure, resource_mode
from zkjepsen.workloads.inprocess import run_lock_loop


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

    def setup(self, ctx: Any) -> None:
        resource_mode(ctx.params)  # a bad mode fails here, on the host, not in every client
        make_path = param(ctx.params, "make_lock_path", True)  # false: Curator makes a container
        for lock, resource in all_paths(self.name, ctx.params):  # each lock (`locks`)
            if make_path:
                ctx.session.ensure_path(lock)
            ensure(ctx.session, resource, b"{}")

    def run_client(self, ctx: Any) -> None:

        run_lock_loop(ctx, self.name)

    def final(self, ctx: Any) -> None:
        pass

    def writes_resource(self, params: dict[str, Any]) -> bool:
        """Whether holders write the protected resource (`writes` 0: an empty section)."""
        return param(params, "writes", 2) > 0

    def checkers(self, params: dict[str, Any]) -> dict[str, Any]:

        names: dict[str, Any] = dict(acquire=(self.acquire_f,), release=(self.release_f,))
        # `property=effect`: a fenced resource is judged by what it accepted, and two beliefs
        # whose stale writes the fence refused are near misses, not violations.
        effect_only = param(params, "property", "belief") == "effect"
        checkers: dict[str, Any] = {
            "lock": LockChecker(
                **names, fail_on=("effect",) if effect_only else ("belief", "effect")
            ),
            "liveness": LivenessChecker(acquire=(self.acquire_f,), release=(self.release_f,)),
            # every client that asked for the lock got it at least once (or starved cleanly),
            # no errors, and releases that worked (see checker/fairness.py)
            "exercised": Exercised(
                need=(self.acquire_f,), per_client=(self.acquire_f,), release=(self.release_f,)
            ),
        }
        # grants the service never saw (run/observer.py read who holds during the run)
        checkers["phantom"] = PhantomChecker(self.acquire_f, self.release_f)
        if self.writes_resource(params):  # no write, no order to judge: fencing says unknown
            checkers["fencing"] = FencingChecker(**names)
        if self.multi_step and param(params, "writes", 2) > 1:  # judge the update's atomicity
            checkers["atomicity"] = AtomicityChecker(**names)
        return checkers


LOCK = LockWorkload()
ELECTION = LockWorkload("election", "elected", "resign", "/zkjepsen/master_election")
