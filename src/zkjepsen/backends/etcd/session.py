"""A client session with etcd, shaped for the workloads (backends/session.py): the protected
resource and its fence, and the `etcd3` client the Python lock recipes (recipes/etcd3_lock.py)
lock with.

The resource is one etcd key per workload path (`/zkjepsen/res<path>`); its `version` is etcd's
own per-key version (1 at creation), less one, so it counts the accepted writes as ZooKeeper's
does. Writes go as transactions through etcd's JSON gateway (gateway.py, the standard library
only: the same code on the host and in the clients):
- unguarded: `Put`, or `If(Version(key) == v + 1) Put` for a conditional write;
- fenced: `If(CreateRevision(lock key) == token) Put`, etcd's documented fencing and what
  Jepsen's etcd 3.4.3 analysis recommends: the token is the revision that created the
  holder's lock key; once the key is gone (released, or its lease expired) or another holder
  made it anew, its create revision differs and the write is refused (`Fenced`, definite).
  The failure branch reads the lock key and the resource in the same transaction, so the
  refusal says which compare failed.

The lock key to fence with is the one this session handed the recipe (`lock_key(path)`,
etcd3's `/locks/<name>`). Every request has a timeout (`ZKJEPSEN_ETCD_OP_TIMEOUT_S`, 2 s): a
request without an answer is an unknown outcome (`gateway.Unreachable`), never retried; the
next request goes to the next member.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

from kazoo.exceptions import NodeExistsError, NoNodeError

from zkjepsen.backends.etcd import gateway
from zkjepsen.backends.etcd.gateway import b64, field, kv
from zkjepsen.backends.session import BadVersion, Fenced, Stat, close_quietly

OP_TIMEOUT_S = float(os.environ.get("ZKJEPSEN_ETCD_OP_TIMEOUT_S", "2.0"))
RESOURCE_PREFIX = "/zkjepsen/res"
LOCK_PREFIX = "/locks/"  # etcd3's Lock.lock_prefix: its key is /locks/<name>


def compare(key: bytes, target: str, value: int, result: str = "EQUAL") -> dict[str, Any]:
    """A txn compare; target VERSION | CREATE | MOD with its int64 field."""
    name = {"VERSION": "version", "CREATE": "create_revision", "MOD": "mod_revision"}[target]
    return {"key": b64(key), "target": target, "result": result, name: str(value)}


def put(key: bytes, value: bytes) -> dict[str, Any]:
    return {"request_put": {"key": b64(key), "value": b64(value)}}


def get(key: bytes) -> dict[str, Any]:
    return {"request_range": {"key": b64(key)}}


def ranged(response: dict[str, Any]) -> dict[str, Any] | None:
    """The key-value of a txn's range response (None: no such key)."""
    kvs = (field(response, "response_range") or {}).get("kvs") or []
    return kv(kvs[0]) if kvs else None


class EtcdSession:
    """`EtcdSession(hosts, timeout=lock TTL seconds)`, hosts `ip:2379,...`: kazoo-shaped."""

    def __init__(self, hosts: str, timeout: float = 4.0, **_: Any) -> None:
        self.hosts = hosts
        self.timeout = timeout  # the lock's TTL unless lock_ttl_s says otherwise
        self.endpoints = [h.strip() for h in hosts.split(",") if h.strip()]
        random.shuffle(self.endpoints)  # clients spread over the members, as kazoo's do
        self.at = 0  # the member the next request goes to
        self.fence_key: bytes | None = None  # the lock key handed to the recipe
        self._etcd: Any = None

    # -- lifecycle (kazoo-shaped) -----------------------------------------------------------
    def start(self, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while True:  # as kazoo's start(timeout): return once a member answers a read
            try:
                self.txn([], [get(b"/zkjepsen/ping")], [])
                return
            except (gateway.Unreachable, RuntimeError):
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        etcd, self._etcd = self._etcd, None
        close_quietly(etcd)

    def close(self) -> None:
        self.stop()

    @property
    def session_id(self) -> str:
        """The lock's lease is the session; name the client process (the history's event)."""
        return f"etcd-{os.getpid()}-{id(self):x}"

    # -- the etcd3 client (inside the client containers) ---------------------------------------
    @property
    def etcd(self) -> Any:
        """An `etcd3` client over every member: gRPC's `ipv4:` target with pick_first, so a
        dead member's clients move on to the next (etcd3 0.12 itself takes one host)."""
        if self._etcd is None:
            # here, not at the top: a service's client library, loaded by runs of that service
            import etcd3

            target = "ipv4:" + ",".join(self.endpoints)  # etcd3 joins f"{host}:{port}"
            host, _, port = target.rpartition(":")
            self._etcd = etcd3.client(host=host, port=int(port), timeout=OP_TIMEOUT_S)
        return self._etcd

    def lock_key(self, lock_path: str) -> str:
        """The name of the recipe's etcd3 Lock; its key (`/locks/<name>`) is the fence's."""
        name = lock_path.lstrip("/")
        self.fence_key = (LOCK_PREFIX + name).encode()
        return name

    # -- the protected resource -------------------------------------------------------------
    def ensure_path(self, path: str) -> None:
        pass  # etcd keys need no parents

    def sync(self, path: str) -> None:
        pass  # reads are linearizable (etcd's default): they go through the leader's quorum

    def create(self, path: str, value: bytes = b"") -> str:

        key = self._key(path)
        out = self.txn([compare(key, "CREATE", 0)], [put(key, value)], [])
        if not out.get("succeeded"):
            raise NodeExistsError()
        return path

    def get(self, path: str) -> tuple[bytes | None, Stat]:

        found = ranged(self.txn([], [get(self._key(path))], [])["responses"][0])
        if found is None:
            raise NoNodeError()
        return found["value"], Stat(found["version"] - 1)

    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        return self._write(path, data, version, None)

    def fenced_set(self, path: str, data: bytes, version: int, token: int | None) -> Stat:
        if token is None or self.fence_key is None:
            raise Fenced("no lock key revision to fence with")
        return self._write(path, data, version, token)

    def _write(self, path: str, data: bytes, version: int, token: int | None) -> Stat:
        key = self._key(path)
        checks = []
        if token is not None:
            assert self.fence_key is not None
            checks.append(compare(self.fence_key, "CREATE", token))
        if version != -1:
            checks.append(compare(key, "VERSION", version + 1))
        why = [get(self.fence_key)] if token is not None and self.fence_key else []
        out = self.txn(checks, [put(key, data), get(key)], [*why, get(key)])
        responses = out.get("responses") or []
        if out.get("succeeded"):
            found = ranged(responses[1])
            return Stat((found["version"] if found else 1) - 1)
        if token is not None:
            holder = ranged(responses[0])
            now = holder["create_revision"] if holder else 0
            if now != token:
                raise Fenced(f"lock key created at revision {now}, not {token}")
        found = ranged(responses[-1])
        raise BadVersion(f"version {(found['version'] - 1) if found else None}, not {version}")

    # -- who holds, as the service sees it (run/observer.py) ------------------------------------
    def lock_holders(self) -> list[int]:
        """The create revisions of every key that is not the runner's (the resources): the
        lock keys of whatever recipe or program, identified as the protocol's token is."""
        whole = {"request_range": {"key": b64(b"\0"), "range_end": b64(b"\0"), "keys_only": True}}
        found = field(self.txn([], [whole], [])["responses"][0], "response_range") or {}
        revisions = []
        for raw in found.get("kvs") or []:
            one = kv(raw)
            if not one["key"].startswith(RESOURCE_PREFIX.encode()):
                revisions.append(one["create_revision"])
        return sorted(revisions)

    # -- requests ---------------------------------------------------------------------------
    def txn(self, checks: list, success: list, failure: list) -> dict[str, Any]:
        """One transaction on the current member; no answer moves on to the next member and
        raises (the outcome is unknown)."""
        body = {"compare": checks, "success": success, "failure": failure}
        address = self.endpoints[self.at % len(self.endpoints)]
        try:
            return gateway.call(address, "v3/kv/txn", body, OP_TIMEOUT_S)
        except gateway.Unreachable:
            self.at += 1
            raise

    @staticmethod
    def _key(path: str) -> bytes:
        return (RESOURCE_PREFIX + path).encode()
