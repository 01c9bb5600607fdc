"""The recorder's side of the client wire protocol: one program under test, kept running.

`ProgramClient` starts the program, sends `init`, records its events, and turns every protocol
fault into a recorded `client-error` event plus a fresh program (after a pause), giving up after
`MAX_FAULTS` faults in a row. The client loop (client/loop.py, through client/lockclient.py)
calls it and records the ops.
Stdlib only: it runs inside the client containers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zkjepsen.client.program import Program, Stopped
from zkjepsen.client.protocol import VERSION, Event, ProtocolFault, Reply, session_problem

MAX_FAULTS = 5
INIT_TIMEOUT_S = 20.0
RESTART_PAUSE_S = 1.0


class ProgramClient:
    """One client's program, as the workload loops see it: `call(op, ...)` returns a Reply or
    raises ProtocolFault (already recorded; the program is restarted on the next call)."""

    def __init__(
        self,
        ctx: Any,
        argv: Sequence[str],
        *,
        servers: str,
        session_timeout_s: float,
        workload: str,
        lock_path: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        request_timeout_s: float = 15.0,
        init_timeout_s: float = INIT_TIMEOUT_S,
        uid: int | None = None,
    ) -> None:
        self.ctx = ctx
        self.init_fields = dict(
            protocol=VERSION,
            servers=servers,
            session_timeout_ms=int(session_timeout_s * 1000),
            client=ctx.client,
            workload=workload,
            lock_path=lock_path,
            params=ctx.params,
        )
        self.request_timeout_s = request_timeout_s
        self.init_timeout_s = init_timeout_s
        self.program = Program(
            argv, cwd=cwd, env=env, on_event=self._on_event, stop=ctx.stop_event, uid=uid
        )
        self.faults = 0  # in a row, without a good answer between
        self.unrecorded: str | None = None  # a fault not yet in the history
        self.stopped = False  # the run ended while a request was outstanding
        self.started = False
        self.gave_up = False

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> bool:
        """Start the program and init it (retrying after faults). False: gave up or stopped."""
        self.note_fault()
        while not self.gave_up:
            if self.started and self.program.alive:
                return True
            if self.started:  # restarting after a fault: not in a tight loop
                self.ctx.sleep(RESTART_PAUSE_S)
            if self.ctx.stop_event.is_set():
                return False
            self.started = True
            try:
                self.program.start()
                r = self.program.call("init", self.init_timeout_s, **self.init_fields)
            except ProtocolFault as e:
                self._record_fault(self._init_sentence(str(e)))
                continue
            if r.type != "ok":
                self._record_fault(
                    f"init was answered {r.type}"
                    + (f" ({r.error})" if r.error else "")
                    + ": the program could not start"
                )
                self.program.kill()
                continue
            value = r.value if isinstance(r.value, dict) else {}
            sid = value.get("session_id")
            if not isinstance(sid, str) or not sid:
                self._record_fault("init was answered ok without a session_id")
                self.program.kill()
                continue
            problem = session_problem(value)
            if problem:
                self._record_fault(f"init was answered ok with a bad session: {problem}")
                self.program.kill()
                continue
            session = {"session_id": sid, "timeout_ms": value.get("timeout_ms")}
            if "renew_ms" in value:  # its lease's longest gap between renewals (protocol.py)
                session["renew_ms"] = value["renew_ms"]
            self.ctx.event("session", session)
            return True
        return False

    def _init_sentence(self, fault: str) -> str:
        if "hung" in fault and "init" in fault:
            return f"init was never answered within {self.init_timeout_s:g} s"
        return fault

    def close(self) -> None:
        """End of the run: give up a lock the program believes it holds (unrecorded, as the
        in-process loop's discard), then `close`."""
        self.note_fault()
        if self.stopped or not self.program.alive:
            self.program.kill()
            return
        try:
            h = self.program.call("holding", self.request_timeout_s)
            if h.type == "ok" and h.value is True:
                self.program.call("release", self.request_timeout_s)
        except ProtocolFault:
            return
        self.program.close()

    # -- requests ---------------------------------------------------------------------------
    def call(self, op: str, timeout_s: float | None = None, **fields: Any) -> Reply:
        """One request. A protocol fault raises ProtocolFault with the program killed; the
        fault is recorded by `note_fault()` once the caller has completed its op (so that a
        `client-error` event ends the beliefs that op began), at the latest by `start()`."""
        if self.stopped:
            raise Stopped("the run ended")
        if not self.program.alive:
            note = self.program.exit_note()
            raise self.fault(f"the program died between requests ({note})")
        try:
            r = self.program.call(
                op, self.request_timeout_s if timeout_s is None else timeout_s, **fields
            )
        except Stopped:
            self.stopped = True  # the op in flight ends `info`; no client-error: not its fault
            raise
        except ProtocolFault as e:
            self.unrecorded = str(e)
            raise
        self.faults = 0
        return r

    def fault(self, sentence: str) -> ProtocolFault:
        """A fault found by the caller (e.g. `ok` without a node): kill, record later."""
        self.program.kill()
        self.unrecorded = sentence
        return ProtocolFault(sentence)

    def note_fault(self) -> None:
        if self.unrecorded is not None:
            sentence, self.unrecorded = self.unrecorded, None
            self._record_fault(sentence)

    def _record_fault(self, sentence: str) -> None:
        self.faults += 1
        self.ctx.event("client-error", sentence)
        if self.faults >= MAX_FAULTS:
            self.gave_up = True
            self.program.kill()
            self.ctx.event(
                "client-error",
                f"giving up: the program broke the protocol {self.faults} times in a row",
            )

    def _on_event(self, ev: Event) -> None:
        if ev.name in ("session-state", "session", "recipe-error"):
            self.ctx.event(ev.name, ev.value)
        else:
            self.ctx.event("program-event", {"event": ev.name, "value": ev.value})
