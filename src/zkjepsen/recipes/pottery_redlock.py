"""`pottery-redlock`: the PyPI `pottery` library's (3.0.1) `Redlock` as shipped, over the
backend's masters (Redlock's five independent masters on `--backend redlock`, the one master on
`redis`/`redis-sentinel`); `auto_release_time` = `lock_ttl_s` (default the session timeout).
`synchronize` (pottery's decorator) is this same Redlock acquired and released around a call.

Source: https://github.com/brainix/pottery, `pottery/redlock.py`. `acquire` sends
`SET redlock:<key> <uuid> NX PX ttl` to every master at once (a thread pool) and holds when
more than half said yes within the validity time (ttl - drift - elapsed); otherwise it unlocks
and retries after a random delay up to 0.2 s until its timeout. No auto-renewal: the
application may call `extend()` up to `num_extensions` times. `release` deletes our key on
every master (compare-and-delete) and raises `ReleaseUnlockedLock` when no majority still held it.

Expected flaws: no fencing token, and validity is the client's business: a holder paused or
cut off past `auto_release_time` keeps running its critical section (neither `with Redlock`
nor `synchronize` checks anything after the acquire) while another client acquires: a split
holder, its late writes landing on an unguarded resource; a master that restarts without
persistence forgets the key (Kleppmann's critique of Redlock). And pottery#701: `locked()`
answers only for the instance it is called on (0 while another instance holds the lock), so it
cannot tell whether the lock is free (tests/integration/test_redis_backend.py shows it).

The application believes it holds from a successful acquire to its release. The token is
`INCR` on the session's (first) master right after the acquisition, as in `redlock`.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.recipes.base import RedisRecipe, Token, service_token


class PotteryRedlock(RedisRecipe):
    def setup(self) -> None:
        super().setup()
        self.lock: Any = None
        self.held = False

    def make(self) -> Any:
        """A pottery Redlock over the session's masters (pottery prefixes `redlock:`)."""
        # here, not at the top: a service's client library, loaded by runs of that service
        from pottery import Redlock

        return Redlock(
            key=self.key, masters=set(self.session.masters), auto_release_time=self.ttl_ms / 1000
        )

    def acquire(self, timeout: float | None) -> Token | None:
        self.lock = self.make()  # one per attempt, as `with Redlock(...)` and synchronize make
        if not self.lock.acquire(blocking=True, timeout=-1 if timeout is None else timeout):
            self.lock = None
            return None
        self.held = True
        try:
            token = self.session.next_token(self.path)
        except Exception:
            self.release()
            raise
        return service_token(self.path, token)

    def release(self) -> None:
        lock, self.lock, self.held = self.lock, None, False
        if lock is not None:
            lock.release()

    def holding(self) -> bool:
        return self.held
