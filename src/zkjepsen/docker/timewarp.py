"""The control files of `zkj-timewarp` (client/drivers/timewarp/): one per skewed process, read
by the process itself through a MAP_SHARED page, rewritten here in place.

Why this mechanism: libfaketime reaches only what calls libc (the JVM, Python); Go reads the
clock through the vDSO (etcd, go-zookeeper), and Redis 7.0 dies under it. `zkj-timewarp` starts
the program under ptrace, stops it at exec, maps a stub and this file's page, points the vDSO's
`clock_gettime`/`gettimeofday`/`time` at the stub, and detaches: every thread, now and later,
reads `t' = a + (t - b) * rate` per clock (REALTIME, MONOTONIC, BOOTTIME). Attaching at exec
rather than to a live process: no capability at all (PTRACE_TRACEME), no race with threads
being created, and the patch is in place before the program's first clock reading.

The page is changed under a sequence counter (odd while it changes; three writes), so a
reader never sees half a change, and a change reaches the process at its next clock reading.
Containers share the host's kernel clocks, so the host computes the new lines from its own
readings: a change is continuous (the skewed clock goes on from where it is) unless it is a step.

Fault specs keep libfaketime's grammar (nemesis/clock.py writes them for either mechanism):
- `+D xK`: every clock runs K x from now on, no step;
- `+D` (no `x`): REALTIME steps to real + D (the rate stays; `+0` puts it back on real time, at
  rate 1). MONOTONIC and BOOTTIME never step: `+0` (the heal) makes them run at half speed
  until real time catches up with the lead they gained (`converge`), then stay on it, so no
  waiter ever sees its monotonic clock go back.
"""

from __future__ import annotations

import os
import re
import struct
import threading
import time
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
    maps this one)."""
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


def apply(path: Path, spec: str) -> None:
    """Make the program behind `path` read its clocks as `spec` says, from now on."""
    old = read(path)
    write(path, lines_for(old, spec, [time.clock_gettime_ns(c) for c in CLOCKS]))


def command(control: str, argv: list[str]) -> list[str]:
    """`argv` under the launcher, reading its clocks through `control` (a path it can open)."""
    return [LAUNCHER, control, *argv]
