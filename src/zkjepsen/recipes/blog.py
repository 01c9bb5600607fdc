"""`ZkDistributedLock`, the lock of a (Chinese) blog post on kazoo - ported with its bugs.

Source (the blog post's algorithm): one kazoo client, with its own session, per lock
object; ensure the persistent parent exists; `acquire` creates an ephemeral-sequential child
`<parent>/foo`, lists and sorts the children; the only or smallest child holds the lock;
otherwise it sets an `exists` watch on the child just before its own and, when **any** watch
event fires, considers the lock acquired - it never lists the children again. It blocks on a
`threading.Event` with no timeout. `release` deletes its node if it exists, then stops and
closes the client. Usable as a context manager.

Expected flaws: (1) when a *waiter* ahead of it dies, its node vanishes, the watch fires and this
client "acquires" while the real holder still holds: a split holder with no network fault;
(2) if the predecessor vanishes between the listing and the `exists`, the watch sits on a missing
node and never fires: the client waits forever; (3) no session-loss handling (kazoo fires every
watch with a NONE event when the session expires, which this lock also takes for "acquired");
(4) no GUID in the node name, so a create retried after a connection loss can orphan a node.
Observed here too: (5) the lock lives on its own session while the application reads its data
on another, with no `sync()`: the next holder's read can be served by a server that has not yet
applied the previous holder's last write - lost counter updates with disjoint holds and no
fault (kazoo's Lock, on the application's own session, orders them by session FIFO).

Harness concession (not in the source): so a run can end, the wait is sliced and, after
`timeout`, the lock gives up, deletes its node, closes its client and raises `AcquireHung` -
the workload records that as a failed acquire with error "hung" (flaw 2 made visible). The
node's data is the client's identifier (the post writes none) so a test can tell whose node is
whose when it picks a waiter to kill; the algorithm never reads it.
"""

from __future__ import annotations

import threading
from typing import Any

from kazoo.client import KazooClient

from zkjepsen.recipes.base import Token, ZkRecipe, token_for


class AcquireHung(Exception):
    """The recipe would have waited forever (it has no timeout); the harness gave up."""


class BlogLock(ZkRecipe):
    single_use = True  # release() closes the lock's own client

    def setup(self) -> None:
        # The post opens its own client per lock object; `zk` (the harness's session) is unused
        # except to pick up the session timeout the test asked for.
        timeout_s = getattr(self.zk, "_session_timeout", 10000) / 1000.0
        if not self.hosts:
            raise ValueError("the blog lock opens its own client: it needs the connect string")
        self.client = KazooClient(hosts=self.hosts, timeout=timeout_s)
        self.client.start(timeout=15)
        self.data = self.identifier.encode()
        self.node: str | None = None
        self.event = threading.Event()
        self._held = False
        self.client.ensure_path(self.path)

    def _on_watch(self, event: Any) -> None:
        self.event.set()  # any event at all: created, deleted, changed, or the session's NONE

    def acquire(self, timeout: float | None) -> Token | None:
        self.node = self.client.create(f"{self.path}/foo", self.data, ephemeral=True, sequence=True)
        children = sorted(self.client.get_children(self.path))
        mine = self.node.rsplit("/", 1)[1]
        if len(children) == 1 or mine == children[0]:
            self._held = True
            return token_for(self.client, self.node)
        prev = children[children.index(mine) - 1]
        self.client.exists(f"{self.path}/{prev}", watch=self._on_watch)
        # The post: self.event.wait() with no timeout. Sliced so the harness can give up.
        waited = 0.0
        while not self.event.wait(0.2):
            waited += 0.2
            if timeout is not None and waited >= timeout:
                self.release()
                raise AcquireHung(f"waited {waited:.1f}s on {prev}; the recipe has no timeout")
        self._held = True  # never re-lists: whatever woke us, we "hold" the lock
        return token_for(self.client, self.node)

    def release(self) -> None:
        self._held = False
        try:
            if self.node and self.client.exists(self.node):
                self.client.delete(self.node)
        finally:
            self.client.stop()
            self.client.close()

    def holding(self) -> bool:
        return self._held

    def close(self) -> None:
        if self.client.connected:
            self.client.stop()
            self.client.close()

    def __enter__(self) -> BlogLock:
        self.acquire(None)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
