"""A careful ZooKeeper lock written from the recipe in ZooKeeper's documentation: an
ephemeral sequential node named `<guid>-lock-<seq>` (the guid finds our node again when a
create's reply is lost), the lowest sequence holds, each waiter watches its predecessor and
lists the children again when woken. The holder stops believing at SUSPENDED or LOST (it can
no longer know), and every node of ours is deleted when the lock is given up.

The buggy programs of this zoo subclass it and change ONE method.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss, NoNodeError, OperationTimeoutError

log = logging.getLogger("zoo-outside")
MARK = "-lock-"


class LockLost(Exception):
    """Our own node vanished while we waited: the session is gone."""


class SeqLock:
    ephemeral = True

    def __init__(self, zk: KazooClient, path: str, ident: str) -> None:
        self.zk, self.path, self.ident = zk, path, ident
        self.guid = uuid.uuid4().hex
        self.node: str | None = None
        self.held = False
        self.epoch = 0  # counts SUSPENDED/LOST: a grant seen across one is not believed
        self.zk.ensure_path(path)

    # -- the session ---------------------------------------------------------------------
    def on_state(self, state: str) -> None:
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self.epoch += 1
            self.held = False  # we cannot know any more: stop believing

    # -- the recipe ----------------------------------------------------------------------
    def seq(self, name: str) -> int:
        return int(name[-10:])

    def order(self, children: list[str]) -> list[str]:
        return sorted((c for c in children if MARK in c), key=self.seq)

    def mine(self) -> str | None:
        for c in self.zk.get_children(self.path):
            if c.startswith(self.guid):
                return f"{self.path}/{c}"
        return None

    def create(self) -> str:
        prefix = f"{self.path}/{self.guid}{MARK}"
        for _ in range(5):
            try:
                return self.zk.create(prefix, b"", ephemeral=self.ephemeral, sequence=True)
            except (ConnectionLoss, OperationTimeoutError):
                found = self.mine()  # did it land?
                if found:
                    return found
        raise ConnectionLoss("could not create the lock node")

    def granted(self, children: list[str], me: str) -> bool:
        return children[0] == me

    def wait_for(self, children: list[str], me: str, timeout_s: float) -> None:
        """Wait until the node just before ours goes (or the timeout), then list again."""
        i = children.index(me)
        gone = threading.Event()
        if self.zk.exists(f"{self.path}/{children[i - 1]}", watch=lambda _e: gone.set()):
            gone.wait(timeout_s)

    def acquire(self, timeout_s: float) -> str | None:
        deadline = time.monotonic() + timeout_s
        if self.node is None:
            self.node = self.create()
        me = self.node.rsplit("/", 1)[1]
        while True:
            epoch = self.epoch
            children = self.order(self.zk.get_children(self.path))
            if me not in children:
                self.node = None
                raise LockLost("our lock node is gone")
            if self.granted(children, me):
                if epoch != self.epoch or self.zk.state != KazooState.CONNECTED:
                    raise ConnectionLoss("disconnected while granted: unknown")
                self.held = True
                return self.node
            left = deadline - time.monotonic()
            if left <= 0:
                self.give_up()
                return None
            self.wait_for(children, me, min(left, 1.0))

    def give_up(self) -> None:
        node, self.node, self.held = self.node, None, False
        if node is not None:
            try:
                self.zk.retry(self.zk.delete, node)
            except NoNodeError:
                pass

    def release(self) -> None:
        self.held = False
        self.give_up()

    def holding(self) -> bool:
        return self.held

    def cleanup(self) -> None:
        """Forget this lock object: delete any node of ours, retrying in the background."""
        self.held = False

        def loop() -> None:
            for _ in range(60):
                try:
                    node = self.node or self.mine()
                    if node is None:
                        return
                    self.zk.delete(node)
                    self.node = None
                except NoNodeError:
                    self.node = None
                except Exception as e:  # noqa: BLE001
                    log.info("cleanup retry: %r", e)
                    time.sleep(0.5)

        threading.Thread(target=loop, daemon=True).start()
