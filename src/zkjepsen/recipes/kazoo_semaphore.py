"""`kazoo-semaphore`: kazoo's `Semaphore` (kazoo.recipe.lock) as-is, with `permits` leases (the
`semaphore` workload's param, default 2), judged by that workload: never more than `permits`
holders at once.

Source: kazoo 2.x `kazoo/recipe/lock.py` `Semaphore`. The lease pool is a node holding
`max_leases` as its data; a contender first takes a kazoo `Lock` at `<path>-__lock__`, lists the
pool's children and, when fewer than `max_leases`, creates its own ephemeral
`<path>/<uuid hex>`; then it releases that lock (only the lock's holder watches the pool, so
there is no herd). `release` deletes its node.

Expected flaw: `is_acquired` is cleared only by `release()` (as kazoo's `Lock`): a holder whose
session expired (a pause or a cut past the session timeout) lost its ephemeral node, another
contender takes the freed lease, and the holder still believes it has one: `permits` + 1
holders. Without faults the pool never has more than `permits` holders. The token is the
holder's node's czxid.
"""

from __future__ import annotations

from kazoo.exceptions import LockTimeout
from kazoo.recipe.lock import Semaphore

from zkjepsen.recipes.base import Token, ZkRecipe, param, token_for


class KazooSemaphore(ZkRecipe):
    def setup(self) -> None:
        permits = param(self.params, "permits", 2)
        self.sem = Semaphore(self.zk, self.path, self.identifier, max_leases=permits)

    def acquire(self, timeout: float | None) -> Token | None:
        try:
            if not self.sem.acquire(blocking=True, timeout=timeout):
                return None
        except LockTimeout:
            return None
        return token_for(self.zk, self.sem.create_path)

    def release(self) -> None:
        self.sem.release()

    def holding(self) -> bool:
        return self.sem.is_acquired
