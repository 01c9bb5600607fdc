#!/usr/bin/env python3
"""A client program (docs/client-protocol.md) that logs its own clock readings: every 100 ms a
line `CLOCKPROBE <real_boot_ns> <wall_ns> <mono_ns>` on stderr, the first read by a raw
clock_gettime(CLOCK_BOOTTIME) syscall (nothing that skews a program's clock reaches it), the
others as any Python program reads its clocks (time.time_ns, time.monotonic_ns); and after
each time.sleep(0.5), `CLOCKPROBE-SLEEP` with what it really took. At start, one line
`CLOCKPROBE-TREE` with the command lines of its ancestors. Its lock never grants (every
acquire fails at once, "timeout"): it is a clock probe, not a lock.
tests/integration/test_client_clock_forms.py runs it."""

from __future__ import annotations

import ctypes
import json
import select
import sys
import threading
import time

CLOCK_BOOTTIME, SYS_CLOCK_GETTIME = 7, 228  # x86_64
_libc = ctypes.CDLL(None, use_errno=True)


class _Timespec(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]


def real_boot_ns() -> int:
    ts = _Timespec()
    _libc.syscall(SYS_CLOCK_GETTIME, CLOCK_BOOTTIME, ctypes.byref(ts))
    return ts.sec * 1_000_000_000 + ts.nsec


def ancestors() -> list[str]:
    out, pid = [], "self"
    while pid not in ("0", "1"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
                out.append(cmd[:120])
            with open(f"/proc/{pid}/status") as fh:
                pid = next(ln.split()[1] for ln in fh if ln.startswith("PPid:"))
        except OSError:
            break
    return out


def say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def log_clocks() -> None:
    while True:
        say(f"CLOCKPROBE {real_boot_ns()} {time.time_ns()} {time.monotonic_ns()}")
        # select's timeout is relative, a real 0.1 s; time.sleep is not (below)
        select.select([], [], [], 0.1)


def log_sleeps() -> None:
    """What a time.sleep(0.5) really takes (CPython 3.11 sleeps to an absolute deadline on
    its monotonic clock): `CLOCKPROBE-SLEEP <real_boot_ns at its start> <real ns it took>`."""
    while True:
        t = real_boot_ns()
        time.sleep(0.5)
        say(f"CLOCKPROBE-SLEEP {t} {real_boot_ns() - t}")


def answer(rid: int, type_: str, value=None, error: str | None = None) -> None:
    msg = {"in_reply_to": rid, "type": type_, "value": value}
    if error:
        msg["error"] = error
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main() -> None:
    say("CLOCKPROBE-TREE " + " <- ".join(ancestors()))
    threading.Thread(target=log_clocks, daemon=True).start()
    threading.Thread(target=log_sleeps, daemon=True).start()
    for line in sys.stdin:
        req = json.loads(line)
        rid, op = req["id"], req["op"]
        if op == "init":
            timeout = req.get("session_timeout_ms", 4000)
            answer(rid, "ok", {"session_id": f"probe-{req.get('client')}", "timeout_ms": timeout})
        elif op == "acquire":
            answer(rid, "fail", error="timeout")
        elif op == "holding":
            answer(rid, "ok", False)
        elif op in ("release", "close"):
            answer(rid, "ok")
            if op == "close":
                return
        else:
            answer(rid, "fail", error="Fenced" if op == "write" else "unsupported")


if __name__ == "__main__":
    main()
