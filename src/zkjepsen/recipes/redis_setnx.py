"""The SETNX/GETSET timestamp lock, as seed 003 wrote it (Java in the article; the "handling
deadlocks" pattern of Redis's own SETNX documentation before Redis 2.6.12).

Source (seed 003's Java, as the article wrote it): acquire loops:
`expires = now + timeout + 1`; `SETNX lock expires` -> held. Otherwise `GET lock`; if that time
has passed *by this client's clock*, `GETSET lock expires` and hold only if the old value equals
what was read (nobody else got there first). Release: `DEL lock`, but only if the lock has not
yet expired by the holder's own clock. The application believes it holds from a successful
acquire until it releases (the seed's `locked` flag).

Expected flaws, all reproduced as written:
- expiry is judged by client clocks: a client whose clock runs ahead by more than the timeout
  finds a live lock "expired" and steals it with GETSET (a split holder with no other fault);
- a holder paused past the timeout keeps believing, and a waiter takes the lock over;
- the late `DEL` of a holder whose own clock says "not expired" deletes whoever holds it now;
- no fencing. (The token in the history is `INCR` of a per-lock counter drawn right after the
  acquisition, for the checkers; the seed has none. See client/services/__init__.py.)

Times are wall-clock milliseconds (`time.time()`, CLOCK_REALTIME: what libfaketime skews in
the client clock faults). The timeout is `lock_ttl_s` (default: the session timeout).
"""

from __future__ import annotations

import time

from zkjepsen.recipes.base import RedisRecipe, Token, service_token

RETRY_S = 0.05  # the seed sleeps between attempts


def now_ms() -> int:
    return int(time.time() * 1000)


class SetnxLock(RedisRecipe):
    def setup(self) -> None:
        super().setup()
        self.expires: int | None = None  # our own expiry time, while we believe we hold
        self.token: int | None = None

    def acquire(self, timeout: float | None) -> Token | None:
        r = self.session.redis
        deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
        while True:
            expires = now_ms() + self.ttl_ms + 1
            if r.setnx(self.key, expires):
                return self._held(expires)
            current = r.get(self.key)
            if current is not None and int(current) < now_ms():  # expired, by OUR clock
                old = r.getset(self.key, expires)
                if old is not None and old == current:
                    return self._held(expires)
            if time.monotonic() >= deadline:
                return None
            time.sleep(RETRY_S)

    def _held(self, expires: int) -> Token:
        self.expires = expires
        self.token = self.session.next_token(self.path)
        return service_token(self.path, self.token)

    def release(self) -> None:
        expires, self.expires = self.expires, None
        if expires is not None and now_ms() < expires:  # not expired by our own clock
            self.session.redis.delete(self.key)

    def holding(self) -> bool:
        return self.expires is not None
