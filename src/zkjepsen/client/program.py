"""The program under test as a child process, spoken to through the client wire protocol.

`Program.call` sends one request and waits for its answer; any protocol fault (junk, an answer
out of order, death, no answer in time) raises `ProtocolFault` with one sentence, after which the
program is dead (its whole process group killed) and must be started again. Events the program
sends at any time go to `on_event` from the reader thread.

Deadlines count only the time this process was awake: a client container frozen by the nemesis
(`docker pause`) freezes the program and us together, and an answer that was written just before
the freeze must not be mistaken for a hang when we thaw. Stdlib only (runs in the containers).
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from zkjepsen.client.holders import held_only_by_wrappers, kill_holders
from zkjepsen.client.protocol import Event, ProtocolFault, Reply, encode, parse_line, request

MAX_LINE = 1 << 20  # longer is no protocol message; unread, it cannot fill the recorder's memory
SLICE_S = 0.05  # wait in slices; a slice that took much longer means we were frozen
FROZEN_GAP_S = 0.5
# An answer not there after this long: does anything but a wrapper of ours (a shell, the clock
# launcher) still hold the program's stdout (client/holders.py)? Asked again every LOOK_S.
LOOK_S = 0.5


class Stopped(ProtocolFault):
    """The run ended (SIGTERM) with a request outstanding: not the program's fault."""


class _Dead:
    """What the reader thread queues when stdout ends."""


class Program:
    def __init__(
        self,
        argv: Sequence[str],
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        on_event: Callable[[Event], None] = lambda e: None,
        stop: threading.Event | None = None,
        uid: int | None = None,
        stderr: Any = None,
    ) -> None:
        self.argv = list(argv)
        self.stderr = stderr  # where the program's log goes (None: ours, as in a client)
        self.cwd, self.env = cwd, env
        # Run as this uid (its group the same, no supplementary group), not the recorder's:
        # client/seal.py. None: as we run (tests on the host).
        self.uid = uid
        self.on_event = on_event
        self.stop = stop or threading.Event()
        self.proc: subprocess.Popen[bytes] | None = None
        self._replies: queue.Queue = queue.Queue()
        self._next_id = 0
        self._wlock = threading.Lock()

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        self._replies = queue.Queue()
        who: dict[str, Any] = (
            {} if self.uid is None else {"user": self.uid, "group": self.uid, "extra_groups": []}
        )
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,
                **who,
            )
        except OSError as e:
            self.proc = None
            raise ProtocolFault(f"the program could not be started: {e}") from None
        threading.Thread(
            target=self._read, args=(self.proc, self._replies), daemon=True, name="program-reader"
        ).start()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """Kill the program's whole process group (a shell's children too), then whatever of
        it still holds its pipes (a child that escaped into a session of its own). Its stdout
        is the reader's to close, at the EOF that follows: closing it here would wait for the
        reader's read, as long as anything holds the pipe."""
        p, self.proc = self.proc, None
        if p is None:
            return
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        pipes = []
        for f in (p.stdin, p.stdout):
            try:
                pipes.append(f.fileno()) if f is not None else None
            except ValueError:  # closed (the reader's, at its EOF): nothing holds that pipe
                pass
        try:
            kill_holders(pipes, self.uid)
        except OSError:  # one closed meanwhile
            pass
        try:
            if p.stdin is not None:
                p.stdin.close()
        except OSError:
            pass

    def close(self, timeout_s: float = 5.0) -> None:
        """Send `close`, then SIGTERM, then SIGKILL: the program ends either way."""
        if not self.alive:
            self.kill()
            return
        try:
            self.call("close", timeout_s)
        except ProtocolFault:
            return  # call() killed it
        p = self.proc
        assert p is not None and p.stdin is not None  # alive, started with stdin=PIPE
        try:
            p.stdin.close()
            p.wait(timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired):
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=2)
            except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
                pass
        self.kill()

    # -- requests ---------------------------------------------------------------------------
    def call(self, op: str, timeout_s: float, **fields: Any) -> Reply:
        """Send one request and wait for its answer (or raise ProtocolFault, program killed)."""
        if self.proc is None:
            raise ProtocolFault("the program is not running")
        self._next_id += 1
        rid = self._next_id
        stdin = self.proc.stdin
        assert stdin is not None  # started with stdin=PIPE
        try:
            with self._wlock:
                stdin.write(encode(request(rid, op, **fields)))
                stdin.flush()
        except (OSError, ValueError):
            self._fault(
                f"the program died before {op} (id {rid}) could be sent ({self.exit_note()})"
            )
        awake, stopped_at, look = 0.0, None, LOOK_S
        while True:
            t = time.monotonic()
            try:
                item = self._replies.get(timeout=SLICE_S)
            except queue.Empty:
                item = None
            dt = time.monotonic() - t
            awake += dt if dt < FROZEN_GAP_S else SLICE_S  # frozen time does not count
            if isinstance(item, Reply):
                if item.in_reply_to != rid:
                    self._fault(
                        f"answer out of order: in_reply_to {item.in_reply_to} while "
                        f"request {rid} ({op}) was outstanding"
                    )
                return item
            if isinstance(item, ProtocolFault):
                self._fault(str(item))
            if isinstance(item, _Dead):
                self._fault(self._ended(op, rid))
            if awake >= look:
                look = awake + LOOK_S
                if self._stdout_closed():
                    self._fault(f"the program closed its stdout with {op} (id {rid}) unanswered")
            if awake > timeout_s:
                self._fault(
                    f"the program hung: no answer to {op} (id {rid}) within {timeout_s:g} s"
                )
            if self.stop.is_set():
                stopped_at = stopped_at if stopped_at is not None else awake
                if awake - stopped_at > 3.0:
                    self.kill()
                    raise Stopped(f"the run ended with {op} (id {rid}) unanswered")

    def _ended(self, op: str, rid: int) -> str:
        note = self.exit_note()
        if note == "stdout closed":  # EOF, and the program still runs: it closed its stdout
            return f"the program closed its stdout with {op} (id {rid}) unanswered"
        return f"the program died with {op} (id {rid}) unanswered ({note})"

    def _stdout_closed(self) -> bool:
        """The program closed its stdout, though a wrapper we started still holds the pipe
        (so no EOF comes): a protocol fault of its own, not a hang to wait out."""
        p = self.proc
        if p is None or p.stdout is None:
            return False
        try:
            return held_only_by_wrappers(p.stdout.fileno(), self.argv, self.uid)
        except (OSError, ValueError):  # our end closed meanwhile: the reader says what ended
            return False

    def _fault(self, sentence: str) -> None:
        self.kill()
        raise ProtocolFault(sentence)

    def exit_note(self) -> str:
        p = self.proc
        if p is None:
            return "no process"
        try:
            code = p.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return "stdout closed"
        return f"killed by signal {-code}" if code < 0 else f"exit status {code}"

    def _read(self, proc: subprocess.Popen[bytes], out: queue.Queue) -> None:
        """Reader thread: every stdout line becomes a Reply (queued), an Event (dispatched) or
        a ProtocolFault (queued; the reader stops)."""
        stdout = proc.stdout
        assert stdout is not None  # started with stdout=PIPE
        try:
            for line in iter(lambda: stdout.readline(MAX_LINE + 1), b""):
                if len(line) > MAX_LINE:
                    out.put(ProtocolFault("the program sent a line longer than 1 MiB"))
                    return
                if not line.strip():
                    continue
                if not line.endswith(b"\n"):  # EOF inside a line: it died mid-answer
                    out.put(
                        ProtocolFault(
                            "the program died mid-answer: its last line "
                            f"{line[:60]!r} was never finished"
                        )
                    )
                    return
                try:
                    msg = parse_line(line)
                except ProtocolFault as e:
                    out.put(e)
                    return
                if isinstance(msg, Event):
                    try:
                        self.on_event(msg)
                    except Exception:  # noqa: BLE001 - the recorder's problem, not the program's
                        pass
                else:
                    out.put(msg)
        except (OSError, ValueError):
            pass
        finally:
            stdout.close()  # EOF: no process holds the pipe any more
        out.put(_Dead())
