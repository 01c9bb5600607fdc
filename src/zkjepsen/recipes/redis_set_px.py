"""The single-instance Redis lock of Redis's documentation ("Distributed locks with Redis",
the correct implementation with a single instance): `SET key <random value> NX PX ttl`, and
release by a Lua script that deletes the key only if it still holds our value.

Source: https://redis.io/docs/latest/develop/use/patterns/distributed-locks/ (the single
instance section).

Expected flaws:
- a holder paused (GC, VM stall) or cut off past the TTL keeps believing it holds while the
  key expires and another client acquires: a split holder. The compare-and-delete keeps its
  late release from deleting the new holder's key, but its late writes still land unless the
  resource checks a fencing token (`--param resource=fenced`);
- with a replica and Sentinel, the key is replicated asynchronously: after a failover the
  promoted replica may never have seen it, and a second client acquires while the first holds.

The application believes it holds from a successful acquire until it releases. The token in
the history is `INCR` of a per-lock counter drawn right after the acquisition (the pattern has
none; Kleppmann's fencing adds one). The TTL is `lock_ttl_s` (default: the session timeout).
"""

from __future__ import annotations

import os
import time

from zkjepsen.recipes.base import RedisRecipe, Token, service_token

RETRY_S = 0.05
# KEYS[1] the lock; ARGV[1] our value. Deletes only our own key.
UNLOCK_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class SetPxLock(RedisRecipe):
    def setup(self) -> None:
        super().setup()
        self.value: bytes | None = None  # our random value, while we believe we hold
        self.unlock = self.session.redis.register_script(UNLOCK_LUA)

    def acquire(self, timeout: float | None) -> Token | None:
        deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
        value = f"{self.identifier}:{os.urandom(10).hex()}".encode()
        while True:
            if self.session.redis.set(self.key, value, nx=True, px=self.ttl_ms):
                self.value = value
                token = self.session.next_token(self.path)
                return service_token(self.path, token)
            if time.monotonic() >= deadline:
                return None
            time.sleep(RETRY_S)

    def release(self) -> None:
        value, self.value = self.value, None
        if value is not None:
            self.unlock(keys=[self.key], args=[value])

    def holding(self) -> bool:
        return self.value is not None
