#!/usr/bin/env python3
"""BUG (after the many "extend" helpers that forget the owner): the renewal is a bare
`PEXPIRE key ttl`, not a compare-and-PEXPIRE. A holder whose key expired while it was cut off
or frozen renews the NEXT holder's key when it comes back, is told "1", and believes it holds
again (and keeps the other's key alive)."""

from redis_base import run
from redis_renewlock import RenewLock


class PexpireBlindLock(RenewLock):
    def renew_once(self):
        return bool(self.r.pexpire(self.key, self.ttl_ms))  # the bug: whose key?


if __name__ == "__main__":
    run(PexpireBlindLock)
