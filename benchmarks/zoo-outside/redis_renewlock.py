"""A careful Redis lock: `SET key <random> NX PX ttl`, renewed every third of the TTL by a
thread of ours with a compare-and-PEXPIRE script (only while the value is still ours). The
holder believes only while its key is valid by its own monotonic clock (the last renewal it
SENT that Redis confirmed, plus the TTL), and stops at once when a renewal finds the key not
ours. Release is compare-and-delete.

The buggy programs of this zoo subclass it and change ONE method.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

log = logging.getLogger("zoo-outside")
MARGIN_S = 0.05
RENEW_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
RELEASE_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RenewLock:
    def __init__(self, r, key: str, ttl_ms: int) -> None:
        self.r, self.key, self.ttl_ms = r, key, ttl_ms
        self.me = uuid.uuid4().hex
        self.held = False
        self.valid_until = 0.0
        self.stop = threading.Event()

    def take(self) -> bool:
        return bool(self.r.set(self.key, self.me, nx=True, px=self.ttl_ms))

    def renew_once(self) -> bool:
        return bool(self.r.eval(RENEW_LUA, 1, self.key, self.me, self.ttl_ms))

    def renewer(self, stop: threading.Event) -> None:
        while not stop.wait(self.ttl_ms / 3000):
            t0 = time.monotonic()
            try:
                ok = self.renew_once()
            except Exception as e:  # noqa: BLE001 - belief ends by the clock
                log.info("renewal failed: %r", e)
                continue
            if not ok:
                log.info("the key is not ours any more")
                self.held = False
                return
            self.valid_until = t0 + self.ttl_ms / 1000

    def acquire(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while True:
            t0 = time.monotonic()
            if self.take():
                break
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        self.valid_until = t0 + self.ttl_ms / 1000
        self.held = True
        self.stop = threading.Event()
        threading.Thread(target=self.renewer, args=(self.stop,), daemon=True).start()
        return True

    def release(self) -> None:
        self.held = False
        self.stop.set()
        self.r.eval(RELEASE_LUA, 1, self.key, self.me)

    def holding(self) -> bool:
        return self.held and time.monotonic() < self.valid_until - MARGIN_S

    def cleanup(self) -> None:
        self.held = False
        self.stop.set()

        def loop() -> None:
            for _ in range(20):
                try:
                    self.r.eval(RELEASE_LUA, 1, self.key, self.me)
                    return
                except Exception as e:  # noqa: BLE001
                    log.info("cleanup retry: %r", e)
                    time.sleep(0.3)

        threading.Thread(target=loop, daemon=True).start()
