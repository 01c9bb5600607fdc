"""The two-version lock, version 1 (`herd`): every waiter watches the children list.

Source: a Russian article on ZooKeeper locks (../shared/RECIPES.md). Create the
ephemeral-sequential node `<lock>/lock-`; list the children; the smallest holds; otherwise watch
the **children list** of the lock node and repeat on every change.

Expected flaw: none for safety without faults (the listing is redone after every change, so a
vanished waiter cannot fool it). Cost: the herd effect - every release (and every new contender)
wakes every waiter, each of which lists the children again: O(n) notifications and listings per
release, against O(1) for `predecessor`. `benchmarks/herd.py` measures it. Like the article, it
has no session-loss handling: a holder whose session expired still believes it holds.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kazoo.exceptions import NoNodeError

from zkjepsen.recipes.base import Token, delete_quietly, seq_of, sort_by_seq


class HerdLock:
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
        self.node: str | None = None
        self._token: Token | None = None
        self._wake = threading.Event()
        zk.ensure_path(path)

    def _on_children(self, event: Any) -> None:
        self._wake.set()

    def acquire(self, timeout: float | None) -> Token | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        node, stat = self.zk.create(
            f"{self.path}/lock-", ephemeral=True, sequence=True, include_data=True
        )
        self.node = node
        mine = node.rsplit("/", 1)[1]
        while True:
            self._wake.clear()
            children = sort_by_seq(self.zk.get_children(self.path, watch=self._on_children))
            if mine not in children:
                raise NoNodeError(f"own lock node {node} is gone (session lost?)")
            if children[0] == mine:
                self._token = Token(stat.czxid, seq_of(mine), node)
                return self._token
            left = None if deadline is None else deadline - time.monotonic()
            if (left is not None and left <= 0) or not self._wake.wait(left):
                self._delete()
                return None

    def _delete(self) -> None:
        delete_quietly(self.zk, self.node)
        self.node = None

    def release(self) -> None:
        self._token = None
        if self.node:
            self._delete()

    def holding(self) -> bool:
        return self._token is not None

    def close(self) -> None:
        """Drop our own node if an acquire left one (never anyone else's)."""
        if self.node and self._token is None:
            self._delete()
