#!/usr/bin/env python3
"""A client program for zkjepsen, in Python: copy it, put YOUR lock in `make_lock`, run

    zkjepsen client check "python3 python_driver.py"          # does it speak the protocol?
    zkjepsen test --client-cmd "python3 python_driver.py" --workload lock \
        --param resource=fenced --nemesis pause-client --clients 5

It speaks the client wire protocol (docs/client-protocol.md): one JSON request per line on
stdin, one JSON answer per line on stdout, logs on stderr. It needs only kazoo (the client image
has it on PYTHONPATH). As shipped it tests kazoo's own `Lock`.
"""

from __future__ import annotations

import json
import logging
import sys
import threading

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    LockTimeout,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
)
from kazoo.retry import KazooRetry

OUT = sys.stdout.buffer
sys.stdout = sys.stderr  # a stray print() must not reach the protocol
WRITE_LOCK = threading.Lock()
DEFINITE = {BadVersionError: "BadVersion", NoNodeError: "NoNode", NodeExistsError: "NodeExists"}


def send(msg: dict) -> None:
    with WRITE_LOCK:  # events come from kazoo's thread, answers from the main one
        OUT.write((json.dumps(msg) + "\n").encode())
        OUT.flush()


class Fenced(Exception):
    pass


# ---- YOUR LOCK GOES HERE -------------------------------------------------------------------
class YourLock:
    """acquire(timeout_s) -> the path of your own lock node, or None on timeout; release();
    holding() -> does your application believe it holds the lock?"""

    def __init__(self, zk: KazooClient, path: str, identifier: str) -> None:
        from kazoo.recipe.lock import Lock

        self.lock = Lock(zk, path, identifier)
        self.path = path

    def acquire(self, timeout_s: float) -> str | None:
        try:
            if not self.lock.acquire(timeout=timeout_s):
                return None
        except LockTimeout:
            return None
        return f"{self.path}/{self.lock.node}"

    def release(self) -> None:
        self.lock.release()

    def holding(self) -> bool:
        return self.lock.is_acquired


# ---------------------------------------------------------------------------------------------


class Driver:
    def __init__(self) -> None:
        self.zk: KazooClient | None = None
        self.lock: YourLock | None = None
        self.node: str | None = None
        self.init: dict = {}
        self.lost = False  # the session was LOST: kazoo's next CONNECTED is a new session

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
        """Every state as a `session-state` event; a new session (CONNECTED after LOST) also as
        a `session` event with its id: the nodes it makes are owned by that id, and without it
        the run would match them against the old session (docs/client-protocol.md)."""
        send({"event": "session-state", "value": str(state)})
        if state == KazooState.LOST:
            self.lost = True
        elif state == KazooState.CONNECTED and self.lost and self.zk is not None:
            self.lost = False
            sid = self.zk.client_id[0] if self.zk.client_id else 0
            timeout = self.zk._session_timeout
            send({"event": "session", "value": {"session_id": f"0x{sid:x}", "timeout_ms": timeout}})

    def op_acquire(self, req: dict):
        if self.lock is None:
            self.lock = YourLock(self.zk, self.init["lock_path"], f"client-{self.init['client']}")
        try:
            node = self.lock.acquire(req["timeout_ms"] / 1000)
        except Exception as e:  # noqa: BLE001 - unknown outcome: drop the lock object
            self.drop()
            return "info", None, type(e).__name__
        if node is None:
            return "fail", None, "timeout"
        stat = self.zk.exists(node)  # the fencing token is the node's czxid
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
        except Exception as e:  # noqa: BLE001 - a read changes nothing: fail is safe
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
        except Exception as e:  # noqa: BLE001 - connection loss etc.: unknown
            return "info", None, type(e).__name__
        return "ok", {"version": stat.version}, None

    def fenced_set(self, path: str, data: bytes, version: int):
        """Fencing is the application's job: check our own lock node in the same transaction."""
        if self.node is None:
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
        try:
            if self.lock is not None and self.lock.holding():
                self.lock.release()
        except Exception:  # noqa: BLE001
            pass
        self.lock, self.node = None, None


def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    driver = Driver()
    for line in sys.stdin.buffer:
        req = json.loads(line)
        try:
            type_, value, error = getattr(driver, "op_" + req["op"])(req)
        except Exception as e:  # noqa: BLE001 - a bug here: say "unknown", never crash
            logging.exception("request %s failed", req)
            type_, value, error = "info", None, type(e).__name__
        msg = {"in_reply_to": req["id"], "type": type_, "value": value}
        if error:
            msg["error"] = error
        send(msg)
        if req["op"] == "close":
            return


if __name__ == "__main__":
    main()
