#!/usr/bin/env python3
"""Redis, ONE bug: a lease judged by the client's clock (the SETNX/GETSET timestamp lock of
the Redis SETNX documentation of old, and of many blog posts): the key holds its holder's
expiry time in wall-clock milliseconds; a waiter that reads a time in the past by ITS clock
takes the lock with GETSET. A waiter whose clock runs ahead steals a live lock (Kleppmann 2016:
"timing assumptions").
Exposed by: clock-skew-client (ahead by 2x the TTL) on a waiter. Shows as lock:belief,
beyond a lease's nature (nobody was frozen or cut off)."""

import time

from zoo_redis import TtlLock, serve


class ClientClock(TtlLock):
    def watchdog(self, stop: object) -> None:
        pass  # the timestamp lock has no refresh: its holds are shorter than the TTL

    def try_once(self) -> int | None:
        now_ms = int(time.time() * 1000)  # BUG: this client's wall clock decides expiry
        expires = str(now_ms + self.ttl_ms + 1)
        self.me = expires  # what our key holds: the release compares it
        if self.r.setnx(self.key, expires):
            return int(self.r.incr(self.fence_key))
        seen = self.r.get(self.key)
        if seen is not None and int(seen) < now_ms:
            old = self.r.getset(self.key, expires)
            if old == seen:
                return int(self.r.incr(self.fence_key))
        return None


if __name__ == "__main__":
    serve(ClientClock)
