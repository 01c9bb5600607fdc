"""The two-version lock, version 1 (`herd`): every waiter watches the children list.

Source: a Russian article on ZooKeeper locks (its version 1). Create the
ephemeral-sequential node `<lock>/lock-`; list the children; the smallest holds; otherwise watch
the **children list** of the lock node and repeat on every change.

Expected flaw: none for safety without faults (the listing is redone after every change, so a
vanished waiter cannot fool it). Cost: the herd effect - every release (and every new contender)
wakes every waiter, each of which lists the children again: O(n) notifications and listings per
release, against O(1) for `predecessor`. `benchmarks/herd.py` measures it. Like the article, it
has no session-loss handling: a holder whose session expired still believes it holds.
"""

from __future__ import annotations

import time

from kazoo.exceptions import NoNodeError

from zkjepsen.recipes.base import Token, seq_of, sort_by_seq
from zkjepsen.recipes.watching import SequentialNodeLock


class HerdLock(SequentialNodeLock):
    def acquire(self, timeout: float | None) -> Token | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        node, stat = self._create_own("lock-")
        mine = node.rsplit("/", 1)[1]
        while True:
            self._wake.clear()
            children = sort_by_seq(self.zk.get_children(self.path, watch=self._woken))
            if mine not in children:
                raise NoNodeError(f"own lock node {node} is gone (session lost?)")
            if children[0] == mine:
                self._token = Token(stat.czxid, seq_of(mine), node)
                return self._token
            if not self._waited(deadline):
                self._delete()
                return None
