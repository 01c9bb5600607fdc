#!/usr/bin/env python3
"""BUG (units): the key is set with `ex=` (seconds) where the TTL is in milliseconds, and the
renewal with EXPIRE likewise: a 2 s lease becomes 2000 s. Nothing splits, but a holder that
dies (killed, crashed) leaves the key for half an hour: no one is granted again."""

from redis_base import run
from redis_renewlock import RenewLock


class ExUnitsLock(RenewLock):
    def take(self):
        return bool(self.r.set(self.key, self.me, nx=True, ex=self.ttl_ms))  # the bug: ms as s

    def renew_once(self):
        script = (
            "if redis.call('GET', KEYS[1]) == ARGV[1] then "
            "return redis.call('EXPIRE', KEYS[1], ARGV[2]) end return 0"
        )
        return bool(self.r.eval(script, 1, self.key, self.me, self.ttl_ms))  # same bug


if __name__ == "__main__":
    run(ExUnitsLock)
