#!/usr/bin/env python3
"""etcd, ONE bug: a waiter whose lease expired while it waited still takes the lock (etcd
#11456: `concurrency.Mutex.Lock` waited for every older key to go and returned without checking
that its own key was still there; fixed for 3.5 by etcd-io/etcd#11408).
The lock is etcd's Mutex: each contender puts `<prefix>/<uuid>` with its lease and holds once
no key under the prefix has an older create revision. A waiter frozen past its TTL loses its
key; the waiter behind it is granted; the frozen one, thawed, finds no older key and holds.
Exposed by: pause-client (or isolate-client) on a waiter queued behind the holder, past its
TTL. Shows as lock:belief, beyond a lease's nature."""

import time
from typing import Any

from zoo_etcd import LeaseLock, serve


class WaiterLease(LeaseLock):
    def __init__(self, etcd: Any, key: str, ttl_s: int) -> None:
        super().__init__(etcd, key, ttl_s)
        self.prefix = key + "/"
        self.key = self.prefix + self.me.decode()  # our contender key (the fence's, too)

    def older(self, mine: int) -> list[Any]:
        return [m for _, m in self.etcd.get_prefix(self.prefix) if m.create_revision < mine]

    def acquire(self, timeout_s: float) -> int | None:
        deadline = time.monotonic() + timeout_s
        self.etcd.put(self.key, self.me, lease=self.new_lease())
        _, meta = self.etcd.get(self.key)
        mine = meta.create_revision
        while self.older(mine):
            if time.monotonic() >= deadline:
                self.end_lease()  # revoking the lease deletes our key with it
                return None
            time.sleep(0.05)
        # BUG: no check that our own key (and lease) is still there
        self.held = True
        return mine


if __name__ == "__main__":
    serve(WaiterLease)
