"""Entry point of one in-process client (runs inside its own container): `python3 -m
zkjepsen.workloads.inprocess SPEC.json`. No program under test: this process opens its own
kazoo session and the workload's loop drives the recipe object directly. The client pool runs
it for a spec without a `command` (client/main.py runs the ones with a program).

`InProcessLockClient` is the in-process side of the lock seam (client/lockclient.py): the
`lock`, `election`, `counter` and `rwlock` workloads run the one client loop (client/loop.py)
over it, as the recorder runs that loop over a program.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.retry import KazooRetry

from zkjepsen.client.lockclient import Answer, Doc, LockClient
from zkjepsen.client.loop import LockLoop, paths
from zkjepsen.client.main import await_start, next_process, prepare
from zkjepsen.client.recorder import Recorder
from zkjepsen.client.spec import ClientSpec
from zkjepsen.recipes.base import Token, param
from zkjepsen.workloads import get_workload
from zkjepsen.workloads.common import (
    acquire_answer,
    discard,
    error_name,
    is_definite,
    read_resource,
    release_answer,
    resource_mode,
    write_resource,
)
from zkjepsen.workloads.context import ClientContext


def main_in_process(spec: ClientSpec) -> int:

    n, nclients = spec.client, spec.nclients
    out = spec.history_file
    process = next_process(out, n, nclients)
    rec = Recorder(str(out), spec.t0_ns, n, nclients)
    rec.process = process
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # Retries stay bounded so an op under a partition ends (as info) instead of hanging forever.
    retry = {"max_tries": 3, "delay": 0.1, "backoff": 2, "max_delay": 1.0}
    zk = KazooClient(
        hosts=spec.hosts,
        timeout=spec.session_timeout_s,
        connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
        command_retry=retry,
    )
    ctx = ClientContext.of_spec(spec, rec, stop, session=zk, hosts=spec.hosts, recipe=spec.recipe)

    sessions = SessionNamer(zk, ctx.event)
    zk.add_listener(sessions.on_state)
    try:
        zk.start(timeout=spec.connect_timeout_s)
    except Exception as e:  # noqa: BLE001 - recorded, then the process ends
        ctx.event("client-error", f"could not connect: {e}")
        rec.finish()
        return 3
    sessions.name()
    if spec.start_file and not await_start(Path(spec.start_file), ctx, stop):
        ctx.event("client-error", "the runner never released the start barrier")
        rec.finish()
        return 5
    workload = get_workload(spec.workload)
    try:
        workload.run_client(ctx)
    except Exception as e:  # noqa: BLE001 - the history must say why a client stopped
        ctx.event("client-error", f"{type(e).__name__}: {e}")
        logging.exception("workload loop failed")
        return 4
    finally:
        try:
            zk.stop()
            zk.close()
        except Exception:  # noqa: BLE001
            pass
        rec.finish()  # its end: the file is whole (run/accounting.py)
    return 0


class SessionNamer:
    """The client's `session-state` events, and a `session` event naming each session it has:
    the first once connected, and after a LOST session the new one kazoo's next CONNECTED
    brings, so the phantom check matches the nodes made on it to it (as the Python driver,
    workloads/driver/server.py, does)."""

    def __init__(self, zk: Any, event: Any) -> None:
        self.zk, self.event = zk, event
        self.named: list[int] = []

    def name(self) -> None:
        sid = (self.zk.client_id or (None,))[0]
        if sid is not None and (not self.named or sid != self.named[-1]):
            self.named.append(sid)
            timeout_ms = getattr(self.zk, "_session_timeout", None)
            self.event("session", {"session_id": f"0x{sid:x}", "timeout_ms": timeout_ms})

    def on_state(self, state: Any) -> None:
        self.event("session-state", str(state))
        if str(state) == "CONNECTED" and self.named:
            self.name()


class InProcessLockClient(LockClient):
    """The LockClient of the in-process mode: the recipe object and this client's own session
    (`ctx.session`), called directly, with the classification of workloads/common.py (a definite
    refusal `fail`s, anything else is unknown). The recipe object is remade after an unknown
    outcome (it may hold a half-made node); with `abandon_unknown` the old one is dropped
    without closing it, as an application would, so what it half-made stays."""

    ready_files = True

    def __init__(self, ctx: Any, lock: str, mode: str | None = None) -> None:
        self.ctx, self.session, self.lock = ctx, ctx.session, lock
        self.mode = mode  # an rwlock's read or write side: the recipe's `with_mode(mode)`
        self.recipe: Any = None
        self.abandoned: list[Any] = []
        self.retry = param(ctx.params, "retry_writes", True)

    def start(self) -> bool:
        ctx = self.ctx
        while self.recipe is None:
            if not ctx.running():
                return False
            try:
                recipe = ctx.make_recipe(self.lock)
                # a plain mutex serves both modes: stricter than needed, still correct
                if self.mode is not None and hasattr(recipe, "with_mode"):
                    recipe = recipe.with_mode(self.mode)
                self.recipe = recipe
            except Exception as e:  # noqa: BLE001 - e.g. no connection right now
                ctx.event("recipe-error", f"{error_name(e)}: {e}")
                ctx.sleep(0.5)
        return True

    def _drop(self, after_acquire: bool) -> None:
        recipe, self.recipe = self.recipe, None
        if after_acquire and self.ctx.params.get("abandon_unknown") and not recipe.holding():
            self.abandoned.append(recipe)  # not closed: its session (and any orphan) lives on
        else:
            discard(recipe)

    def acquire(self, timeout: float) -> Answer:
        answer, usable = acquire_answer(self.recipe, timeout)
        if not usable:
            self._drop(after_acquire=True)
        return answer

    def release(self) -> Answer:
        answer, usable = release_answer(self.recipe)
        if not usable:
            self._drop(after_acquire=False)
        return answer

    def holding(self) -> bool:
        return self.recipe.holding()

    def read(self, key: str, sync: bool = False, ready: str | None = None) -> Answer:
        zk = self.session
        try:
            seen = None
            if ready is not None:
                fired = threading.Event()
                seen = zk.exists(ready, watch=lambda _e: fired.set()) is not None
            if sync:
                zk.sync(key)
            doc, stat = read_resource(zk, key)
            if ready is not None and fired.is_set():
                seen = False  # a writer deleted `ready` while we read: do not trust the data
        except Exception as e:  # noqa: BLE001 - a read changes nothing: its failure is definite
            return Answer("fail", error=error_name(e))
        return Answer("ok", Doc(doc, getattr(stat, "version", None), seen))

    def write(
        self, key: str, doc: dict[str, Any], tok: dict[str, Any], mode: str, version: int = -1
    ) -> Answer:
        token = Token(tok["token"], tok.get("seq"), tok["node"])
        try:
            stat = write_resource(self.session, key, doc, token, mode, version, self.retry)
        except Exception as e:  # noqa: BLE001
            if is_definite(e):
                return Answer("fail", error=error_name(e), detail=str(e) or None)
            return Answer("info", error=error_name(e))
        # The resource's version after our write: the order in which it accepted writes.
        return Answer("ok", getattr(stat, "version", None))

    def set_ready(self, key: str, present: bool) -> Answer:
        try:
            if present:
                try:
                    self.session.create(key, b"", makepath=True)
                except NodeExistsError:
                    pass
            else:
                try:
                    self.session.delete(key)
                except NoNodeError:
                    pass
        except Exception as e:  # noqa: BLE001 - unknown outcome: the caller stops its update
            return Answer("info", error=error_name(e))
        return Answer("ok")

    def acquire_nested(self, timeout: float) -> Answer:
        """The holder's recipe object acquired once more (no remaking: the outer level holds,
        and a failed inner level leaves the outer one as it was)."""
        return acquire_answer(self.recipe, timeout)[0]

    def release_nested(self) -> Answer:
        return release_answer(self.recipe)[0]

    def alive(self) -> None:
        """In process no program can die between calls: a broken session shows in the op."""

    def note_fault(self) -> None:
        """No ProtocolFault in process (see `alive`): nothing to record."""

    def close(self) -> None:
        for r in [*self.abandoned, *([self.recipe] if self.recipe is not None else [])]:
            discard(r)
        self.abandoned, self.recipe = [], None


def run_lock_loop(ctx: ClientContext, workload: str) -> None:
    """`lock`, `election`, `counter` and `rwlock` in-process: the one client loop over this
    process's recipe object (the rwlock's: one for each mode)."""

    resource_mode(ctx.params)  # a bad mode fails before the first op
    lock = paths(workload, ctx.params)[0]
    if workload == "rwlock":
        modes: dict[str, LockClient] = {
            m: InProcessLockClient(ctx, lock, m) for m in ("read", "write")
        }
        LockLoop(ctx, modes["write"], workload, modes).run()
    else:
        LockLoop(ctx, InProcessLockClient(ctx, lock), workload).run()


def main(spec_path: str) -> int:
    return main_in_process(prepare(spec_path))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
