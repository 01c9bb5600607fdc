"""A program that closes its stdout is a protocol fault of that client, seen at once (issue 48):
the reader's EOF when the program held the pipe alone, and when a wrapper we started holds it
too (the `/bin/sh -c` of a `--client-cmd` with shell syntax waits for the command it forked),
client/holders.py: nothing but our wrappers holds the pipe any more. A program whose child
escaped into a session of its own and kept stdout is not one that closed it (it holds the pipe):
its init is never answered. And an acquire its own program broke off is no evidence of a stuck
lock (checker/liveness.py), while acquires that wait and time out still are.

Each wait below is bounded by the request's own timeout (a minute): a close that is not seen
fails as a hang, with the sentence that says so."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from zkjepsen.checker.liveness import LivenessChecker
from zkjepsen.client.holders import wrappers
from zkjepsen.client.program import Program
from zkjepsen.client.protocol import ProtocolFault
from zkjepsen.history import History, Op

SUBJECTS = Path(__file__).resolve().parents[1] / "subjects"
PY = sys.executable
WAIT_S = 60.0  # far past how long seeing a close takes: a hang shows as its own sentence


def _program(argv: list[str]) -> Program:
    p = Program(argv, cwd=str(SUBJECTS))
    p.start()
    return p


@pytest.mark.parametrize(
    "argv",
    [
        [PY, "closes_stdout.py"],  # the program holds its stdout alone: EOF
        ["/bin/sh", "-c", f"{PY} closes_stdout.py; true"],  # the shell keeps the pipe open
        ["/bin/sh", "-c", f"cd . && {PY} closes_stdout.py"],
    ],
    ids=["alone", "shell", "shell-and"],
)
def test_a_program_that_closes_its_stdout_is_a_fault_of_its_own(argv):
    p = _program(argv)
    try:
        assert p.call("init", WAIT_S, client=1).type == "ok"
        with pytest.raises(ProtocolFault) as e:
            p.call("acquire", WAIT_S, timeout_ms=1000)
        assert "closed its stdout with acquire" in str(e.value), e.value
    finally:
        p.kill()


def test_a_shell_of_the_programs_own_is_the_program():
    """Only what we started is a wrapper: a shell the command line itself runs (its own
    `sh -c`) is part of the program, and it holds the pipe, so that is a program that never
    answers, not one that closed its stdout."""
    own = f"{PY} closes_stdout.py; exit 3"
    p = _program(["/bin/sh", "-c", f"cd . && /bin/sh -c '{own}'"])
    try:
        assert p.call("init", WAIT_S, client=1).type == "ok"
        with pytest.raises(ProtocolFault) as e:
            p.call("acquire", 2.0, timeout_ms=1000)
        assert "hung: no answer to acquire" in str(e.value), e.value
    finally:
        p.kill()


def test_a_program_that_closes_its_stdout_before_init_is_seen_too():
    p = _program(["/bin/sh", "-c", f"{PY} closes_stdout.py before-init; true"])
    try:
        with pytest.raises(ProtocolFault) as e:
            p.call("init", WAIT_S, client=1)
        assert "closed its stdout with init" in str(e.value), e.value
    finally:
        p.kill()


def _escaped(marker: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def _gone(marker: str, bound_s: float = 10.0) -> list[int]:
    """The processes `marker` names once they are gone, or those left after `bound_s` (a
    SIGKILLed process is still listed until the kernel has torn it down)."""
    left = _escaped(marker)
    for _ in range(int(bound_s / 0.05)):
        if not left:
            break
        time.sleep(0.05)
        left = _escaped(marker)
    return left


def test_an_escaped_child_holding_stdout_is_no_close_but_an_init_never_answered():
    """...and the kill that follows the fault ends the escaped child too (it holds the
    program's pipes), so the reader sees its EOF instead of waiting on the child."""
    linger = "37.25"  # also marks the escaped child, for the test to find it
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:  # the child, while the request waits (the fault's kill ends it)
        while not done.wait(0.05):
            seen.update(_escaped(linger))

    watcher = threading.Thread(target=watch, daemon=True)
    p = _program([PY, "escaped_child.py", "all", linger])
    watcher.start()
    try:
        with pytest.raises(ProtocolFault) as e:
            p.call("init", 3.0, client=1)
        assert "hung: no answer to init" in str(e.value), e.value
    finally:
        done.set()
        watcher.join()
        left = _gone(linger)
        p.kill()
        for pid in left:  # (cleanup only: asserted below)
            os.kill(pid, signal.SIGKILL)
    assert seen, "the child did not escape: the case was not made"
    assert not left, "the fault's kill left the escaped child"


def test_the_wrappers_of_a_command_are_the_shell_and_the_launcher():
    argv = ["/opt/x/zkj-timewarp", "/control/warp", "/bin/sh", "-c", "cd x && ./prog"]
    assert wrappers(argv) == [tuple(argv), tuple(argv[2:])]
    assert wrappers(["python3", "prog.py"]) == []
    assert wrappers(["/bin/sh", "prog.sh"]) == []  # a script is the program itself


# ---- liveness: a program broken on every request is no stuck lock ------------------------------
S = 1_000_000_000


def _attempts(error: str | None, gap_s: float = 1.2) -> History:
    """Two clients asking for the lock five times each, every attempt ending without it: broken
    off by the client's own program (`client-error`), or failed for a timeout."""
    ops: list[Op] = []
    t = S
    for c in (1, 2):
        p = c
        for _ in range(5):
            ops.append(Op(len(ops), t, p, "invoke", "acquire", "/l", None, c))
            end = {"error": error or "timeout"}
            typ = "info" if error else "fail"
            ops.append(Op(len(ops), t + S // 100, p, typ, "acquire", "/l", None, c, end))
            if error:
                ops.append(Op(len(ops), t + S // 100, p, "event", error, None, "closed", c))
                p += 2  # an info retires its process
            t += int(gap_s * S)
    return History(ops)


def test_acquires_broken_off_by_the_program_are_not_a_stuck_lock():
    live = LivenessChecker().with_bound(4.0, 12.5)
    assert live.check(_attempts("client-error")).valid is True
    assert live.check(_attempts(None)).valid is False  # the same attempts failing: stuck
