#!/usr/bin/env python3
"""BUG (check-then-act): `EXISTS key`, then a plain `SET key me PX ttl` (no NX). Two waiters
that poll between one holder's release and the next SET both see it free and both take it."""

from redis_base import run
from redis_renewlock import RenewLock


class ExistsThenSetLock(RenewLock):
    def take(self):
        if self.r.exists(self.key):
            return False
        return bool(self.r.set(self.key, self.me, px=self.ttl_ms))  # the bug: no NX


if __name__ == "__main__":
    run(ExistsThenSetLock)
