"""The shared (read/write) lock of a (Chinese) article on ZooKeeper scenarios, version 2
(`rwlock`).

Source: ephemeral-sequential nodes `<lock>/<host>-R-<seq>` for reads and `<lock>/<host>-W-<seq>`
for writes. A read holds when no smaller node is a write; a write holds when it is the smallest.
Version 2 (no herd): a read watches the last smaller **write**, a write watches the last smaller
node; after the notification, the children are listed again. (Version 1 watched the children
list: see `herd` for that shape.)

Expected flaw: readers may share, writers are exclusive, without faults. No session-loss
handling: a holder whose session expired keeps believing. Sorting is by the sequence suffix (the
host prefix would make a plain name sort wrong - a bug the port must not add).

Choose the mode with the `mode` param ("read"/"write", default "write") or `with_mode(mode)`.
"""

from __future__ import annotations

import time
from typing import Any

from kazoo.exceptions import NoNodeError

from zkjepsen.recipes.base import Token, seq_of, sort_by_seq
from zkjepsen.recipes.watching import SequentialNodeLock


class RWLock(SequentialNodeLock):
    def __init__(self, *args: Any, mode: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.identifier = self.identifier or "host"
        self.mode = mode or str(self.params.get("mode", "write"))
        if self.mode not in ("read", "write"):
            raise ValueError(f"rwlock mode must be read or write, not {self.mode!r}")

    def with_mode(self, mode: str) -> RWLock:
        """Another contender of the same lock, on the same session, in `mode`."""
        return RWLock(self.zk, self.path, identifier=self.identifier, params=self.params, mode=mode)

    def _blocker(self, children: list[str], i: int) -> str | None:
        """The node to wait on, or None when we hold."""
        if self.mode == "write":
            return children[i - 1] if i > 0 else None
        writes = [c for c in children[:i] if "-W-" in c]
        return writes[-1] if writes else None

    def acquire(self, timeout: float | None) -> Token | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        tag = "R" if self.mode == "read" else "W"
        node, stat = self._create_own(f"{self.identifier}-{tag}-")
        mine = node.rsplit("/", 1)[1]
        while True:
            children = sort_by_seq(self.zk.get_children(self.path))
            if mine not in children:
                raise NoNodeError(f"own lock node {node} is gone (session lost?)")
            blocker = self._blocker(children, children.index(mine))
            if blocker is None:
                self._token = Token(stat.czxid, seq_of(mine), node)
                return self._token
            self._wake.clear()
            if self.zk.exists(f"{self.path}/{blocker}", watch=self._woken) is None:
                continue
            if not self._waited(deadline):
                self._delete()
                return None
