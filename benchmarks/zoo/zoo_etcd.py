"""The zoo's etcd half: the client wire protocol (docs/client-protocol.md, as
docs/templates/etcd_lock.py speaks it) around a lock, and that lock written correctly, so that
each zoo program changes ONE thing. Needs only python3-etcd3 (etcd's own image has it).

The lock: a key put with a lease only if absent (a transaction on its create revision), the
lease kept alive by a thread every third of its TTL; the holder's belief ends when a refresh
has not succeeded for a TTL (a refresh that fails, or answers TTL 0: the lease is gone); the
release deletes the key only if it is still ours, and revokes the lease. The token is the
key's create revision; a fenced write compares the lock key's create revision with it in the
write's own transaction (the template's fence).
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
import uuid
from typing import Any

import etcd3

OUT = sys.stdout.buffer
sys.stdout = sys.stderr  # a stray print() must not reach the protocol
WRITE_LOCK = threading.Lock()


def send(msg: dict) -> None:
    with WRITE_LOCK:
        OUT.write((json.dumps(msg) + "\n").encode())
        OUT.flush()


class LeaseLock:
    """acquire(timeout_s) -> the key's create revision or None; release(); holding()."""

    def __init__(self, etcd: Any, key: str, ttl_s: int) -> None:
        self.etcd, self.key, self.ttl_s = etcd, key, ttl_s
        self.me = uuid.uuid4().hex.encode()
        self.lease: Any = None
        self.renewed = 0.0  # monotonic: the last refresh the service confirmed
        self.held = False
        self.stop = threading.Event()

    # -- the lease ---------------------------------------------------------------------------
    def new_lease(self) -> Any:
        self.lease = self.etcd.lease(self.ttl_s)
        self.renewed = time.monotonic()
        self.stop = threading.Event()
        threading.Thread(target=self.keep_alive, args=(self.lease, self.stop), daemon=True).start()
        return self.lease

    def keep_alive(self, lease: Any, stop: threading.Event) -> None:
        while not stop.wait(self.ttl_s / 3):
            asked = time.monotonic()
            try:
                ttl = [r.TTL for r in lease.refresh()]
            except Exception:  # noqa: BLE001 - unreachable: the lease runs out on its own
                ttl = []
            self.on_refresh(asked, bool(ttl) and all(t > 0 for t in ttl))

    def on_refresh(self, asked: float, ok: bool) -> None:
        if ok:
            self.renewed = asked
        elif not self.still_valid():
            self.held = False

    def still_valid(self) -> bool:
        return time.monotonic() < self.renewed + self.ttl_s

    def end_lease(self) -> None:
        self.stop.set()
        lease, self.lease = self.lease, None
        if lease is not None:
            try:
                lease.revoke()
            except Exception:  # noqa: BLE001 - it expires on its own
                pass

    # -- the lock ----------------------------------------------------------------------------
    def try_once(self) -> bool:
        tx = self.etcd.transactions
        ok, _ = self.etcd.transaction(
            compare=[tx.create(self.key) == 0],
            success=[tx.put(self.key, self.me, lease=self.lease)],
            failure=[],
        )
        return bool(ok)

    def acquire(self, timeout_s: float) -> int | None:
        deadline = time.monotonic() + timeout_s
        self.new_lease()
        while not self.try_once():
            if time.monotonic() >= deadline:
                self.end_lease()
                return None
            time.sleep(0.05)
        self.held = True
        value, meta = self.etcd.get(self.key)
        return meta.create_revision if value == self.me else None

    def delete_key(self) -> None:
        tx = self.etcd.transactions
        self.etcd.transaction(
            compare=[tx.value(self.key) == self.me], success=[tx.delete(self.key)], failure=[]
        )

    def release(self) -> None:
        self.held = False
        try:
            self.delete_key()
        finally:
            self.end_lease()

    def holding(self) -> bool:
        return self.held and self.still_valid()


class Driver:
    def __init__(self, lock_class: type[LeaseLock]) -> None:
        self.lock_class = lock_class
        self.lock: LeaseLock | None = None
        self.token: int | None = None
        self.fence_key = ""

    def init(self, req: dict) -> tuple[str, Any, str | None]:
        self.servers, self.at = req["servers"].split(","), -1
        params = req.get("params") or {}
        ttl = float(params.get("lock_ttl_s") or req["session_timeout_ms"] / 1000)
        self.ttl_s = max(1, math.ceil(ttl))
        self.lock_key = "/locks/" + req["lock_path"].lstrip("/")
        self.lock_path = req["lock_path"]
        self.failover()
        self.etcd.status()  # connected
        sid = f"etcd-{uuid.uuid4().hex[:8]}"
        return "ok", {"session_id": sid, "timeout_ms": self.ttl_s * 1000}, None

    def failover(self) -> None:
        """Talk to the next server of the list: python-etcd3 0.12's client has one endpoint,
        and a program that keeps the first server's would be cut off for good once that member
        is removed or replaced (seen: the control stuck after member-remove-leader)."""
        self.at = (self.at + 1) % len(self.servers)
        host, _, port = self.servers[self.at].rpartition(":")
        self.etcd = etcd3.client(host=host, port=int(port), timeout=2)

    def acquire(self, req: dict) -> tuple[str, Any, str | None]:
        if self.lock is None:
            self.lock = self.lock_class(self.etcd, self.lock_key, self.ttl_s)
        try:
            token = self.lock.acquire(req["timeout_ms"] / 1000)
        except Exception as e:  # noqa: BLE001 - grpc's errors: the outcome is unknown
            lock, self.lock, self.token = self.lock, None, None
            # Given up on, its lease must not be kept alive: had the put landed with its reply
            # lost, the key would stay for good and every waiter behind it (seen: a hunt of the
            # control stuck four waiters for 14 s after a partition of the leader).
            lock.end_lease()
            return "info", None, type(e).__name__
        if not self.lock.held:
            return "fail", None, "timeout"
        self.token, self.fence_key = token, self.lock.key  # the key whose revision is the token
        node = f"{self.lock_path}/{token:010d}" if token else f"{self.lock_path}/lost"
        return "ok", {"token": token, "node": node}, None

    def release(self, req: dict) -> tuple[str, Any, str | None]:
        lock, self.lock, self.token = self.lock, None, None
        try:
            if lock is not None:
                lock.release()
        except Exception as e:  # noqa: BLE001
            return "info", None, type(e).__name__
        return "ok", None, None

    def holding(self, req: dict) -> tuple[str, Any, str | None]:
        return "ok", bool(self.lock and self.lock.holding()), None

    def read(self, req: dict) -> tuple[str, Any, str | None]:
        try:
            value, meta = self.etcd.get("/zkjepsen/res" + req["path"])
        except Exception as e:  # noqa: BLE001 - a read changes nothing: fail is safe
            return "fail", None, type(e).__name__
        if meta is None:
            return "fail", None, "NoNode"
        return "ok", {"data": value.decode(), "version": meta.version - 1}, None

    def write(self, req: dict) -> tuple[str, Any, str | None]:
        key, tx = "/zkjepsen/res" + req["path"], self.etcd.transactions
        checks = []
        if req.get("fenced"):
            if self.token is None:
                return "fail", None, "Fenced"
            checks.append(tx.create(self.fence_key) == self.token)
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

    def close(self, req: dict) -> tuple[str, Any, str | None]:
        return "ok", None, None


# python-etcd3's errors when the server it talks to does not answer
UNREACHABLE = ("ConnectionFailedError", "ConnectionTimeoutError")


def serve(lock_class: type[LeaseLock]) -> None:
    """The protocol loop: one request a line on stdin, one answer a line on stdout."""
    d = Driver(lock_class)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            type_, value, error = getattr(d, req["op"])(req)
        except Exception as e:  # noqa: BLE001 - anything unclassified: it may have happened
            type_, value, error = "info", None, f"{type(e).__name__}: {e}"
        if error and error.split(":")[0] in UNREACHABLE:
            d.failover()  # the next op goes to another server (a lock in hand keeps its own)
        msg = {"in_reply_to": req["id"], "type": type_, "value": value}
        send({**msg, "error": error} if error else msg)
        if req["op"] == "close":
            return


if __name__ == "__main__":
    serve(LeaseLock)  # the lock as written: the etcd control
