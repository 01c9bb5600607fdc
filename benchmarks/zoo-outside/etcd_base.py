"""The protocol side of the etcd programs of this outside zoo, after docs/templates/etcd_lock.py
(written from docs/client-protocol.md). A program supplies a lock class and calls
`run(LockClass)`.

The lock class: `__init__(etcd, key, ttl_s)` where `etcd` is an `Endpoints` (below),
`acquire(timeout_s) -> token (the key's create revision) or None`, `release()`,
`holding() -> bool`, `cleanup()` (give the lock up, best effort), and `held` (a grant).

`Endpoints` keeps one etcd3 client per member and moves to the next member when a call
fails to connect (the template uses the first member only).
"""

from __future__ import annotations

import json
import logging
import math
import sys
import threading
import uuid

import etcd3

OUT = sys.stdout.buffer
sys.stdout = sys.stderr
WRITE_LOCK = threading.Lock()
log = logging.getLogger("zoo-outside")


def send(msg: dict) -> None:
    with WRITE_LOCK:
        OUT.write((json.dumps(msg) + "\n").encode())
        OUT.flush()


class Endpoints:
    def __init__(self, servers: str, timeout: float = 2.0) -> None:
        self.addrs = [s.rpartition(":") for s in servers.split(",")]
        self.clients = [
            etcd3.client(host=h, port=int(p), timeout=timeout) for h, _, p in self.addrs
        ]
        self.i = 0
        self.mu = threading.Lock()

    @property
    def c(self) -> etcd3.Etcd3Client:
        return self.clients[self.i]

    def call(self, name: str, *args, **kw):
        """One call on the current member; on a connection failure move to the next member
        and raise (the caller decides whether the call may have happened)."""
        i = self.i
        try:
            out = getattr(self.clients[i], name)(*args, **kw)
            if name == "refresh_lease":  # a generator: its errors come as it is read
                out = list(out)
            return out
        except (etcd3.exceptions.ConnectionFailedError, etcd3.exceptions.ConnectionTimeoutError):
            with self.mu:
                if self.i == i:
                    self.i = (i + 1) % len(self.clients)
            raise

    @property
    def tx(self):
        return self.c.transactions


class Driver:
    def __init__(self, lock_cls) -> None:
        self.lock_cls = lock_cls
        self.lock = None
        self.token: int | None = None

    def init(self, req: dict):
        params = req.get("params") or {}
        self.ttl_s = max(
            1, math.ceil(float(params.get("lock_ttl_s") or req["session_timeout_ms"] / 1000))
        )
        self.lock_key = "/locks/" + req["lock_path"].lstrip("/")
        self.lock_path = req["lock_path"]
        self.etcd = Endpoints(req["servers"])
        for _ in range(len(self.etcd.clients) * 3):
            try:
                self.etcd.call("status")
                break
            except Exception as e:  # noqa: BLE001
                log.info("init: %r", e)
        else:
            return "fail", None, "could not reach any member"
        return (
            "ok",
            {"session_id": f"etcd-{uuid.uuid4().hex[:8]}", "timeout_ms": self.ttl_s * 1000},
            None,
        )

    def drop(self) -> None:
        lock, self.lock, self.token = self.lock, None, None
        if lock is not None:
            try:
                lock.cleanup()
            except Exception:  # noqa: BLE001
                log.exception("cleanup")

    def acquire(self, req: dict):
        if self.lock is None:
            self.lock = self.lock_cls(self.etcd, self.lock_key, self.ttl_s)
        try:
            token = self.lock.acquire(req["timeout_ms"] / 1000)
        except Exception as e:  # noqa: BLE001
            log.warning("acquire: %r", e)
            self.drop()
            return "info", None, type(e).__name__
        if token is None:
            return "fail", None, "timeout"
        self.token = token
        return "ok", {"token": token, "node": f"{self.lock_path}/{token:010d}"}, None

    def release(self, req: dict):
        lock, self.lock, self.token = self.lock, None, None
        try:
            if lock is not None:
                lock.release()
        except Exception as e:  # noqa: BLE001
            if lock is not None:
                lock.cleanup()
            return "info", None, type(e).__name__
        return "ok", None, None

    def holding(self, req: dict):
        return "ok", bool(self.lock and self.lock.holding()), None

    def read(self, req: dict):
        try:
            value, meta = self.etcd.call("get", "/zkjepsen/res" + req["path"])
        except Exception as e:  # noqa: BLE001
            return "fail", None, type(e).__name__
        if meta is None:
            return "fail", None, "NoNode"
        return "ok", {"data": value.decode(), "version": meta.version - 1}, None

    def write(self, req: dict):
        key, tx = "/zkjepsen/res" + req["path"], self.etcd.tx
        checks = []
        if req.get("fenced"):
            if self.token is None or not (self.lock and self.lock.holding()):
                return "fail", None, "Fenced"
            checks.append(tx.create(self.lock_key) == self.token)
        if req.get("version", -1) != -1:
            checks.append(tx.version(key) == req["version"] + 1)
        try:
            ok, responses = self.etcd.call(
                "transaction",
                compare=checks,
                success=[tx.put(key, req["data"]), tx.get(key)],
                failure=[],
            )
        except Exception as e:  # noqa: BLE001
            return "info", None, type(e).__name__
        if not ok:
            return "fail", None, "Fenced" if req.get("fenced") else "BadVersion"
        ((_, meta),) = responses[1]
        return "ok", {"version": meta.version - 1}, None

    def close(self, req: dict):
        self.drop()
        return "ok", None, None


def run(lock_cls) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    d = Driver(lock_cls)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            type_, value, error = getattr(d, req["op"])(req)
        except Exception as e:  # noqa: BLE001
            type_, value, error = "info", None, f"{type(e).__name__}: {e}"
        msg = {"in_reply_to": req["id"], "type": type_, "value": value}
        send({**msg, "error": error} if error else msg)
        if req["op"] == "close":
            return
