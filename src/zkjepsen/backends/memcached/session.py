"""A client session with memcached (pymemcache), shaped for the workloads (backends/session.py):
the protected resource, the tokens, and the server the memcached lock recipes talk to.

The resource is one item per workload path, `zkjepsen:res:<path>`, whose value is JSON
`{"data", "version", "top"}`; every write is a compare-and-set (`gets`, then `cas` on its
unique): a plain write checks the version, a fenced one also that its token is not below the
highest the resource accepted (`top`), atomically with the write, since a `cas` fails if anyone
wrote in between (then the write reads again). The token is `incr` of a per-lock counter drawn
right after an acquisition, as Redis's INCR is.

What memcached cannot offer: a token that outlives the server. The counter lives in memory
like everything else; a restarted server (kill) starts it again at 1, so tokens after a restart
repeat earlier ones, and the locks themselves are gone with it. memcached keeps no owner with a
key and cannot list keys on demand, so there is no view of who holds (no `lock_holders`).

No command is retried by the library (pymemcache's plain `Client`); every command has a socket
timeout, so a command under a partition ends (as unknown). `default_noreply=False`: pymemcache's
default sends storage commands without waiting for the answer, which would make `add` always
"succeed". Runs inside client containers (and on the host for setup and the final read).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from kazoo.exceptions import NodeExistsError

from zkjepsen.backends.session import BadVersion, Fenced, Stat, close_quietly

OP_TIMEOUT_S = float(os.environ.get("ZKJEPSEN_MEMCACHED_OP_TIMEOUT_S", "2.0"))
RESOURCE_PREFIX = "zkjepsen:res:"
LOCK_PREFIX = "zkjepsen:lock:"
FENCE_PREFIX = "zkjepsen:fence:"
CAS_TRIES = 50  # a cas that lost to another writer reads again, this many times at most


def client_for(host: str, port: int, timeout: float = OP_TIMEOUT_S) -> Any:
    """A pymemcache client with no retries, a socket timeout and replies awaited."""
    # here, not at the top: a service's client library, loaded by runs of that service
    from pymemcache.client.base import Client

    return Client(
        (host, port),
        connect_timeout=timeout,
        timeout=timeout,
        default_noreply=False,
        no_delay=True,
    )


def parse_hosts(hosts: str) -> tuple[str, int]:
    """The first `ip:port` of a connect string (the backend runs one server)."""
    host, _, port = hosts.split(",")[0].strip().rpartition(":")
    if not host:
        raise ValueError(f"not a memcached connect string: {hosts!r}")
    return host, int(port)


def fenced_value(
    stored: dict[str, Any] | None, data: str, version: int, token: int | None, fenced: bool
) -> dict[str, Any]:
    """The resource's next value, or BadVersion / Fenced: the pure rule each write applies to
    what it read (`stored`: None when the item is missing, a fresh resource)."""
    now = stored or {"data": "", "version": 0, "top": 0}
    if version != -1 and version != now["version"]:
        raise BadVersion(f"version {now['version']}, expected {version}")
    top = now.get("top") or 0
    if fenced:
        if token is None or token < top:
            raise Fenced(f"token {token} < highest accepted {top}")
        top = token
    return {"data": data, "version": now["version"] + 1, "top": top}


class MemcachedSession:
    """`MemcachedSession(hosts, timeout=lock TTL seconds)`: kazoo-shaped (start/stop/get/...)."""

    def __init__(self, hosts: str, timeout: float = 4.0, **_: Any) -> None:
        self.hosts = hosts
        self.timeout = timeout  # the lock's TTL unless lock_ttl_s says otherwise
        self.host, self.port = parse_hosts(hosts)
        self.client: Any = None

    # -- lifecycle (kazoo-shaped) -----------------------------------------------------------
    def start(self, timeout: float = 15) -> None:
        self.client = client_for(self.host, self.port)
        deadline = time.monotonic() + timeout
        while True:  # as kazoo's start(timeout): return once the server answers
            try:
                self.client.version()
                return
            except Exception:  # noqa: BLE001 - not up yet, refused, timed out
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        close_quietly(self.client)

    def close(self) -> None:
        self.client = None

    @property
    def session_id(self) -> str:
        """No sessions in memcached: name the connection (the history's `session` event)."""
        return f"memcached-{os.getpid()}-{id(self):x}"

    # -- the protected resource -------------------------------------------------------------
    def ensure_path(self, path: str) -> None:
        pass  # keys need no parents

    def sync(self, path: str) -> None:
        pass  # one server

    def create(self, path: str, value: bytes = b"") -> str:
        body = {"data": value.decode(), "version": 0, "top": 0}
        if not self.client.add(RESOURCE_PREFIX + path, json.dumps(body).encode(), expire=0):
            raise NodeExistsError()
        return path

    def get(self, path: str) -> tuple[bytes | None, Stat]:
        raw = self.client.get(RESOURCE_PREFIX + path)
        if raw is None:
            return None, Stat(0)
        body = json.loads(raw)
        return body["data"].encode(), Stat(int(body["version"]))

    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        return self._write(path, data, version, None, fenced=False)

    def fenced_set(self, path: str, data: bytes, version: int, token: int | None) -> Stat:
        return self._write(path, data, version, token, fenced=True)

    def _write(self, path: str, data: bytes, version: int, token: int | None, fenced: bool) -> Stat:
        key = RESOURCE_PREFIX + path
        for _ in range(CAS_TRIES):
            raw, unique = self.client.gets(key)
            nxt = fenced_value(
                json.loads(raw) if raw else None, data.decode(), version, token, fenced
            )
            value = json.dumps(nxt).encode()
            done = (
                self.client.add(key, value, expire=0)
                if raw is None
                else self.client.cas(key, value, unique, expire=0)
            )
            if done:
                return Stat(nxt["version"])
        raise RuntimeError(f"the resource {path} kept changing under compare-and-set")

    # -- for the lock recipes ---------------------------------------------------------------
    def next_token(self, lock_path: str) -> int:
        """The token of an acquisition: `incr` of the lock's own counter (made at 0 first)."""
        key = FENCE_PREFIX + lock_path
        n = self.client.incr(key, 1)
        if n is None:
            self.client.add(key, b"0", expire=0)
            n = self.client.incr(key, 1)
        return int(n)

    @staticmethod
    def lock_key(lock_path: str) -> str:
        return LOCK_PREFIX + lock_path
