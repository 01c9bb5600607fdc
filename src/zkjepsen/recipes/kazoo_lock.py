"""kazoo's `Lock` (kazoo.recipe.lock), used as-is (`kazoo`) and by a careful application
(`kazoo-careful`).

Source: kazoo 2.x `kazoo/recipe/lock.py`. Ephemeral-sequential contender nodes
`<uuid hex>__lock__<seq>` (the uuid lets a retried create find its own node after a connection
loss); sort by sequence; wait on the predecessor with `get` + watch; re-list after each wake-up.

Expected flaw: `Lock.is_acquired` is cleared only by `release()`. When the session is lost (a
pause or a partition longer than the session timeout) the ephemeral node vanishes and another
client acquires, while this client still believes it holds: a split holder unless the
application listens for SUSPENDED/LOST itself, which kazoo's docs ask for and `kazoo-careful`
does (it stops believing at the first SUSPENDED or LOST). Without faults both are safe.
"""

from __future__ import annotations

from kazoo.exceptions import LockTimeout
from kazoo.protocol.states import KazooState
from kazoo.recipe.lock import Lock

from zkjepsen.recipes.base import Token, ZkRecipe, token_for


class KazooLock(ZkRecipe):
    """kazoo's Lock behind the Recipe interface; `holding()` is kazoo's own `is_acquired`."""

    def setup(self) -> None:
        self.lock = Lock(self.zk, self.path, self.identifier)

    def acquire(self, timeout: float | None) -> Token | None:
        try:
            if not self.lock.acquire(timeout=timeout):
                return None  # kazoo's retry deadline ran out: it cleaned up its node
        except LockTimeout:
            return None
        return token_for(self.zk, f"{self.path}/{self.lock.node}")

    def release(self) -> None:
        self.lock.release()

    def holding(self) -> bool:
        return self.lock.is_acquired

    def close(self) -> None:
        pass


class CarefulKazooLock(KazooLock):
    """The documented correct use: a state listener; any SUSPENDED or LOST after the acquire
    began ends the application's belief, so the critical section is abandoned. (SUSPENDED may
    resolve with the same session; a careful application still stops, as it cannot know.)"""

    def setup(self) -> None:
        super().setup()
        self._trouble = False
        self.zk.add_listener(self._on_state)

    def _on_state(self, state: str) -> None:
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self._trouble = True

    def acquire(self, timeout: float | None) -> Token | None:
        self._trouble = False
        return super().acquire(timeout)

    def holding(self) -> bool:
        return self.lock.is_acquired and not self._trouble

    def close(self) -> None:
        self.zk.remove_listener(self._on_state)


class Kazoo20Lock(KazooLock):
    """kazoo's Lock as kazoo 2.0 behaved (kazoo issue 291, fixed by PRs 293/297 in 2.1): a second
    `acquire()` by the holder returns at once (the old `_inner_acquire` found its own node and
    was first), but `release()` deletes the node whatever the depth. `holding()` is the
    application's belief: inside nested `with lock:` blocks it holds until the outermost ends,
    so after an inner release the rest of the outer block runs unprotected."""

    def setup(self) -> None:
        super().setup()
        self._depth = 0
        self._token: Token | None = None

    def acquire(self, timeout: float | None) -> Token | None:
        if self._depth and self.lock.is_acquired:
            self._depth += 1
            return self._token
        tok = super().acquire(timeout)
        if tok is not None:
            self._depth, self._token = 1, tok
        return tok

    def release(self) -> None:
        self._depth = max(0, self._depth - 1)
        self.lock.release()  # deletes the node at any depth; a second call finds nothing to do

    def holding(self) -> bool:
        return self._depth > 0
