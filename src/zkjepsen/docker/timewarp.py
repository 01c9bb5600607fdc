"""The control files of `zkj-timewarp` (client/drivers/timewarp/): one per skewed process tree,
read by its processes through a MAP_SHARED page, rewritten here in place; and the observation
page beside it, where those processes' own readings are found (`observed`).

Why this mechanism: libfaketime reaches only what calls libc (the JVM, Python); Go reads the
clock through the vDSO (etcd, go-zookeeper), and Redis 7.0 dies under it. `zkj-timewarp` starts
the program under ptrace and stays the tracer of its whole process tree: at every exec in the
tree (the program's own, a shell's exec of the real program, a subprocess) it maps a stub and
this file's page into the new image, points the vDSO's `clock_gettime`/`gettimeofday`/`time` at
the stub, and lets it run: every thread, and every fork, reads `t' = a + (t - b) * rate` per
clock (REALTIME, MONOTONIC, BOOTTIME). Attaching before exec rather than to a live process: no
capability at all (a process may trace its own child), no race with threads being created,
and the patch is in place before the program's first clock reading. Clock reads never stop
for the tracer; forks, clones and execs do, once each.

The page is changed under a sequence counter (odd while it changes; three writes), so a
reader never sees half a change, and a change reaches every process at its next clock reading.
Containers share the host's kernel clocks, so the host computes the new lines from its own
readings: a change is continuous (the skewed clock goes on from where it is) unless it is a step.

Fault specs keep libfaketime's grammar (nemesis/clock.py writes them for either mechanism):
- `+D xK`: every clock runs K x from now on, no step;
- `+D` (no `x`): REALTIME steps to real + D (the rate stays; `+0` puts it back on real time, at
  rate 1, a backward step by the lead a rate built). MONOTONIC and BOOTTIME never step: `+0`
  (the heal) makes them run at half speed until real time catches up with the lead they gained
  (`converge`), then stay on it, so no waiter ever sees its monotonic clock go back.

Observation (env ZKJ_TIMEWARP_OBSERVE=PATH for the launcher): the stub writes each clock's
latest reading (the control seq it used, the real and the read ns) and the launcher every
process it injected; `observed(PATH)` reads them, so a caller can tell that a reading was made
under its change (`gen >= apply(...)`) and what offset and rate the program really saw.
"""

from __future__ import annotations

import os
import re
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

MAGIC = b"ZKJTIME1"
SIZE = 4096  # TW_CONTROL_BYTES
ONE = 1 << 32  # rate 1.0 in 32.32 fixed point
CLOCKS = (time.CLOCK_REALTIME, time.CLOCK_MONOTONIC, time.CLOCK_BOOTTIME)
LINE = struct.Struct("<qqQq")  # struct tw_clock: a, b, rate_q32, converge
HEAD = struct.Struct("<8sQ")  # magic, seq
SLEW = 0.5  # a monotonic lead is given back at half speed
FILE_MODE = 0o644  # mapped read-only by the program (any uid)
LAUNCHER = "/opt/zkjepsen/drivers/timewarp/zkj-timewarp"
SPEC = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s*(?:x\s*(\d+(?:\.\d+)?))?\s*$")
IDENTITY = (0, 0, ONE, 0)
_lock = threading.Lock()


def blank(path: Path) -> None:
    """A control file that keeps real time (the program starts on it)."""
    body = HEAD.pack(MAGIC, 0) + b"".join(LINE.pack(*IDENTITY) for _ in CLOCKS)
    path.write_bytes(body.ljust(SIZE, b"\0"))
    os.chmod(path, FILE_MODE)


def read(path: Path) -> list[tuple[int, int, int, int]]:
    data = path.read_bytes()
    return [LINE.unpack_from(data, HEAD.size + i * LINE.size) for i in range(len(CLOCKS))]


def reading(line: tuple[int, int, int, int], t: int) -> int:
    """What the program reads at real time `t` (ns) on `line` (as the stub computes it)."""
    a, b, rate, converge = line
    if rate == ONE and a == b:
        return t
    f = a + (((t - b) * rate) >> 32)
    if (converge > 0 and f < t) or (converge < 0 and f > t):
        return t
    return f


def _rate(k: float) -> int:
    if not 0 < k <= 1000:
        raise ValueError(f"a clock rate must be in (0, 1000], not {k:g}")
    return int(round(k * ONE))


def parse(spec: str) -> tuple[float, float | None]:
    """`+D [xK]` -> (D seconds, K or None)."""
    m = SPEC.match(spec)
    if not m:
        raise ValueError(f"not a clock spec: {spec!r} (expected +SECONDS or +SECONDS xRATE)")
    return float(m.group(1)), (float(m.group(2)) if m.group(2) else None)


def lines_for(
    old: list[tuple[int, int, int, int]], spec: str, now: list[int]
) -> list[tuple[int, int, int, int]]:
    """The new lines for `spec`, given the old ones and the real clocks' readings `now`."""
    offset_s, k = parse(spec)
    new = []
    for i, (line, t) in enumerate(zip(old, now, strict=True)):
        f = reading(line, t)
        if k is not None:  # a rate from now on, continuous (the old converge no longer holds)
            a = f + (int(offset_s * 1e9) if i == 0 and offset_s else 0)
            new.append((a, t, _rate(k), 0))
        elif i == 0:  # REALTIME: a step to real + D, at the current rate (1 when back on real)
            d = int(offset_s * 1e9)
            rate = line[2] if d else ONE
            new.append(IDENTITY if d == 0 else (t + d, t, rate, 0))
        elif offset_s != 0:  # a monotonic clock never steps: it keeps its line
            new.append((f, t, line[2], line[3]) if line != IDENTITY else IDENTITY)
        elif f == t:
            new.append(IDENTITY)
        else:  # give the lead (or lag) back at SLEW (or 1/SLEW) speed, then stay on real
            ahead = f > t
            new.append((f, t, _rate(SLEW if ahead else 1 / SLEW), 1 if ahead else -1))
    return new


def write(path: Path, lines: list[tuple[int, int, int, int]]) -> None:
    """Rewrite the lines in place under the sequence counter (never a new file: the program
    maps this one). The lock keeps two writers in this process apart (two writers in two
    processes are not expected: one nemesis owns a run's control files)."""
    with _lock:
        fd = os.open(path, os.O_RDWR)
        try:
            _, seq = HEAD.unpack(os.pread(fd, HEAD.size, 0))
            seq += 1 if seq % 2 == 0 else 0
            os.pwrite(fd, struct.pack("<Q", seq), 8)  # odd: changing
            os.pwrite(fd, b"".join(LINE.pack(*ln) for ln in lines), HEAD.size)
            os.pwrite(fd, struct.pack("<Q", seq + 1), 8)  # even: done
        finally:
            os.close(fd)


def seq(path: Path) -> int:
    """The control file's sequence number: even, and higher after every change."""
    _, n = HEAD.unpack(path.read_bytes()[: HEAD.size])
    return int(n)


def apply(path: Path, spec: str) -> int:
    """Make the program behind `path` read its clocks as `spec` says, from now on. Returns
    the change's seq: a reading with `gen >= ` it (`observed`) was made under this change."""
    old = read(path)
    write(path, lines_for(old, spec, [time.clock_gettime_ns(c) for c in CLOCKS]))
    return seq(path)


def command(control: str, argv: list[str]) -> list[str]:
    """`argv` under the launcher, reading its clocks through `control` (a path it can open)."""
    return [LAUNCHER, control, *argv]


# ---- the observation page (timewarp.h: struct tw_observe) -------------------------------------
SEEN_MAGIC = b"ZKJSEEN1"
SEEN_HEAD = struct.Struct("<8sQ")  # magic, injections
SLOT = struct.Struct("<QQqqQ24x")  # struct tw_seen: busy, gen, real_ns, read_ns, count, pad
INJECTED = struct.Struct("<q56s")  # struct tw_injected: pid, exe
RING = 32  # TW_INJECTED
CLOCK_NAMES = ("realtime", "monotonic", "boottime")
_SLOTS_AT = SEEN_HEAD.size
_RING_AT = _SLOTS_AT + len(CLOCK_NAMES) * SLOT.size
_TRIES = 200  # a slot being written is read again; it is busy for a few instructions


@dataclass(frozen=True)
class Reading:
    """The latest reading of one clock by any process under the launcher."""

    gen: int  # the control file's seq the reading used (compare with `apply`'s return)
    real_ns: int  # the real clock's reading at that moment
    read_ns: int  # what the process read
    count: int  # readings recorded in this clock's slot so far (a writer skips a busy slot)

    @property
    def offset_ns(self) -> int:
        return self.read_ns - self.real_ns


@dataclass(frozen=True)
class Seen:
    """What `observed` found: per clock name (`CLOCK_NAMES`) its latest reading, for the clocks
    read at least once; and the processes the launcher injected (`injected`) or saw exec but
    could not reach (`missed`: a 32-bit program, one that died mid-way; the launcher says why
    on stderr), each (pid, exe path: its last 55 bytes if longer), oldest first, at most
    the last 32 of `injections`."""

    clocks: dict[str, Reading]
    injected: tuple[tuple[int, str], ...]
    missed: tuple[tuple[int, str], ...]
    injections: int


def _slot(data: bytes, path: Path, i: int) -> Reading | None:
    at = _SLOTS_AT + i * SLOT.size
    for _ in range(_TRIES):
        first = data[at : at + SLOT.size]
        data = path.read_bytes()
        busy, gen, real, read_, count = SLOT.unpack_from(data, at)
        if busy == 0 and first == data[at : at + SLOT.size]:
            return Reading(gen, real, read_, count) if count else None
    return None  # written all the time: a writer that died holding it, or a very hot clock


def observed(path: Path) -> Seen:
    """The observation page at `path` (the launcher's ZKJ_TIMEWARP_OBSERVE) as it is now. A
    page not yet created (the program not started yet) reads as nothing seen."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Seen({}, (), (), 0)
    if len(data) < _RING_AT + RING * INJECTED.size or data[:8] != SEEN_MAGIC:
        raise ValueError(f"{path} is not a zkj-timewarp observation page")
    _, injections = SEEN_HEAD.unpack_from(data)
    clocks: dict[str, Reading] = {}
    for i, name in enumerate(CLOCK_NAMES):
        got = _slot(data, path, i)
        if got is not None:
            clocks[name] = got
    injected: list[tuple[int, str]] = []
    missed: list[tuple[int, str]] = []
    for k in range(max(0, injections - RING), injections):
        pid, exe = INJECTED.unpack_from(data, _RING_AT + (k % RING) * INJECTED.size)
        entry = (abs(pid), exe.split(b"\0", 1)[0].decode(errors="replace"))
        (injected if pid > 0 else missed).append(entry)
    return Seen(clocks, tuple(injected), tuple(missed), injections)
