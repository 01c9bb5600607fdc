"""A careful etcd lock: one key put if absent in a transaction, with a lease of the run's
TTL kept alive every third of it by a thread of ours. The holder believes only while its lease
is valid by its own monotonic clock (the last keepalive it SENT that etcd answered, plus the
TTL etcd answered) and stops at once when a keepalive says the lease is gone (TTL 0). Release
deletes the key only if it is still ours, then revokes the lease. The token is the key's create
revision (docs/client-protocol.md, etcd).

The buggy programs of this zoo subclass it and change ONE method.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

log = logging.getLogger("zoo-outside")
MARGIN_S = 0.05


class Unknown(Exception):
    pass


class LeaseLock:
    keepalive_on = True

    def __init__(self, etcd, key: str, ttl_s: int) -> None:
        self.etcd, self.key, self.ttl_s = etcd, key, ttl_s
        self.me = uuid.uuid4().hex.encode()
        self.lease_id: int | None = None
        self.held = False
        self.valid_until = 0.0
        self.stop = threading.Event()

    # -- the lease -----------------------------------------------------------------------
    def grant(self) -> None:
        t0 = time.monotonic()
        lease = self.etcd.call("lease", self.ttl_s)
        self.lease_id = lease.id
        self.valid_until = t0 + self.ttl_s
        self.stop = threading.Event()
        if self.keepalive_on:
            threading.Thread(target=self.keepalive, args=(self.stop,), daemon=True).start()

    def keepalive(self, stop: threading.Event) -> None:
        while not stop.wait(self.ttl_s / 3):
            t0 = time.monotonic()
            try:
                answers = self.etcd.call("refresh_lease", self.lease_id)
            except Exception as e:  # noqa: BLE001 - belief ends by the clock
                log.info("keepalive failed: %r", e)
                continue
            ttl = answers[0].TTL if answers else 0
            if ttl <= 0:
                log.info("lease %s is gone", self.lease_id)
                self.held = False
                return
            self.valid_until = t0 + ttl

    def revoke(self) -> None:
        self.stop.set()
        lease_id, self.lease_id = self.lease_id, None
        if lease_id is None:
            return

        def loop() -> None:
            for _ in range(20):
                try:
                    self.etcd.call("revoke_lease", lease_id)
                    return
                except Exception as e:  # noqa: BLE001
                    if "not found" in str(e).lower():
                        return
                    log.info("revoke retry: %r", e)
                    time.sleep(0.3)

        threading.Thread(target=loop, daemon=True).start()

    # -- the lock ------------------------------------------------------------------------
    def try_once(self) -> bool:
        tx = self.etcd.tx
        ok, _ = self.etcd.call(
            "transaction",
            compare=[tx.create(self.key) == 0],
            success=[tx.put(self.key, self.me, lease=self.lease_id)],
            failure=[],
        )
        return ok

    def wait(self, left_s: float) -> None:
        time.sleep(min(left_s, 0.05))

    def token(self) -> int:
        value, meta = self.etcd.call("get", self.key)
        if value != self.me:
            raise Unknown("the key we put is not ours any more")
        return meta.create_revision

    def acquire(self, timeout_s: float) -> int | None:
        deadline = time.monotonic() + timeout_s
        self.grant()
        while not self.try_once():
            left = deadline - time.monotonic()
            if left <= 0:
                self.held = False
                self.revoke()
                return None
            self.wait(left)
        token = self.token()
        self.held = True
        return token

    def release(self) -> None:
        self.held = False
        tx = self.etcd.tx
        self.etcd.call(
            "transaction",
            compare=[tx.value(self.key) == self.me],
            success=[tx.delete(self.key)],
            failure=[],
        )
        self.revoke()

    def holding(self) -> bool:
        return self.held and time.monotonic() < self.valid_until - MARGIN_S

    def cleanup(self) -> None:
        self.held = False
        self.revoke()  # the key goes with the lease
