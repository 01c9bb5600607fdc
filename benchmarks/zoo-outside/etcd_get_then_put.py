#!/usr/bin/env python3
"""BUG (check-then-act): the key is read, and put when absent, in two requests instead of one
transaction. Two waiters that both read "absent" both put it and both believe; the second put
overwrites the first, so both read the same create revision: the same fencing token."""

from etcd_base import run
from etcd_leaselock import LeaseLock


class GetThenPutLock(LeaseLock):
    def try_once(self):
        value, _ = self.etcd.call("get", self.key)
        if value is not None:
            return False
        self.etcd.call("put", self.key, self.me, lease=self.lease_id)  # the bug: no compare
        return True

    def token(self):
        _, meta = self.etcd.call("get", self.key)
        return meta.create_revision


if __name__ == "__main__":
    run(GetThenPutLock)
