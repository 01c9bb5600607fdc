"""Redlock, the distributed lock over N = 5 independent Redis masters, as its author describes
it: take the start time; try `SET key <random> NX PX ttl` on every master in turn with a short
per-master timeout; the lock is held if a majority (3) said yes and the time spent is below the
TTL: validity = ttl - elapsed - drift (drift = 1 % of the ttl + 2 ms). Otherwise unlock every
master (compare-and-delete) and retry after a random delay. Release: compare-and-delete on all.
The application must finish its work within the validity time: `holding()` says true only
until then (by the client's own monotonic clock). The acquire's record says when it ends, after the
call (`valid_ms`), so the checkers end the holder's belief there (checker/nature.py
`own_lease`).

Source: https://redis.io/docs/latest/develop/use/patterns/distributed-locks/ ("The Redlock
algorithm"); the critique: Martin Kleppmann, "How to do distributed locking" (2016).

Expected flaws: no fencing token; validity is judged by the client's clock, so a process paused
after its `holding()` check (GC) or a clock that runs slow writes after the keys expired; a
master that restarts without persistence forgets the key and a second client reaches a
majority; a master whose clock jumps ahead expires the key early. (The token in the history is
`INCR` on the first master right after the acquisition, for the checkers.)
The TTL is `lock_ttl_s` (default: the session timeout).

Each acquisition records the masters that said yes (`Token.granted`, their `ip:port`): the
acquire's record names them (`granted`), and the nemesis's `shared-master` target reads them
there to hit a master the current holder's lock is on (nemesis/redlock.py).
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import replace
from typing import Any

from zkjepsen.recipes.base import RedisRecipe, Token, service_token
from zkjepsen.recipes.redis_set_px import UNLOCK_LUA  # the same compare-and-delete on each master

PER_MASTER_TIMEOUT_S = 0.05  # "small compared to the auto-release time", as the algorithm asks
CLOCK_DRIFT_FACTOR = 0.01


class Redlock(RedisRecipe):
    def setup(self) -> None:
        # here, not at the top: a service's client library, loaded by runs of that service
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        super().setup()
        self.masters = [
            redis.Redis(
                host=h,
                port=p,
                socket_timeout=PER_MASTER_TIMEOUT_S,
                socket_connect_timeout=PER_MASTER_TIMEOUT_S,
                retry=Retry(NoBackoff(), 0),
            )
            for h, p in self.session.addrs
        ]
        self.addresses = [f"{h}:{p}" for h, p in self.session.addrs]  # as the nemesis names them
        self.quorum = len(self.masters) // 2 + 1
        self.value: bytes | None = None
        self.valid_until = 0.0  # time.monotonic() until which the lock is valid

    def _lock_instance(self, m: Any, value: bytes) -> bool:
        try:
            return bool(m.set(self.key, value, nx=True, px=self.ttl_ms))
        except Exception:  # noqa: BLE001 - a master that does not answer in time: no vote
            return False

    def _unlock_all(self, value: bytes) -> None:
        for m in self.masters:
            try:
                m.eval(UNLOCK_LUA, 1, self.key, value)
            except Exception:  # noqa: BLE001 - its key expires by itself
                pass

    def acquire(self, timeout: float | None) -> Token | None:
        called = time.monotonic()  # the validity is told from here (Token.valid_ms)
        deadline = called + (timeout if timeout is not None else 1e9)
        while True:
            value = f"{self.identifier}:{os.urandom(10).hex()}".encode()
            start = time.monotonic()
            granted = tuple(
                a
                for a, m in zip(self.addresses, self.masters, strict=True)
                if self._lock_instance(m, value)
            )
            votes = len(granted)
            drift_s = (self.ttl_ms * CLOCK_DRIFT_FACTOR + 2) / 1000
            validity_s = self.ttl_ms / 1000 - (time.monotonic() - start) - drift_s
            if votes >= self.quorum and validity_s > 0:
                self.value, self.valid_until = value, start + validity_s
                try:
                    token = self.session.next_token(self.path)
                except Exception:
                    self.release()
                    raise
                # when the validity ends, after the call: its holding() says no after
                valid_ms = max(0, int((self.valid_until - called) * 1000))
                return replace(service_token(self.path, token), granted=granted, valid_ms=valid_ms)
            self._unlock_all(value)
            if time.monotonic() >= deadline:
                return None
            time.sleep(random.uniform(0.01, 0.1))  # a random delay desynchronises contenders

    def release(self) -> None:
        value, self.value = self.value, None
        if value is not None:
            self._unlock_all(value)

    def holding(self) -> bool:
        return self.value is not None and time.monotonic() < self.valid_until

    def close(self) -> None:
        for m in self.masters:
            try:
                m.close()
            except Exception:  # noqa: BLE001
                pass
