"""`memcached-add`: the lock of memcached's own wiki ("Ghetto central locking", ProgrammingTricks):
`add` the lock key with a short expiry (add stores only if the key is absent, so one client
wins), do the work, `delete` the key to release.

Source: https://github.com/memcached/memcached/wiki/ProgrammingTricks (Ghetto central locking).

Expected flaws:
- a holder paused (GC, VM stall) or cut off past the expiry keeps believing it holds while the
  key expires and another client adds it: a split holder;
- `delete` removes the key whoever added it: a holder whose key already expired deletes the next
  holder's key on release, and a third client acquires beside the second (the wiki's pattern
  has no owner check, and memcached has no compare-and-delete of a value);
- one server in memory only: a restarted server has forgotten every lock.

The application believes it holds from a successful add until it releases. The token in the
history is `incr` of a per-lock counter drawn right after the acquisition (the pattern has
none; backends/memcached/session.py). The expiry is `lock_ttl_s` (default: the session
timeout), rounded up to whole seconds (memcached's unit).
"""

from __future__ import annotations

import math
import os
import time

from zkjepsen.recipes.base import RecipeBase, Token, param, service_token

RETRY_S = 0.05


class AddLock(RecipeBase):
    def setup(self) -> None:
        self.key = self.session.lock_key(self.path)
        ttl_s = param(self.params, "lock_ttl_s", float(self.session.timeout))
        self.expire = max(1, math.ceil(ttl_s))
        self.held = False

    def acquire(self, timeout: float | None) -> Token | None:
        deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
        value = f"{self.identifier}:{os.urandom(8).hex()}".encode()
        while True:
            if self.session.client.add(self.key, value, expire=self.expire):
                self.held = True
                return service_token(self.path, self.session.next_token(self.path))
            if time.monotonic() >= deadline:
                return None
            time.sleep(RETRY_S)

    def release(self) -> None:
        self.held = False
        self.session.client.delete(self.key)

    def holding(self) -> bool:
        return self.held
