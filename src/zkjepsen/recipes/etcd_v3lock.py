"""`etcd-v3lock` and `etcd-v3lock-nolease`: etcd's server-side lock service (`v3lock`'s
Lock/Unlock RPCs), called through etcd's own JSON gateway (`POST /v3/lock/lock`,
`/v3/lock/unlock`), as any client without gRPC calls it.

Source: etcd `server/etcdserver/api/v3lock/lock.go` (3.5.16; `etcdserver/api/v3lock/lock.go`
in 3.4.23, the same code). `Lock` runs, on the member:
`concurrency.NewSession(c, WithLease(req.Lease))`, then `s.Orphan()`, then
`concurrency.NewMutex(s, name).Lock(ctx)`, and answers with the Mutex's key; `Unlock` deletes
that key.

- `etcd-v3lock`: the client grants its own lease (`lock_ttl_s`, default the session timeout)
  and keeps it alive from a thread, as `etcdctl lock` does with its session; a Lock names it.
  Expected flaw, the one of every lease lock (Jepsen etcd 3.4.3): a holder paused or cut off
  past its lease keeps believing while its key is deleted and another client acquires.
- `etcd-v3lock-nolease`: Lock called without a lease (`lease: 0`, proto3's default, so any
  client that does not set it). `NewSession` then grants a lease of its default TTL, 60 s
  (`concurrency.defaultSessionTTL`), and `Orphan()` stops its keep-alive at once: the lock
  silently ends 60 s after it was granted, whether or not its holder is alive, and a waiter
  acquires while the holder still holds. No fault is needed, only a hold longer than 60 s
  (catalogue scenario `etcd-v3lock-orphaned-session`). Holds shorter than that are safe.

The token is the lock key's create revision (read right after the grant; the Lock answer's
header carries the revision of the moment, not the key's), and the fence compares it
(backends/etcd/session.py). A Lock whose HTTP answer does not come within the acquire's
timeout is an unknown outcome: the member cancels the call and deletes the waiter's key, but
a grant racing the cancel cannot be told apart.
"""

from __future__ import annotations

import threading
from typing import Any

from zkjepsen.backends.etcd import gateway
from zkjepsen.backends.etcd.gateway import b64, field, num, unb64
from zkjepsen.backends.etcd.session import get, ranged
from zkjepsen.backends.session import lock_node
from zkjepsen.recipes.base import RecipeBase, Token, param

SLACK_S = 1.0  # on top of the acquire's timeout, for the HTTP answer of a Lock granted late


def call(session: Any, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One gateway request to the session's current member; no answer moves the session on to
    the next member and raises (`gateway.Unreachable`: the outcome is unknown)."""
    eps = session.endpoints
    try:
        return gateway.call(eps[session.at % len(eps)], path, body, timeout)
    except gateway.Unreachable:
        session.at += 1
        raise


def wait_s(timeout: float | None) -> float:
    """How long an RPC that blocks until granted may take before it is an unknown outcome."""
    return (timeout if timeout is not None else 60.0) + SLACK_S


def lock_name(path: str) -> bytes:
    """The lock's name, the Mutex's prefix less its '/': one per workload path."""
    return ("/v3lock" + path).encode()


class GatewayLease:
    """A lease of `ttl` whole seconds granted through the gateway and kept alive from a daemon
    thread every ttl/3 (as concurrency.Session keeps its own). `lost` once a keep-alive answers
    TTL 0 (the lease is gone); a keep-alive without an answer is retried on the next member."""

    def __init__(self, session: Any, ttl: int) -> None:
        self.session, self.ttl = session, ttl
        self.id = 0
        self.lost = False
        self._stop = threading.Event()

    def call(self, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        return call(self.session, path, body, timeout)

    def grant(self) -> int:
        out = self.call("v3/lease/grant", {"TTL": str(self.ttl)}, 2.0)
        self.id, self.lost = num(out, "ID"), False
        threading.Thread(target=self._keep, args=(self.id,), daemon=True).start()
        return self.id

    def _keep(self, lease: int) -> None:
        while not self._stop.wait(self.ttl / 3) and lease == self.id:
            try:
                out = self.call("v3/lease/keepalive", {"ID": str(lease)}, 1.0)
            except (gateway.Unreachable, RuntimeError):
                continue
            if num(field(out, "result"), "TTL") <= 0:
                self.lost = True
                return

    def revoke(self) -> None:
        lease, self.id = self.id, 0
        if lease:
            try:
                self.call("v3/lease/revoke", {"ID": str(lease)}, 2.0)
            except (gateway.Unreachable, RuntimeError):
                pass  # it expires by itself

    def close(self) -> None:
        self._stop.set()
        self.revoke()


class V3Lock(RecipeBase):
    LEASE = True  # the client's own lease; False: Lock without one (the server's orphan)

    def setup(self) -> None:
        ttl = param(self.params, "lock_ttl_s", float(self.session.timeout))
        self.lease = GatewayLease(self.session, max(1, round(ttl))) if self.LEASE else None
        self.name = lock_name(self.path)
        self.key: bytes | None = None  # the Mutex's key while we believe we hold

    def acquire(self, timeout: float | None) -> Token | None:
        body: dict[str, Any] = {"name": b64(self.name)}
        if self.lease is not None:
            body["lease"] = str(self.lease_id())
        out = call(self.session, "v3/lock/lock", body, wait_s(timeout))
        key = unb64(out.get("key"))
        if not key:
            raise RuntimeError(f"Lock answered without a key: {out}")
        self.key = key
        self.session.fence_key = key  # a fenced write compares this key's create revision
        revision = self._create_revision(key)
        return Token(revision, revision, lock_node(self.path, revision or 0))

    def _create_revision(self, key: bytes) -> int | None:
        found = ranged(self.session.txn([], [get(key)], [])["responses"][0])
        return found["create_revision"] if found else None

    def lease_id(self) -> int:
        """Our lease, granted anew when we have none or the last one was lost."""
        assert self.lease is not None
        ok = self.lease.id and not self.lease.lost
        return self.lease.id if ok else self.lease.grant()

    def release(self) -> None:
        key, self.key = self.key, None
        if key is not None:
            call(self.session, "v3/lock/unlock", {"key": b64(key)}, 2.0)

    def holding(self) -> bool:
        return self.key is not None

    def close(self) -> None:
        if self.lease is not None:
            self.lease.close()  # revoking it deletes whatever key it still holds


class V3LockNoLease(V3Lock):
    LEASE = False
