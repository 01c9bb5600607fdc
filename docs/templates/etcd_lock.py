#!/usr/bin/env python3
"""A client program for zkjepsen on etcd, written from docs/client-protocol.md alone: copy it,
put YOUR lock in `YourLock`, run (etcd's own image runs etcd's clients: it has `etcd3`)

    zkjepsen client check --backend etcd --in-image "python3 etcd_lock.py" --client-dir .
    zkjepsen test --backend etcd --client-cmd "python3 etcd_lock.py" --client-dir . \
        --workload lock --param resource=fenced --nemesis pause-client --clients 5

As shipped the lock is a key put with a lease if absent (etcd3's `Lock`, by hand): the lease
is never refreshed, so a holder paused past its TTL still believes it holds.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
import uuid

import etcd3

OUT = sys.stdout.buffer
sys.stdout = sys.stderr  # a stray print() must not reach the protocol
WRITE_LOCK = threading.Lock()


def send(msg: dict) -> None:
    with WRITE_LOCK:
        OUT.write((json.dumps(msg) + "\n").encode())
        OUT.flush()


# ---- YOUR LOCK GOES HERE -------------------------------------------------------------------
class YourLock:
    """acquire(timeout_s) -> the key's create revision (the token) or None; release();
    holding() -> the application's belief."""

    def __init__(self, etcd: etcd3.Etcd3Client, key: str, ttl_s: int) -> None:
        self.etcd, self.key, self.ttl_s = etcd, key, ttl_s
        self.me = uuid.uuid4().hex.encode()
        self.held = False

    def acquire(self, timeout_s: float) -> int | None:
        deadline = time.monotonic() + timeout_s
        tx = self.etcd.transactions
        while True:
            lease = self.etcd.lease(self.ttl_s)
            ok, _ = self.etcd.transaction(
                compare=[tx.create(self.key) == 0],
                success=[tx.put(self.key, self.me, lease=lease)],
                failure=[],
            )
            if ok:
                break
            lease.revoke()
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)
        self.held = True
        value, meta = self.etcd.get(self.key)
        return meta.create_revision if value == self.me else None

    def release(self) -> None:
        self.held = False
        tx = self.etcd.transactions
        self.etcd.transaction(
            compare=[tx.value(self.key) == self.me], success=[tx.delete(self.key)], failure=[]
        )

    def holding(self) -> bool:
        return self.held


# ---- the protocol ---------------------------------------------------------------------------
class Driver:
    def __init__(self) -> None:
        self.lock: YourLock | None = None
        self.token: int | None = None

    def init(self, req: dict) -> tuple[str, object, str | None]:
        host, _, port = req["servers"].split(",")[0].rpartition(":")
        params = req.get("params") or {}
        self.ttl_s = max(
            1, math.ceil(float(params.get("lock_ttl_s") or req["session_timeout_ms"] / 1000))
        )
        self.lock_key = "/locks/" + req["lock_path"].lstrip("/")
        self.lock_path = req["lock_path"]
        self.etcd = etcd3.client(host=host, port=int(port), timeout=2)
        self.etcd.status()  # connected
        return (
            "ok",
            {"session_id": f"etcd-{uuid.uuid4().hex[:8]}", "timeout_ms": self.ttl_s * 1000},
            None,
        )

    def acquire(self, req: dict) -> tuple[str, object, str | None]:
        if self.lock is None:
            self.lock = YourLock(self.etcd, self.lock_key, self.ttl_s)
        try:
            token = self.lock.acquire(req["timeout_ms"] / 1000)
        except Exception as e:  # noqa: BLE001 - grpc's errors: the outcome is unknown
            self.lock, self.token = None, None
            return "info", None, type(e).__name__
        if not self.lock.held:
            return "fail", None, "timeout"
        self.token = token
        node = f"{self.lock_path}/{token:010d}" if token else f"{self.lock_path}/lost"
        return "ok", {"token": token, "node": node}, None

    def release(self, req: dict) -> tuple[str, object, str | None]:
        lock, self.lock, self.token = self.lock, None, None
        try:
            if lock is not None:
                lock.release()
        except Exception as e:  # noqa: BLE001
            return "info", None, type(e).__name__
        return "ok", None, None

    def holding(self, req: dict) -> tuple[str, object, str | None]:
        return "ok", bool(self.lock and self.lock.holding()), None

    def read(self, req: dict) -> tuple[str, object, str | None]:
        try:
            value, meta = self.etcd.get("/zkjepsen/res" + req["path"])
        except Exception as e:  # noqa: BLE001 - a read changes nothing: fail is safe
            return "fail", None, type(e).__name__
        if meta is None:
            return "fail", None, "NoNode"
        return "ok", {"data": value.decode(), "version": meta.version - 1}, None

    def write(self, req: dict) -> tuple[str, object, str | None]:
        key, tx = "/zkjepsen/res" + req["path"], self.etcd.transactions
        checks = []
        if req.get("fenced"):
            if self.token is None:
                return "fail", None, "Fenced"
            checks.append(tx.create(self.lock_key) == self.token)
        if req.get("version", -1) != -1:
            checks.append(tx.version(key) == req["version"] + 1)
        try:
            ok, responses = self.etcd.transaction(
                compare=checks, success=[tx.put(key, req["data"]), tx.get(key)], failure=[]
            )
        except Exception as e:  # noqa: BLE001 - the answer was lost: it may have landed
            return "info", None, type(e).__name__
        if not ok:
            return "fail", None, "Fenced" if req.get("fenced") else "BadVersion"
        ((_, meta),) = responses[1]
        return "ok", {"version": meta.version - 1}, None

    def close(self, req: dict) -> tuple[str, object, str | None]:
        return "ok", None, None


def main() -> None:
    d = Driver()
    for line in sys.stdin:
        req = json.loads(line)
        try:
            type_, value, error = getattr(d, req["op"])(req)
        except Exception as e:  # noqa: BLE001 - anything unclassified: it may have happened
            type_, value, error = "info", None, f"{type(e).__name__}: {e}"
        msg = {"in_reply_to": req["id"], "type": type_, "value": value}
        send({**msg, "error": error} if error else msg)
        if req["op"] == "close":
            return


if __name__ == "__main__":
    main()
