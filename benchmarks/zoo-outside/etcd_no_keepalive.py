#!/usr/bin/env python3
"""BUG: the lease is granted with the run's TTL and never kept alive, and the holder believes
until it releases (the template as shipped, used for holds longer than the TTL): the key
expires under a holder that is merely slow, and the next one is granted beside it."""

from etcd_base import run
from etcd_leaselock import LeaseLock


class NoKeepaliveLock(LeaseLock):
    keepalive_on = False

    def holding(self):
        return self.held  # the bug: no lease clock, no keepalive


if __name__ == "__main__":
    run(NoKeepaliveLock)
