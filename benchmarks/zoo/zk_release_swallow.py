#!/usr/bin/env python3
"""ZooKeeper, ONE bug: a release that swallows ConnectionLoss (CURATOR-678: Curator's
InterProcessMutex.release dropped its local lock data although the delete failed; kazoo #732's
cleanup swallows a KazooError the same way). The delete's reply is lost, the lock forgets its
node, the node lives on with the session: every waiter behind it waits forever.
Exposed by: proxy-drop-request (op=delete) on a release: the proxy closes the connection
instead of forwarding the delete; the client reconnects to the same session. Shows as
liveness:stuck."""

from zoo_zk import LOST_REPLY, QueueLock, serve


class ReleaseSwallow(QueueLock):
    def delete_own(self) -> None:
        node, self.node = self.node, None
        if node is None:
            return
        try:
            self.zk.delete(node)
        except LOST_REPLY:
            pass  # BUG: the delete may never have reached the server


if __name__ == "__main__":
    serve(ReleaseSwallow)
