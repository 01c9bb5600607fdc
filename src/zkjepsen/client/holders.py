"""Who still holds the write end of a program's stdout: how a program that closed its stdout is
seen at once, though a wrapper the recorder started keeps the pipe open (the `/bin/sh -c` that
runs a `--client-cmd` with shell syntax, which waits for the command it forked; zkj-timewarp's
launcher, which traces it), so that no EOF ever comes and the program would be judged hung.

The recorder reads `/proc/PID/fd` of every process it can see (a client container holds only
its own and the program's). The program runs as another uid (client/seal.py) and the recorder
has no CAP_SYS_PTRACE, so this thread reads them with the program's uid as its filesystem uid
(setfsuid: one thread only, and CAP_SETUID, which the recorder keeps to start the program, is
all it takes); the kernel's ptrace read check then compares that uid with the program's. A
process of the program's uid whose descriptors cannot be read (one that made itself
non-dumpable) counts as a holder: its close is then seen only as the EOF it gives, if any.
Stdlib only (runs in the containers).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Iterator, Sequence

# A wrapper's own argv starts so: a shell given a command line, or the clock launcher.
SHELLS = ("/bin/sh", "sh", "/bin/dash", "/bin/bash", "bash")
LAUNCHER = "zkj-timewarp"


def wrappers(argv: Sequence[str]) -> list[tuple[str, ...]]:
    """The argvs of the wrappers a program started with `argv` runs as: each tail of `argv` that
    starts with the launcher or a shell's `-c`. (A shell that execs the last command of its
    line is no longer one: its argv is then the command's.)"""
    out = []
    for k in range(len(argv)):
        tail = tuple(argv[k:])
        head = os.path.basename(tail[0])
        if head == LAUNCHER or (tail[0] in SHELLS and tail[1:2] == ("-c",)):
            out.append(tail)
    return out


@contextlib.contextmanager
def reading_as(uid: int | None) -> Iterator[None]:
    """This thread opens files as `uid` (and its group) until the block ends; None: as it is."""
    if uid is None or uid == os.geteuid():
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.setfsgid(uid)
    libc.setfsuid(uid)
    try:
        yield
    finally:
        libc.setfsuid(os.geteuid())
        libc.setfsgid(os.getegid())


def _uid_and_state(pid: str) -> tuple[int, str] | None:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as fh:
            status = fh.read()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    try:
        return int(fields["Uid"].split()[0]), fields["State"].strip()[:1]
    except (KeyError, IndexError, ValueError):
        return None


def _cmdline(pid: str) -> tuple[str, ...]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read()
    except OSError:
        return ()
    return tuple(x.decode(errors="replace") for x in raw.split(b"\0")[:-1])


def _holds(pid: str, links: set[str]) -> bool | None:
    """Whether process `pid` has a descriptor on one of `links` (`pipe:[INODE]`); None: its
    descriptors cannot be read."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in links:
                return True
        except OSError:
            continue  # closed meanwhile
    return False


def _links(fds: Sequence[int]) -> set[str]:
    return {f"pipe:[{os.fstat(fd).st_ino}]" for fd in fds}


def holders(fds: Sequence[int], uid: int | None) -> Iterator[tuple[int, tuple[str, ...] | None]]:
    """Every other process that holds the pipes our `fds` are one end of, with its argv; None
    for a process of the program's uid whose descriptors cannot be read (it may hold them)."""
    links = _links(fds)
    me = str(os.getpid())
    with reading_as(uid):
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or pid == me:
                continue
            seen = _uid_and_state(pid)
            if seen is None or seen[1] == "Z":  # gone, or a zombie: it holds nothing
                continue
            holds = _holds(pid, links)
            if holds is None and (uid is None or seen[0] == uid):
                yield int(pid), None
            elif holds:
                yield int(pid), _cmdline(pid)


def held_only_by_wrappers(fd: int, argv: Sequence[str], uid: int | None) -> bool:
    """True when no process but the recorder itself and the wrappers of `argv` holds the pipe
    whose read end is our `fd`: whatever was to write into it (the program) closed it."""
    ours = wrappers(argv)
    return all(seen is not None and seen in ours for _, seen in holders([fd], uid))


def kill_holders(fds: Sequence[int], uid: int | None) -> list[int]:
    """SIGKILL every process that still holds the program's pipes after its process group was
    killed: a child that escaped into a session of its own (setsid) and kept them. Returns
    their pids."""
    killed = []
    for pid, argv in holders(fds, uid):
        if argv is None:  # not seen to hold them: not known to be the program's
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except OSError:
            pass  # gone meanwhile, or not ours to signal
    return killed
