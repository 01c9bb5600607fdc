"""Master election from a (Chinese) article on ZooKeeper scenarios (`election`).

Source: all candidates create the same ephemeral node (the article: `/master_election/<date>/
binding`; here `<path>/binding`); the one whose create succeeds is master; the others watch the
node and run the election again when it disappears. As a Recipe: `acquire` = stand until elected
(or `timeout`), `release` = resign (delete the node).

Expected flaw: at most one *node* exists at a time, but belief is another matter: a master whose
session expired (pause, partition) still believes it is master while another is elected, since
the recipe has no session-loss handling; and its resignation deletes `binding` whoever created
it, so a stale master can depose the real one. Without faults: at most one master at a time.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kazoo.exceptions import NodeExistsError, NoNodeError

from zkjepsen.recipes.base import Token


class Election:
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
        self.node = f"{path}/binding"
        self.data = identifier.encode()
        self._token: Token | None = None
        self._wake = threading.Event()
        zk.ensure_path(path)

    def _on_binding(self, event: Any) -> None:
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
            if self.zk.exists(self.node, watch=self._on_binding) is None:
                continue  # the master went between our create and our watch: run again now
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
