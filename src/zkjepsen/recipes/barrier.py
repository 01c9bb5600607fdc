"""The barrier and the double barrier of a (Chinese) article on ZooKeeper scenarios (`barrier`,
`double-barrier`).

Source (the article's words): "`/queue_barrier` holds a number n; members create children and
proceed when there are n." Port: the barrier node's data is n; `enter()` creates an
ephemeral-sequential child `member-`; `wait()` lists the children with a watch and proceeds when
there are at least n, else waits for the watch and lists again. The double barrier also waits
on the way out: `leave()` deletes the member's own child and waits (watching the children) until
none is left.

Expected flaws: the count is of *nodes*, not of members. (1) A member's child is ephemeral: a
member that dies (or whose session expires) while others wait takes its child with it, so the
count can stay below n and every waiter waits forever; a member restarted on a new session that
enters again while its dead session's child still lingers is counted twice, so the others can
proceed with n-1 members (n-1+1). (2) No GUID: a create retried after connection loss can leave
two children for one member. (3) The double barrier has no `ready` node (unlike ZooKeeper's own
recipe): a member that passes and leaves before a slow waiter re-lists makes that waiter see
fewer than n again, and it waits forever; a paused member's child blocks everyone's `leave`
until its session expires. No session-loss handling at all.

As a `Recipe`: `acquire(timeout)` = enter and wait (a Token for the member's own node),
`release()` = leave (the double barrier waits for the others; the plain one just deletes),
`holding()` = passed and not yet left.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from zkjepsen.recipes.base import Token, ZkRecipe, delete_quietly, param, seq_of


class QueueBarrier(ZkRecipe):
    PREFIX = "member-"
    double = False
    single_use = True  # one object per barrier round

    def setup(self) -> None:
        self.node: str | None = None
        self._token: Token | None = None
        self._wake = threading.Event()
        self.count = 0  # children seen by the last listing
        self.n: int | None = None  # the barrier's size as last read

    def size(self) -> int:
        """n, as the barrier node holds it (param `members` when it holds none)."""
        data, _ = self.zk.get(self.path)
        try:
            return int(data)
        except ValueError:
            return param(self.params, "members", 2)

    def _on_change(self, event: Any) -> None:
        self._wake.set()

    def enter(self) -> str:
        """Create this member's child; returns its path."""
        self.node = self.zk.create(f"{self.path}/{self.PREFIX}", ephemeral=True, sequence=True)
        return self.node

    def _wait_until(
        self,
        done: Callable[[list[str]], bool],
        timeout: float | None,
        cancel: Callable[[], bool] | None,
    ) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._wake.clear()
            children = self.zk.get_children(self.path, watch=self._on_change)
            self.count = len(children)
            if done(children):
                return True
            while not self._wake.is_set():
                left = None if deadline is None else deadline - time.monotonic()
                if (left is not None and left <= 0) or (cancel is not None and cancel()):
                    return False
                self._wake.wait(0.25 if left is None else min(0.25, left))

    def wait(self, timeout: float | None, cancel: Callable[[], bool] | None = None) -> bool:
        """Proceed when the barrier has n children; False on timeout or cancel."""
        n = self.n = self.size()
        if self._wait_until(lambda kids: len(kids) >= n, timeout, cancel):
            self._token = Token(None, seq_of(self.node or ""), self.node or "")
            return True
        return False

    def leave(self, timeout: float | None = None, cancel: Callable[[], bool] | None = None) -> bool:
        """Delete our child; the double barrier then waits until no child is left."""
        self._token = None
        if self.node:
            delete_quietly(self.zk, self.node)
            self.node = None
        if not self.double:
            return True
        return self._wait_until(lambda kids: not kids, timeout, cancel)

    # The Recipe interface (`zkjepsen.recipes.base`).
    def acquire(self, timeout: float | None) -> Token | None:
        self.enter()
        return self._token if self.wait(timeout) else None

    def release(self) -> None:
        self.leave()

    def holding(self) -> bool:
        return self._token is not None

    def close(self) -> None:
        """Withdraw: drop our own child if we have not passed (never anyone else's)."""
        if self.node and self._token is None:
            delete_quietly(self.zk, self.node)
            self.node = None


class DoubleBarrier(QueueBarrier):
    double = True
