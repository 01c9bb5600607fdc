"""What the hand-written ZooKeeper recipes share, so each module shows only its own algorithm.

Every one of them creates an ephemeral node, decides from the tree whether it holds, and
otherwise waits for a watch to fire; they differ only in the node they create and in what they
watch (the children list, the predecessor, the last writer before them, a fixed node). Two
shapes:
- `SequentialNodeLock`: an ephemeral-sequential node of our own, deleted on release, on a
  timed-out acquire and by `close()` if an acquire left it (never anyone else's);
- `FixedNodeRecipe`: one ephemeral node at a fixed path, whoever creates it holds.

Runs inside client containers: stdlib and kazoo only.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kazoo.exceptions import NodeExistsError

from zkjepsen.recipes.base import Token, ZkRecipe, delete_quietly


class WatchingRecipe(ZkRecipe):
    """The constructor every recipe takes, one wake-up event for its watches, and the belief."""

    def setup(self) -> None:
        self.node: str | None = None
        self._token: Token | None = None
        self._wake = threading.Event()
        self.zk.ensure_path(self.path)

    def _woken(self, event: Any) -> None:
        """The watch callback: any change to what we watch means look again."""
        self._wake.set()

    def _waited(self, deadline: float | None) -> bool:
        """Wait for a watch until `deadline` (monotonic; None: forever). False: timed out."""
        left = None if deadline is None else deadline - time.monotonic()
        return not (left is not None and left <= 0) and self._wake.wait(left)

    def holding(self) -> bool:
        return self._token is not None


class SequentialNodeLock(WatchingRecipe):
    def _create_own(self, prefix: str) -> tuple[str, Any]:
        """Our ephemeral-sequential node `<path>/<prefix>NNNNNNNNNN` and its stat."""
        node, stat = self.zk.create(
            f"{self.path}/{prefix}", ephemeral=True, sequence=True, include_data=True
        )
        self.node = node
        return node, stat

    def _delete(self) -> None:
        delete_quietly(self.zk, self.node)
        self.node = None

    def release(self) -> None:
        self._token = None
        if self.node:
            self._delete()

    def close(self) -> None:
        """Drop our own node if an acquire left one (never anyone else's)."""
        if self.node and self._token is None:
            self._delete()


class FixedNodeRecipe(WatchingRecipe):
    """Create `<path>/<NAME>`; if it exists, watch it (`_watch`) and try again when it goes."""

    NAME = "lock"

    def setup(self) -> None:
        super().setup()
        self.node = self.fixed = f"{self.path}/{self.NAME}"
        self.data = self.identifier.encode()

    def _watch(self) -> bool:
        """Set the recipe's watch; False when the node is already gone (try again at once)."""
        raise NotImplementedError

    def acquire(self, timeout: float | None) -> Token | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._wake.clear()
            try:
                _, stat = self.zk.create(self.fixed, self.data, ephemeral=True, include_data=True)
                self._token = Token(stat.czxid, None, self.fixed)
                return self._token
            except NodeExistsError:
                pass
            if not self._watch():
                continue  # it went between our create and our watch: try again now
            if not self._waited(deadline):
                return None

    def release(self) -> None:
        self._token = None
        delete_quietly(self.zk, self.node)
