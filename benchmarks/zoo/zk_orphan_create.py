#!/usr/bin/env python3
"""ZooKeeper, ONE bug: an orphan node after a lost create reply (ZOOKEEPER-1262; what Curator's
protected mode and kazoo's uuid prefix exist for). The node's name carries no GUID, so after a
ConnectionLoss on create the lock cannot tell whether the server made the node: it creates
another. The first one, owned by our live session, sits ahead of us in the queue for as long as
the session lives; we wait behind our own orphan, and so does every waiter after us.
Exposed by: proxy-lose-create (the server applies the create, the client never gets the reply)
on an acquire. Shows as liveness:stuck."""

from zoo_zk import LOST_REPLY, QueueLock, serve


class OrphanCreate(QueueLock):
    def prefix(self) -> str:
        return "lock-"  # no GUID: our own node cannot be told from another's

    def create(self) -> str:
        while True:
            try:
                return self.zk.create(
                    f"{self.path}/{self.prefix()}",
                    self.ident.encode(),
                    ephemeral=True,
                    sequence=True,
                    makepath=True,
                )
            except LOST_REPLY:
                self.connected()  # BUG: and create again; the first may exist


if __name__ == "__main__":
    serve(OrphanCreate)
