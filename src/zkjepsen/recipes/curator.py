"""Apache Curator's `InterProcessMutex` algorithm (`LockInternals` + `StandardLockInternalsDriver`),
ported to Python (`curator`), as the Russian article on ZooKeeper locks describes it.

Source: create an ephemeral-sequential node `<lock>/_c_<guid>-lock-` ("protected" mode: after a
connection loss the create is retried by first looking for a child carrying our GUID, so a create
that succeeded on the server is found, not orphaned). Then loop until held: list the children
and sort them by the sequence after `lock-`; hold if our index is 0; otherwise `getData` on the
predecessor **with a watcher** (getData, not exists: a vanished predecessor throws NoNode instead
of leaving a dangling watch) and wait, with a deadline - on timeout delete our node. Our own
node missing from the listing means our session expired: NoNode, and the acquisition is retried
by the retry policy (here 3 retries, exponential backoff from 100 ms) with a fresh node.
Re-entrant per thread (a count; the node goes when the count drops to 0).

Expected flaw: safe without faults. Like every ZooKeeper lock, a holder whose session expires
keeps believing until it looks (Curator applications are told to watch connection state).
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from kazoo.exceptions import ConnectionLoss, NoNodeError

from zkjepsen.recipes.base import Token, ZkRecipe, delete_quietly, seq_of

LOCK_NAME = "lock-"
RETRIES = 3


class CuratorMutex(ZkRecipe):
    def setup(self) -> None:
        self.data = self.identifier.encode()
        self._owners: dict[int, list[Any]] = {}  # thread id -> [token, count]
        self._wake = threading.Event()
        # No ZooKeeper call here: Curator's constructor makes none (its first create makes the
        # parents). A constructor that did (ensure_path) raised SessionExpiredError when the
        # driver rebuilt the lock during a session loss, and the run became UNKNOWN.

    def _notify(self, event: Any) -> None:
        self._wake.set()

    def _create_protected(self) -> tuple[str, int]:
        prefix = f"_c_{uuid.uuid4()}-"
        for attempt in range(RETRIES + 1):
            try:
                node, stat = self.zk.create(
                    f"{self.path}/{prefix}{LOCK_NAME}",
                    self.data,
                    ephemeral=True,
                    sequence=True,
                    include_data=True,
                    makepath=True,  # creatingParentContainersIfNeeded()
                )
                return node, stat.czxid
            except ConnectionLoss:
                if attempt == RETRIES:
                    raise
                time.sleep(0.1 * 2**attempt)
                try:
                    found = [c for c in self.zk.get_children(self.path) if c.startswith(prefix)]
                except ConnectionLoss:
                    continue
                if found:
                    node = f"{self.path}/{found[0]}"
                    stat = self.zk.exists(node)
                    if stat is not None:
                        return node, stat.czxid
        raise AssertionError("unreachable")

    def _sorted_children(self) -> list[str]:
        kids = [c for c in self.zk.get_children(self.path) if LOCK_NAME in c]
        return sorted(kids, key=lambda c: c[c.rindex(LOCK_NAME) + len(LOCK_NAME) :])

    def _lock_loop(self, node: str, deadline: float | None) -> bool:
        mine = node.rsplit("/", 1)[1]
        delete_ours = False
        try:
            while True:
                children = self._sorted_children()
                if mine not in children:
                    raise NoNodeError(f"Sequential path not found: {node}")
                i = children.index(mine)
                if i == 0:
                    return True
                self._wake.clear()
                try:
                    self.zk.get(f"{self.path}/{children[i - 1]}", watch=self._notify)
                except NoNodeError:
                    continue  # predecessor gone: list again
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0 or not self._wake.wait(left):
                        delete_ours = True
                        return False
                else:
                    self._wake.wait()
        except Exception:
            delete_ours = True
            raise
        finally:
            if delete_ours:
                self._delete(node)

    def _delete(self, node: str) -> None:
        delete_quietly(self.zk, node)

    def acquire(self, timeout: float | None) -> Token | None:
        me = threading.get_ident()
        if me in self._owners:  # re-entrant
            self._owners[me][1] += 1
            return self._owners[me][0]
        deadline = None if timeout is None else time.monotonic() + timeout
        retries = 0
        while True:
            node, czxid = self._create_protected()
            try:
                if not self._lock_loop(node, deadline):
                    return None
            except NoNodeError:
                if retries >= RETRIES:  # the retry policy gives up
                    raise
                time.sleep(0.1 * 2**retries)
                retries += 1
                continue
            token = Token(czxid, seq_of(node), node)
            self._owners[me] = [token, 1]
            return token

    def release(self) -> None:
        me = threading.get_ident()
        entry = self._owners.get(me)
        if entry is None:
            raise RuntimeError(f"you do not own the lock: {self.path}")
        entry[1] -= 1
        if entry[1] > 0:
            return
        del self._owners[me]
        self._delete(entry[0].node)

    def holding(self) -> bool:
        return threading.get_ident() in self._owners
