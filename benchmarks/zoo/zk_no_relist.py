#!/usr/bin/env python3
"""ZooKeeper, ONE bug: no re-list after a waiter ahead dies. The recipe's herd avoidance
watches only the node just ahead; when that node goes, this lock takes it to mean "I am first"
without listing the children again. That holds only while the node ahead was the holder's: when
a WAITER ahead dies (its session expires, its node goes), the waiter behind it believes it holds
while the holder still does. (ZooKeeper's recipe page says to re-list: "if the node is not the
lowest, watch the next lower"; locks written from its one-line summary skip it.)
Exposed by: kill-client aimed at a waiter queued behind the holder (its node is deleted when
its session expires). Shows as lock:belief, beyond a lease's nature."""

from zoo_zk import QueueLock, serve


class NoRelist(QueueLock):
    def on_wake(self, mine: str) -> bool:
        return True  # BUG: the node ahead is gone, so we must be first


if __name__ == "__main__":
    serve(NoRelist)
