"""The Python driver: one kazoo session and one recipe object, served over the client wire
protocol (docs/client-protocol.md). It does exactly what the in-process client does
(workloads/inprocess.py): the same session settings, the same classification of an acquire and a
release (workloads/common.py `acquire_answer`, `release_answer`: one code for both), the same
fenced transaction and write retries, and it drops its recipe object after an unknown outcome.

Runs inside the client containers: stdlib, kazoo and zkjepsen's recipes. Everything but protocol
lines goes to stderr (`print` included), so a chatty recipe cannot corrupt the protocol.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from typing import Any, BinaryIO

from kazoo.client import KazooClient
from kazoo.exceptions import RolledBackError
from kazoo.retry import KazooRetry

from zkjepsen.client.protocol import ProtocolFault, encode, reply
from zkjepsen.recipes import make_recipe, preload_recipe
from zkjepsen.recipes.base import param
from zkjepsen.workloads.common import (
    acquire_answer,
    discard,
    error_name,
    is_definite,
    release_answer,
    retrying,
)

NAMES = {
    "BadVersionError": "BadVersion",
    "NoNodeError": "NoNode",
    "NodeExistsError": "NodeExists",
    "Fenced": "Fenced",
}


class Fenced(Exception):
    """The fenced write was refused: our own lock node is gone (or we hold none)."""


class PythonDriver:
    def __init__(self, recipe: str, out: BinaryIO) -> None:
        self.recipe_name = recipe
        self.out = out
        self.lock = threading.Lock()
        self.zk: Any = None
        self.recipe: Any = None
        self.node: str | None = None  # our lock node while we believe we hold it
        self.init: dict[str, Any] = {}
        self.session_id: int | None = None
        self.named_session: dict[str, Any] | None = None  # the recipe's own (own_session)

    def emit(self, msg: dict[str, Any]) -> None:
        with self.lock:
            self.out.write(encode(msg))
            self.out.flush()

    def serve(self, lines: BinaryIO) -> int:
        for line in lines:
            try:
                req = json.loads(line)
                rid, op = req["id"], req["op"]
            except (ValueError, KeyError, TypeError):
                logging.error("not a request: %r", line[:200])
                continue
            handler = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
            if handler is None:
                self.emit(reply(rid, "fail", error=f"unknown op {op!r}"))
                continue
            try:
                type_, value, error = handler(req)
            except Exception as e:  # noqa: BLE001 - our own bug: the outcome is unknown
                logging.exception("%s failed", op)
                type_, value, error = "info", None, type(e).__name__
            self.emit(reply(rid, type_, value, error))
            if op == "close":
                return 0
        self.shutdown()
        return 0

    # -- ops ---------------------------------------------------------------------------------
    def op_init(self, req: dict[str, Any]) -> tuple[str, Any, str | None]:

        self.init = req
        preload_recipe(self.recipe_name)
        # As client/main.py: bounded command retries, so an op under a partition ends.
        retry = {"max_tries": 3, "delay": 0.1, "backoff": 2, "max_delay": 1.0}
        self.zk = KazooClient(
            hosts=req["servers"],
            timeout=req["session_timeout_ms"] / 1000,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
            command_retry=retry,
        )
        self.zk.add_listener(self._on_state)
        try:
            self.zk.start(timeout=15)
        except Exception as e:  # noqa: BLE001
            return "fail", None, f"could not connect: {type(e).__name__}: {e}"
        self.session_id = self.zk.client_id[0]
        return (
            "ok",
            {
                "session_id": f"0x{self.session_id:x}",
                "timeout_ms": getattr(self.zk, "_session_timeout", None),
            },
            None,
        )

    def _on_state(self, state: Any) -> None:
        self.emit({"event": "session-state", "value": str(state)})
        if str(state) == "CONNECTED" and self.session_id is not None:
            sid = (self.zk.client_id or (None,))[0]
            if sid is not None and sid != self.session_id:
                self.session_id = sid
                self.emit(
                    {
                        "event": "session",
                        "value": {
                            "session_id": f"0x{sid:x}",
                            "timeout_ms": getattr(self.zk, "_session_timeout", None),
                        },
                    }
                )

    def op_acquire(self, req: dict[str, Any]) -> tuple[str, Any, str | None]:

        if self.recipe is not None and (self.init.get("params") or {}).get("fresh_lock"):
            # The application makes a new lock object for every attempt and drops the old one
            # as it is: whatever that object failed to clean up stays behind.
            self.recipe, self.node = None, None
        if self.recipe is None:
            try:
                self.recipe = make_recipe(
                    self.recipe_name,
                    self.zk,
                    self.init["lock_path"],
                    hosts=self.init["servers"],
                    identifier=f"client-{self.init['client']}",
                    params=self.init.get("params") or {},
                )
            except Exception as e:  # noqa: BLE001 - e.g. no connection right now
                self.emit({"event": "recipe-error", "value": f"{error_name(e)}: {e}"})
                return "fail", None, "recipe-error"
            self.own_session(self.recipe)
        answer, usable = acquire_answer(self.recipe, req["timeout_ms"] / 1000)
        self.own_session(self.recipe)
        if not usable:
            self.discard()
        if answer.ok:
            self.node = answer.value["node"]
        return answer.type, answer.value, answer.error

    def own_session(self, recipe: Any) -> None:
        """A recipe that locks on a session of its own (tooz opens its own kazoo client) names
        it (`own_session()`: a `session` event's value): the client's sessions are then both,
        as the phantom check reads them (the lock node is owned by the recipe's)."""
        own = getattr(recipe, "own_session", None)
        value = own() if callable(own) else None
        if value is not None and value != self.named_session:
            self.named_session = value  # a new one after a LOST: named again
            self.emit({"event": "session", "value": value})

    def op_release(self, req: dict[str, Any]) -> tuple[str, Any, str | None]:

        if self.recipe is None:
            return "ok", None, None
        answer, usable = release_answer(self.recipe)
        if answer.ok:
            self.node = None
        if not usable:
            self.discard()
        return answer.type, None, answer.error

    def op_holding(self, req: dict[str, Any]) -> tuple[str, Any, str | None]:
        try:
            return "ok", bool(self.recipe is not None and self.recipe.holding()), None
        except Exception:  # noqa: BLE001 - cannot tell: the application stops believing
            logging.exception("holding() failed")
            return "ok", False, None

    def op_read(self, req: dict[str, Any]) -> tuple[str, Any, str | None]:
        path = req["path"]
        try:
            if req.get("sync"):
                self.zk.sync(path)
            data, stat = self.zk.get(path)
        except Exception as e:  # noqa: BLE001 - a read has no effect: fail is always safe
            return "fail", None, NAMES.get(type(e).__name__, type(e).__name__)
        return (
            "ok",
            {
                "data": data.decode(errors="replace") if data is not None else None,
                "version": stat.version,
            },
            None,
        )

    def op_write(self, req: dict[str, Any]) -> tuple[str, Any, str | None]:

        path, data = req["path"], req["data"].encode()
        version = req.get("version", -1)
        call = retrying(param(self.init.get("params"), "retry_writes", True))
        try:
            if req.get("fenced"):
                stat = call(self._fenced_set, path, data, version)
            else:
                stat = call(self.zk.set, path, data, version=version)
        except Exception as e:  # noqa: BLE001
            name = NAMES.get(type(e).__name__, type(e).__name__)
            return ("fail" if is_definite(e) or isinstance(e, Fenced) else "info"), None, name
        return "ok", {"version": stat.version}, None

    def _fenced_set(self, path: str, data: bytes, version: int) -> Any:

        if self.node is None:
            raise Fenced("no lock node to fence with")
        t = self.zk.transaction()
        t.check(self.node, -1)
        t.set_data(path, data, version=version)
        results = t.commit()
        if isinstance(results[0], Exception) and not isinstance(results[0], RolledBackError):
            raise Fenced(f"{type(results[0]).__name__} on {self.node}")
        for r in results:
            if isinstance(r, Exception) and not isinstance(r, RolledBackError):
                raise r
        return results[-1]

    def op_close(self, req: dict[str, Any]) -> tuple[str, Any, str | None]:
        self.shutdown()
        return "ok", None, None

    def discard(self) -> None:

        if self.recipe is not None:
            discard(self.recipe)
        self.recipe, self.node = None, None

    def shutdown(self) -> None:
        self.discard()
        if self.zk is not None:
            try:
                self.zk.stop()
                self.zk.close()
            except Exception:  # noqa: BLE001
                pass
            self.zk = None


def main(
    argv: list[str],
    driver: type[PythonDriver] = PythonDriver,
    module: str = "zkjepsen.workloads.driver",
) -> int:
    """Serve the protocol on stdin/stdout with `driver` (the service driver passes its own)."""
    if len(argv) != 1:
        sys.stderr.write(f"usage: python3 -m {module} RECIPE\n")
        return 2
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a recipe's print() must not reach the protocol
    try:
        return driver(argv[0], out).serve(sys.stdin.buffer)
    except (BrokenPipeError, ProtocolFault):
        return 1
