"""The two-version lock, version 2 (`predecessor`): each waiter watches only its predecessor.

Source: a Russian article on ZooKeeper locks (its version 2). Create the
ephemeral-sequential node `<lock>/lock-`; list the children; the smallest holds; otherwise watch
the node immediately before yours (`exists` + watch) and, after the notification, list again
(the predecessor may have died rather than released, so its death proves nothing).

Expected flaw: none for safety without faults; no session-loss handling (a holder whose session
expired still believes it holds). One notification and one listing per release (no herd).
"""

from __future__ import annotations

import time

from kazoo.exceptions import NoNodeError

from zkjepsen.recipes.base import Token, seq_of, sort_by_seq
from zkjepsen.recipes.watching import SequentialNodeLock


class PredecessorLock(SequentialNodeLock):
    PREFIX = "lock-"

    def acquire(self, timeout: float | None) -> Token | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        node, stat = self._create_own(self.PREFIX)
        mine = node.rsplit("/", 1)[1]
        while True:
            children = sort_by_seq(self.zk.get_children(self.path))
            if mine not in children:
                raise NoNodeError(f"own lock node {node} is gone (session lost?)")
            i = children.index(mine)
            if i == 0:
                self._token = Token(stat.czxid, seq_of(mine), node)
                return self._token
            self._wake.clear()
            if self.zk.exists(f"{self.path}/{children[i - 1]}", watch=self._woken) is None:
                continue  # gone between the listing and the exists: list again at once
            if not self._waited(deadline):
                self._delete()
                return None
