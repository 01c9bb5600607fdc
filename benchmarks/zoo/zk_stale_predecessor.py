#!/usr/bin/env python3
"""ZooKeeper, ONE bug: a stale predecessor after a session expiry. The lock remembers the node
it last found ahead of it. When its session expires while it waits (its node is gone), it
makes a new node - at the END of the queue - but keeps watching the predecessor it remembered,
and when that one goes it takes the lock without looking at the queue, while a waiter that was
behind its old node is granted too (CURATOR-604's class: a lock that mixes up what its old
session and its new one own).
Exposed by: a waiter cut off (isolate-client) or frozen past its session while it is queued
behind the holder. Shows as lock:belief, beyond a lease's nature."""

from zoo_zk import QueueLock, serve


class StalePredecessor(QueueLock):
    remembered: str | None = None
    renewed = False  # our node was made again after the session that had the first one expired

    def predecessor(self, children: list[str], mine: str) -> str | None:
        if self.renewed and self.remembered is not None:
            return self.remembered  # BUG: the node ahead of our OLD node
        self.remembered = super().predecessor(children, mine)
        return self.remembered

    def acquire(self, timeout_s: float) -> str | None:
        try:
            return super().acquire(timeout_s)
        except Exception:
            self.node, self.renewed = None, True  # our node went with the session: make another
            self.connected()
            return super().acquire(timeout_s)

    def on_wake(self, mine: str) -> bool:
        if not self.renewed:
            return False  # the usual path looks at the queue again
        self.renewed, self.remembered = False, None
        return True  # BUG: the one we remembered is gone, so we must be first

    def release(self) -> None:
        self.renewed, self.remembered = False, None
        super().release()


if __name__ == "__main__":
    serve(StalePredecessor)
