"""`etcd3-python`: the `etcd3` PyPI client's `Lock` (python-etcd3 0.12.0, its last release),
as-is.

Source: https://github.com/kragniz/python-etcd3, `etcd3/locks.py`. `acquire` grants a lease
of `ttl` seconds and, in one transaction, puts `/locks/<name>` with that lease if the key does
not exist (`create_revision == 0`); otherwise it waits for any change of the key and tries
again until its timeout. `release` deletes the key if it still holds this Lock's UUID. The
lease is never kept alive (the application would call `refresh()`); the workload's holds are
far shorter than the TTL (`lock_ttl_s`, default the session timeout).

Expected flaw, the one Jepsen's etcd 3.4.3 analysis (2020-01-30) found in every lease-based
lock: a holder paused (GC, VM stall) or cut off past its TTL keeps believing it holds. Its
lease expires, etcd deletes the key, another client acquires, and the first one wakes up still
"holding" (`holding()` is the application's belief, as `Lock` keeps no other): a split holder.
Its late writes land on an unguarded resource; `--param resource=fenced` sends each write as
`If(CreateRevision(/locks/<name>) == token) Put`, which refuses them (Jepsen's advice, and
etcd's documented fencing).

The token is the lock key's create revision, read right after the acquisition (the library
throws the transaction's revision away, as its own TODO says); None when the key is already
someone else's by then.
"""

from __future__ import annotations

import math

from zkjepsen.backends.session import lock_node
from zkjepsen.recipes.base import RecipeBase, Token, param


class Etcd3Lock(RecipeBase):
    def setup(self) -> None:
        # here, not at the top: a service's client library, loaded by runs of that service
        import etcd3

        ttl_s = param(self.params, "lock_ttl_s", float(self.session.timeout))
        self.ttl = max(1, math.ceil(ttl_s))  # etcd leases are whole seconds
        name = self.session.lock_key(self.path)
        self.lock = etcd3.Lock(name, ttl=self.ttl, etcd_client=self.session.etcd)
        self.held = False

    def acquire(self, timeout: float | None) -> Token | None:
        if not self.lock.acquire(timeout=timeout):
            return None
        self.held = True
        value, meta = self.session.etcd.get(self.lock.key)
        if value != self.lock.uuid:
            return Token(None, None, f"{self.path}/lost")
        return Token(
            meta.create_revision, meta.create_revision, lock_node(self.path, meta.create_revision)
        )

    def release(self) -> None:
        self.held = False
        self.lock.release()

    def holding(self) -> bool:
        return self.held
