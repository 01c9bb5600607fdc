"""The zoo's ZooKeeper half: the client wire protocol (docs/client-protocol.md, as
docs/templates/python_driver.py speaks it) around a lock recipe, and that recipe written
correctly, so that each zoo program below changes ONE thing. Needs only kazoo (the ZooKeeper
client image has it).

The recipe is ZooKeeper's own (ephemeral sequential nodes, each waiter watching the node just
ahead of it), done right: a GUID in each node's name, so a create whose reply was lost is found
again (ZOOKEEPER-1262); a re-list of the children after every wake-up; a release that retries
its delete until the server answered; SUSPENDED and LOST end the belief at once; a wait wakes
when the session ends. Writes are fenced when asked: a multi that checks the writer's own lock
node (the template's fence).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
import uuid
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    RolledBackError,
    SessionExpiredError,
)
from kazoo.retry import KazooRetry

OUT = sys.stdout.buffer
sys.stdout = sys.stderr  # a stray print() must not reach the protocol
WRITE_LOCK = threading.Lock()
DEFINITE = {BadVersionError: "BadVersion", NoNodeError: "NoNode", NodeExistsError: "NodeExists"}
LOST_REPLY = (ConnectionLoss, OperationTimeoutError)


def send(msg: dict) -> None:
    with WRITE_LOCK:  # events come from kazoo's thread, answers from the main one
        OUT.write((json.dumps(msg) + "\n").encode())
        OUT.flush()


class NodeGone(Exception):
    """Our own lock node is gone (the session expired): the acquire's outcome is unknown."""


def seq(name: str) -> str:
    return name[-10:]


class QueueLock:
    """acquire(timeout_s) -> our node's path or None; release(); holding()."""

    def __init__(self, zk: KazooClient, path: str, ident: str) -> None:
        self.zk, self.path, self.ident = zk, path, ident
        self.guid = uuid.uuid4().hex
        self.node: str | None = None  # our node's full path
        self.held = False
        self.wake = threading.Event()  # set when the session changes: a wait must look again
        zk.add_listener(self.on_state)

    # -- session states ---------------------------------------------------------------------
    def on_state(self, state: str) -> None:
        if state != KazooState.CONNECTED:
            self.held = False  # SUSPENDED: maybe lost; LOST: lost. Either way, stop believing.
        self.wake.set()

    # -- the steps each zoo program may get wrong --------------------------------------------
    def prefix(self) -> str:
        return f"{self.guid}-lock-"

    def create(self) -> str:
        """Our node; after a lost reply, the node the server may have made is found by GUID."""
        for _ in range(50):
            try:
                return self.zk.create(
                    f"{self.path}/{self.prefix()}",
                    self.ident.encode(),
                    ephemeral=True,
                    sequence=True,
                    makepath=True,
                )
            except LOST_REPLY:
                self.connected()
                mine = self.find_own()
                if mine is not None:
                    return mine
        raise ConnectionLoss("could not create the lock node")

    def find_own(self) -> str | None:
        for name in self.zk.get_children(self.path):
            if name.startswith(self.guid):
                return f"{self.path}/{name}"
        return None

    def connected(self, within_s: float = 30.0) -> None:
        deadline = time.monotonic() + within_s
        while self.zk.state != KazooState.CONNECTED and time.monotonic() < deadline:
            time.sleep(0.05)

    def queue(self) -> list[str]:
        return sorted(self.zk.get_children(self.path), key=seq)

    def predecessor(self, children: list[str], mine: str) -> str | None:
        """The node just ahead of ours in `children`, None if ours is first."""
        i = children.index(mine)
        return None if i == 0 else children[i - 1]

    def wait_for(self, pred: str, deadline: float) -> bool:
        """Until `pred` is gone or the session changed (True), or the deadline (False)."""
        gone = threading.Event()
        self.wake.clear()
        if self.zk.exists(f"{self.path}/{pred}", watch=lambda _: gone.set()) is None:
            return True
        while time.monotonic() < deadline:
            if gone.wait(0.05) or self.wake.is_set():
                return True
        return False

    def on_wake(self, mine: str) -> bool:
        """After a wait: True if we hold now. Right: look at the queue again."""
        return False

    def acquire(self, timeout_s: float) -> str | None:
        deadline = time.monotonic() + timeout_s
        if self.node is None:
            self.node = self.create()
        mine = self.node.rsplit("/", 1)[1]
        while True:
            children = self.queue()
            if mine not in children:
                self.node = None
                raise NodeGone(mine)
            pred = self.predecessor(children, mine)
            if pred is None:
                self.held = True
                return self.node
            if not self.wait_for(pred, deadline):
                self.give_up()
                return None
            if self.on_wake(mine):
                self.held = True
                return self.node

    def give_up(self) -> None:
        self.delete_own()

    def delete_own(self) -> None:
        """Delete our node, retrying a lost reply until the server has answered."""
        node, self.node = self.node, None
        if node is None:
            return
        retry = KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0, deadline=30)
        try:
            retry(self.zk.delete, node)
        except (NoNodeError, SessionExpiredError):
            pass  # gone already: with the session, or a retry after a delete that landed

    def release(self) -> None:
        self.held = False
        self.delete_own()

    def holding(self) -> bool:
        return self.held


class Fenced(Exception):
    pass


class Driver:
    def __init__(self, lock_class: type[QueueLock]) -> None:
        self.lock_class = lock_class
        self.zk: KazooClient | None = None
        self.lock: QueueLock | None = None
        self.node: str | None = None
        self.init: dict = {}
        self.lost = False  # the session was LOST: the next CONNECTED is a new session

    def op_init(self, req: dict) -> tuple[str, Any, str | None]:
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
        """Every state as a `session-state` event; a new session (CONNECTED after LOST) as a
        `session` event with its id, so its nodes' owner is known (client-protocol.md)."""
        send({"event": "session-state", "value": str(state)})
        if state == KazooState.LOST:
            self.lost = True
        elif state == KazooState.CONNECTED and self.lost and self.zk is not None:
            self.lost = False
            sid = self.zk.client_id[0] if self.zk.client_id else 0
            timeout = self.zk._session_timeout
            send({"event": "session", "value": {"session_id": f"0x{sid:x}", "timeout_ms": timeout}})

    def op_acquire(self, req: dict) -> tuple[str, Any, str | None]:
        assert self.zk is not None
        if self.lock is None:
            ident = f"client-{self.init['client']}"
            self.lock = self.lock_class(self.zk, self.init["lock_path"], ident)
        try:
            node = self.lock.acquire(req["timeout_ms"] / 1000)
        except Exception as e:  # noqa: BLE001 - unknown outcome: drop the lock object
            self.drop()
            return "info", None, type(e).__name__
        if node is None:
            return "fail", None, "timeout"
        try:
            stat = self.zk.exists(node)  # the fencing token is the node's czxid
        except Exception:  # noqa: BLE001 - held, token unknown
            stat = None
        self.node = node
        return "ok", {"token": stat.czxid if stat else None, "node": node}, None

    def op_release(self, req: dict) -> tuple[str, Any, str | None]:
        try:
            if self.lock is not None:
                self.lock.release()
        except Exception as e:  # noqa: BLE001
            self.drop()
            return "info", None, type(e).__name__
        self.node = None
        return "ok", None, None

    def op_holding(self, req: dict) -> tuple[str, Any, str | None]:
        return "ok", bool(self.lock is not None and self.lock.holding()), None

    def op_read(self, req: dict) -> tuple[str, Any, str | None]:
        assert self.zk is not None
        try:
            if req.get("sync"):
                self.zk.sync(req["path"])
            data, stat = self.zk.get(req["path"])
        except Exception as e:  # noqa: BLE001 - a read changes nothing: fail is safe
            return "fail", None, type(e).__name__
        return "ok", {"data": data.decode(), "version": stat.version}, None

    def op_write(self, req: dict) -> tuple[str, Any, str | None]:
        assert self.zk is not None
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

    def fenced_set(self, path: str, data: bytes, version: int) -> Any:
        """The fence: our own lock node checked in the same transaction as the write."""
        assert self.zk is not None
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

    def op_close(self, req: dict) -> tuple[str, Any, str | None]:
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


def serve(lock_class: type[QueueLock]) -> None:
    """The protocol loop: one request a line on stdin, one answer a line on stdout."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    driver = Driver(lock_class)
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
    serve(QueueLock)  # the recipe as written: the ZooKeeper control
