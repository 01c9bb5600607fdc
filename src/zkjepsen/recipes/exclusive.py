"""The exclusive lock of a (Chinese) article on ZooKeeper scenarios (`exclusive`).

Source: every client tries to create the ephemeral node `<lock>/lock`; the one that succeeds
holds the lock; the others watch the children of `<lock>` and retry when they change. Release:
delete the node (or the session ends and ZooKeeper deletes it).

Expected flaw: safe without faults, but unfair and herd-prone (every release wakes every waiter,
who all race to create), and no session-loss handling: a holder whose session expired still
believes it holds while the node (gone with the session) is created by another client - and
its `release` then deletes *that client's* node (release deletes `<lock>/lock` whoever made it).
The article does not say what to do if the node vanished before the watch was set; the port
retries the create when the listing it set the watch with no longer shows the node, which is the
reading under which the recipe works at all (else a waiter sleeps until an unrelated change).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kazoo.exceptions import NodeExistsError, NoNodeError

from zkjepsen.recipes.base import Token


class ExclusiveLock:
    def __init__(
        self,
        zk: Any,
        path: str,
        *,
        hosts: str = "",
        identifier: str = "",
        params: dict[str, Any] | None = None,
    ) -> None:
        self.zk = zk
        self.path = path
        self.node = f"{path}/lock"
        self.data = identifier.encode()
        self._token: Token | None = None
        self._wake = threading.Event()
        zk.ensure_path(path)

    def _on_children(self, event: Any) -> None:
        self._wake.set()

    def acquire(self, timeout: float | None) -> Token | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._wake.clear()
            try:
                _, stat = self.zk.create(self.node, self.data, ephemeral=True, include_data=True)
                self._token = Token(stat.czxid, None, self.node)
                return self._token
            except NodeExistsError:
                pass
            if "lock" not in self.zk.get_children(self.path, watch=self._on_children):
                continue  # released between our create and our watch: try again now
            left = None if deadline is None else deadline - time.monotonic()
            if (left is not None and left <= 0) or not self._wake.wait(left):
                return None

    def release(self) -> None:
        self._token = None
        try:
            self.zk.delete(self.node)
        except NoNodeError:
            pass

    def holding(self) -> bool:
        return self._token is not None
