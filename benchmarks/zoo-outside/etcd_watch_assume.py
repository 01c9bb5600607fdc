#!/usr/bin/env python3
"""BUG (herd + assume): a waiter watches the lock key and, when it sees the key deleted, takes
the lock by putting the key itself instead of trying the transaction again. Every waiter sees
the same delete: all of them put, all of them believe."""

from etcd_base import run
from etcd_leaselock import LeaseLock


class WatchAssumeLock(LeaseLock):
    seen_delete = False

    def wait(self, left_s):
        try:
            event = self.etcd.call("watch_once", self.key, timeout=min(left_s, 1.0))
        except Exception:  # noqa: BLE001 - WatchTimedOut: try again
            return
        if type(event).__name__ == "DeleteEvent":
            self.seen_delete = True

    def try_once(self):
        if self.seen_delete:  # the bug: the holder let go, so it is ours
            self.seen_delete = False
            self.etcd.call("put", self.key, self.me, lease=self.lease_id)
            return True
        return super().try_once()

    def token(self):
        _, meta = self.etcd.call("get", self.key)
        return meta.create_revision


if __name__ == "__main__":
    run(WatchAssumeLock)
