"""Clock faults through libfaketime, preloaded in every ZooKeeper JVM from its start.

Each server reads its own control file (`ensemble.faketime_file(node)`, bind-mounted read-only)
at most once a second (FAKETIME_CACHE_DURATION=1); we rewrite it atomically (temp file + rename)
on the host. Docker containers share the host's kernel clock, so this is the only way to skew one
node's clock. What we measured with libfaketime 0.9.10 and FAKETIME_XRESET=1 (probe process in
our image; see benchmarks/nemesis_clock.py for the ZooKeeper side):

- The JVM must have monotonic faking ON (off: timed waits spin at ~200% CPU), so every change
  moves `System.nanoTime` as well as the wall clock. ZooKeeper's leader expires sessions by
  `Time.currentElapsedTime()` (= nanoTime): an offset step of +d on the leader is a monotonic
  jump of d (every session older than timeout-d expires at once); a rate k x makes the leader
  expire sessions after timeout/k of real time. A fast *follower* expires nothing.
- With XRESET=1 a rate change applies from the moment it is read (no jump). Going back to `x1`
  keeps the lead gained, `(k-1) x duration`: no jump back. An offset is written WITHOUT an `x`
  part (`+5`): with XRESET, `+5 x1` ignores the offset. A plain `+0` written while the rate is 1
  puts the clock back on real time (a backward step of the lead). `+0` while the rate is k keeps
  the rate, so a reset is two writes, `+0 x1`, then (after > 1 s) `+0`.
- Changes faster than ~1 s are invisible (the cache), so a strobe flips every 1.2 s at least.
The recorder's clock is the host's real CLOCK_MONOTONIC (it runs outside the faked JVMs).
"""

from __future__ import annotations

import os
import random
import threading
import time
from typing import Any

from zkjepsen.nemesis import NemesisError
from zkjepsen.nemesis.targets import NemesisContext, resolve_servers

CACHE_S = 1.2  # > FAKETIME_CACHE_DURATION: a write is certainly seen after this
DEFAULT_RATE = 4.0
REAL = "+0"
NORMAL_RATE = "+0 x1"


def write_faketime(ensemble: Any, node: Any, text: str) -> None:
    path = ensemble.faketime_file(node)
    if not path.parent.exists():
        return  # the run's scratch dir is gone (torn down): nothing left to skew
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(text + "\n")
    os.replace(tmp, path)  # atomic: libfaketime never reads half a file


def _offset(seconds: float) -> str:
    return f"{int(round(seconds)):+d}"  # whole seconds: the format libfaketime documents


def resolve(ctx: NemesisContext, f: str, target: str, rng: random.Random,
            params: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    targets = resolve_servers(ctx, target, rng)
    if f == "clock-bump":
        mag = float(params.get("offset_s", rng.uniform(1, 60)))
        sign = 1 if "offset_s" in params else rng.choice([-1, 1])
        return targets, {"offset_s": int(round(sign * mag))}
    if f == "clock-strobe":
        return targets, {"offset_s": int(params.get("offset_s", rng.choice([-1, 1]) *
                                                    rng.randint(1, 10))),
                         "period_s": max(CACHE_S, float(params.get("period_s", CACHE_S)))}
    if f == "clock-rate-leader":
        return targets, {"rate": float(params.get("rate", DEFAULT_RATE))}
    raise NemesisError(f"{f} is not a clock fault")


def apply(ctx: NemesisContext, f: str, targets: list[str], detail: dict[str, Any]) -> None:
    for name in targets:
        node = ctx.node(name)
        with ctx.lock:
            ctx.dirty_clocks.add(name)
        if f == "clock-bump":
            write_faketime(ctx.ensemble, node, _offset(detail["offset_s"]))
        elif f == "clock-rate-leader":
            write_faketime(ctx.ensemble, node, f"+0 x{detail['rate']:g}")
        elif f == "clock-strobe":
            stop = threading.Event()
            t = threading.Thread(target=_strobe, name=f"strobe-{name}", daemon=True,
                                 args=(ctx.ensemble, node, detail["offset_s"],
                                       detail["period_s"], stop))
            ctx.state[f"strobe:{name}"] = (stop, t)
            t.start()


def _strobe(ensemble: Any, node: Any, offset_s: int, period_s: float,
            stop: threading.Event) -> None:
    high = True
    while not stop.is_set():
        write_faketime(ensemble, node, _offset(offset_s) if high else REAL)
        high = not high
        stop.wait(period_s)


def undo(ctx: NemesisContext, f: str, targets: list[str], detail: dict[str, Any]) -> None:
    for name in targets:
        node = ctx.node(name)
        if f == "clock-strobe":
            stop, t = ctx.state.pop(f"strobe:{name}", (None, None))
            if stop is not None:
                stop.set()
                t.join(5)
        if f == "clock-rate-leader":
            # Back to 1x; the lead gained stays (stepping back now would freeze the leader's
            # session expiry for that long). The final heal puts the clock back on real time.
            write_faketime(ctx.ensemble, node, NORMAL_RATE)
        else:
            write_faketime(ctx.ensemble, node, REAL)  # offsets are relative to real time
            with ctx.lock:
                ctx.dirty_clocks.discard(name)


def heal(ctx: NemesisContext, everything: bool = False) -> list[str]:
    """Put every skewed clock back on real time: stop strobes, `+0 x1`, wait for it to be read,
    `+0`. `everything` resets all nodes (cleanup after a crash, when nobody remembers)."""
    for key in [k for k in ctx.state if k.startswith("strobe:")]:
        stop, t = ctx.state.pop(key)
        stop.set()
        t.join(5)
    names = [n.name for n in ctx.ensemble.nodes] if everything else sorted(ctx.dirty_clocks)
    if not names:
        return []
    problems = []
    for step in (NORMAL_RATE, REAL):
        for name in names:
            try:
                write_faketime(ctx.ensemble, ctx.node(name), step)
            except OSError as e:
                problems.append(f"{name}: {e}")
        if step == NORMAL_RATE:
            time.sleep(CACHE_S)
    ctx.dirty_clocks.clear()
    return problems
