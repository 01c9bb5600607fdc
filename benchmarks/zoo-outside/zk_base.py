"""The protocol side of the ZooKeeper programs of this outside zoo: the shape of
docs/templates/python_driver.py, written from docs/client-protocol.md. A program supplies
a lock class and calls `run(LockClass)`.

The lock class: `__init__(zk, path, ident)`, `acquire(timeout_s) -> node path or None`,
`release()`, `holding() -> bool`, `on_state(state)` (every kazoo state change), `cleanup()`
(forget the lock: delete whatever node of ours may exist, best effort, in the background).
"""

from __future__ import annotations

import json
import logging
import sys
import threading

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
)
from kazoo.retry import KazooRetry

OUT = sys.stdout.buffer
sys.stdout = sys.stderr  # a stray print() must not reach the protocol
WRITE_LOCK = threading.Lock()
DEFINITE = {BadVersionError: "BadVersion", NoNodeError: "NoNode", NodeExistsError: "NodeExists"}
log = logging.getLogger("zoo-outside")


def send(msg: dict) -> None:
    with WRITE_LOCK:
        OUT.write((json.dumps(msg) + "\n").encode())
        OUT.flush()


class Fenced(Exception):
    pass


class Driver:
    def __init__(self, lock_cls) -> None:
        self.lock_cls = lock_cls
        self.zk: KazooClient | None = None
        self.lock = None
        self.node: str | None = None
        self.init: dict = {}
        self.lost = False

    def op_init(self, req: dict):
        self.init = req
        self.zk = KazooClient(
            hosts=req["servers"],
            timeout=req["session_timeout_ms"] / 1000,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
            command_retry={"max_tries": 3, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
        )
        self.zk.add_listener(self.on_state)
        try:
            self.zk.start(timeout=15)
        except Exception as e:  # noqa: BLE001
            return "fail", None, f"could not connect: {e}"
        sid = self.zk.client_id[0]
        return "ok", {"session_id": f"0x{sid:x}", "timeout_ms": self.zk._session_timeout}, None

    def on_state(self, state: str) -> None:
        send({"event": "session-state", "value": str(state)})
        lock = self.lock
        if lock is not None:
            lock.on_state(state)
        if state == KazooState.LOST:
            self.lost = True
        elif state == KazooState.CONNECTED and self.lost and self.zk is not None:
            self.lost = False
            sid = self.zk.client_id[0] if self.zk.client_id else 0
            send(
                {
                    "event": "session",
                    "value": {"session_id": f"0x{sid:x}", "timeout_ms": self.zk._session_timeout},
                }
            )

    def op_acquire(self, req: dict):
        if self.lock is None:
            self.lock = self.lock_cls(
                self.zk, self.init["lock_path"], f"client-{self.init['client']}"
            )
        try:
            node = self.lock.acquire(req["timeout_ms"] / 1000)
        except Exception as e:  # noqa: BLE001 - unknown outcome: drop the lock object
            log.warning("acquire: %r", e)
            self.drop()
            return "info", None, type(e).__name__
        if node is None:
            return "fail", None, "timeout"
        try:
            stat = self.zk.exists(node)
        except Exception as e:  # noqa: BLE001
            self.drop()
            return "info", None, type(e).__name__
        self.node = node
        return "ok", {"token": stat.czxid if stat else None, "node": node}, None

    def op_release(self, req: dict):
        try:
            if self.lock is not None:
                self.lock.release()
        except Exception as e:  # noqa: BLE001
            self.drop()
            return "info", None, type(e).__name__
        self.node = None
        return "ok", None, None

    def op_holding(self, req: dict):
        return "ok", bool(self.lock is not None and self.lock.holding()), None

    def op_read(self, req: dict):
        try:
            if req.get("sync"):
                self.zk.sync(req["path"])
            data, stat = self.zk.get(req["path"])
        except Exception as e:  # noqa: BLE001
            return "fail", None, type(e).__name__
        return "ok", {"data": data.decode(), "version": stat.version}, None

    def op_write(self, req: dict):
        path, data, version = req["path"], req["data"].encode(), req.get("version", -1)
        retry = KazooRetry(max_tries=10, delay=0.1, backoff=2, max_delay=1.0, ignore_expire=True)
        try:
            if req.get("fenced"):
                stat = retry(self.fenced_set, path, data, version)
            else:
                stat = retry(self.zk.set, path, data, version=version)
        except Fenced:
            return "fail", None, "Fenced"
        except tuple(DEFINITE) as e:
            return "fail", None, DEFINITE[type(e)]
        except Exception as e:  # noqa: BLE001
            return "info", None, type(e).__name__
        return "ok", {"version": stat.version}, None

    def fenced_set(self, path: str, data: bytes, version: int):
        if self.node is None or self.lock is None or not self.lock.holding():
            raise Fenced()
        t = self.zk.transaction()
        t.check(self.node, -1)
        t.set_data(path, data, version=version)
        check, result = t.commit()
        if isinstance(check, Exception) and not isinstance(check, RolledBackError):
            raise Fenced()
        if isinstance(result, Exception):
            raise result
        return result

    def op_close(self, req: dict):
        self.drop()
        if self.zk is not None:
            self.zk.stop()
            self.zk.close()
        return "ok", None, None

    def drop(self) -> None:
        lock, self.lock, self.node = self.lock, None, None
        if lock is not None:
            try:
                lock.cleanup()
            except Exception:  # noqa: BLE001
                log.exception("cleanup")


def run(lock_cls) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    driver = Driver(lock_cls)
    for line in sys.stdin.buffer:
        req = json.loads(line)
        try:
            type_, value, error = getattr(driver, "op_" + req["op"])(req)
        except Exception as e:  # noqa: BLE001
            log.exception("request %s failed", req)
            type_, value, error = "info", None, type(e).__name__
        msg = {"in_reply_to": req["id"], "type": type_, "value": value}
        if error:
            msg["error"] = error
        send(msg)
        if req["op"] == "close":
            return
