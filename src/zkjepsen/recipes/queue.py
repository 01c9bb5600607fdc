"""The FIFO queue of a (Chinese) article on ZooKeeper scenarios (`queue`).

Source: members create ephemeral-sequential nodes under `/queue_fifo`; a member proceeds when its
node is the smallest, otherwise it watches the next smaller node. As a Recipe this is a fair
lock (`acquire` = join and wait for your turn, `release` = leave): step for step the
predecessor-watch loop, with member nodes `member-`.

For the `queue` workload the same ordering carries data: `put(v)` creates a **persistent**
sequential node `item-<seq>` holding v (ephemeral, as the article's members are, would lose every
item whose producer's session ends); `get()` takes the smallest item (read it, delete it; a
NoNode on delete means another consumer took it: try the next); `drain()` takes everything.

Expected flaw: none without faults. Under faults a `get` whose delete outcome is unknown may have
taken the item (recorded `info`); there is no at-most-once delivery beyond that.
"""

from __future__ import annotations

import json
from typing import Any

from kazoo.exceptions import NoNodeError

from zkjepsen.recipes.base import sort_by_seq
from zkjepsen.recipes.predecessor import PredecessorLock

ITEM = "item-"


class FifoQueue(PredecessorLock):
    PREFIX = "member-"

    def put(self, value: Any) -> str:
        return self.zk.create(f"{self.path}/{ITEM}", json.dumps(value).encode(), sequence=True)

    def _items(self) -> list[str]:
        return sort_by_seq([c for c in self.zk.get_children(self.path) if c.startswith(ITEM)])

    def get(self) -> tuple[bool, Any]:
        """(True, value) for the item taken, (False, None) when the queue is empty."""
        for name in self._items():
            path = f"{self.path}/{name}"
            try:
                data, _ = self.zk.get(path)
                self.zk.delete(path)
            except NoNodeError:
                continue  # another consumer took it first
            return True, json.loads(data)
        return False, None

    def drain(self) -> list[Any]:
        out: list[Any] = []
        while True:
            ok, v = self.get()
            if not ok:
                return out
            out.append(v)
