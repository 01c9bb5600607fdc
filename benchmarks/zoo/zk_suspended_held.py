#!/usr/bin/env python3
"""ZooKeeper, ONE bug: SUSPENDED treated as held, for too long. The lock keeps believing through
a disconnection and even after the session is LOST, until its holder's work is done: Curator's
docs ask every holder to treat SUSPENDED as "maybe not held"; a lock that ignores connection
states (go-zookeeper's zk.Lock has no session handling at all) does not.
Exposed by: isolate-client on the holder for longer than its session, with a hold longer than
the session (`--param hold_s=6 --param hold_fixed=true`): the servers expire it, the next waiter
is granted, and this one works on. Shows as lock:belief (an effect overlap on an unfenced
resource); while it is cut off its split is one a lease allows."""

from kazoo.client import KazooState
from zoo_zk import QueueLock, serve


class SuspendedHeld(QueueLock):
    def on_state(self, state: str) -> None:
        if state == KazooState.CONNECTED:
            self.wake.set()
        # BUG: SUSPENDED and LOST change nothing: we hold until we release


if __name__ == "__main__":
    serve(SuspendedHeld)
