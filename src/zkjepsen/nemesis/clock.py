"""Clock faults on servers: libfaketime, preloaded in every ZooKeeper JVM from its start, or,
for etcd and Redis, zkj-timewarp (docker/timewarp.py, which reads the same specs; below is
libfaketime's side). ZooKeeper keeps libfaketime: its JVM behaviour there is measured (below)
and its image needs nothing new for it; zkj-timewarp would reach it too.

Each server reads its own control file (bind-mounted read-only) at most once a second
(FAKETIME_CACHE_DURATION=1); `Backend.set_clock` rewrites it atomically (temp file + rename) on
the host. Docker containers share the host's kernel clock, so this is the only way to skew one
node's clock. What we measured with libfaketime 0.9.10 and FAKETIME_XRESET=1 (probe process in
our image; see benchmarks/nemesis_clock.py for the ZooKeeper side):

- The JVM must have monotonic faking ON (off: timed waits spin at ~200% CPU), so every change
  moves `System.nanoTime` as well as the wall clock. ZooKeeper's leader expires sessions by
  `Time.currentElapsedTime()` (= nanoTime): an offset step of +d on the leader is a monotonic
  jump of d (every session older than timeout-d expires at once); a rate k x makes the leader
  expire sessions after timeout/k of real time. A fast *follower* expires nothing.
- Only on a JDK that calls `clock_gettime` through libc (17, 21): JDK 11 looks it up in librt
  with dlsym, past libfaketime, so its nanoTime stays real while currentTimeMillis and timed
  waits speed up (the 3.4 image therefore runs JDK 17; backends/zookeeper/versions.py).
- With XRESET=1 a rate change applies from the moment it is read (no jump). Going back to `x1`
  keeps the lead gained, `(k-1) x duration`: no jump back. An offset is written WITHOUT an `x`
  part (`+5`): with XRESET, `+5 x1` ignores the offset. A plain `+0` written while the rate is 1
  puts the clock back on real time (a backward step of the lead). `+0` while the rate is k keeps
  the rate, so a reset is two writes, `+0 x1`, then (after > 1 s) `+0`.
- Changes faster than ~1 s are invisible (the cache), so a strobe flips every 1.2 s at least.
The recorder's clock is the host's real CLOCK_MONOTONIC (it runs outside the faked JVMs).
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from zkjepsen.backends.base import Backend
from zkjepsen.docker.cluster import Node
from zkjepsen.nemesis.targets import NemesisContext, resolve_servers

CACHE_S = 1.2  # > FAKETIME_CACHE_DURATION: a write is certainly seen after this
DEFAULT_RATE = 4.0
REAL = "+0"
NORMAL_RATE = "+0 x1"


def _offset(seconds: float) -> str:
    return f"{int(round(seconds)):+d}"  # whole seconds: the format libfaketime documents


class ClockFault:
    """What every clock kind shares: it skews servers only, marks them dirty until their
    clock is back on real time, and its end puts the offset back."""

    def detail(self, params: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        raise NotImplementedError

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: dict[str, Any]
    ) -> tuple[list[str], dict[str, Any]]:
        targets = resolve_servers(ctx, target, rng)
        return targets, self.detail(params, rng)

    def apply(self, ctx: NemesisContext, targets: list[str], detail: dict[str, Any]) -> None:
        for name in targets:
            with ctx.lock:
                ctx.dirty_clocks.add(name)
            self.skew(ctx, ctx.node(name), detail)

    def skew(self, ctx: NemesisContext, node: Node, detail: dict[str, Any]) -> None:
        raise NotImplementedError

    def undo(self, ctx: NemesisContext, targets: list[str], detail: dict[str, Any]) -> None:
        for name in targets:
            ctx.backend.set_clock(ctx.node(name), REAL)  # offsets are relative to real time
            with ctx.lock:
                ctx.dirty_clocks.discard(name)


class Bump(ClockFault):
    """One step of +-offset_s (random 1..60 s, either sign, unless given)."""

    def detail(self, params: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        mag = float(params.get("offset_s", rng.uniform(1, 60)))
        sign = 1 if "offset_s" in params else rng.choice([-1, 1])
        return {"offset_s": int(round(sign * mag))}

    def skew(self, ctx: NemesisContext, node: Node, detail: dict[str, Any]) -> None:
        ctx.backend.set_clock(node, _offset(detail["offset_s"]))


class Strobe(ClockFault):
    """The offset flips between +d and real time every period_s (a thread per node)."""

    def detail(self, params: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        return {
            "offset_s": int(params.get("offset_s", rng.choice([-1, 1]) * rng.randint(1, 10))),
            "period_s": max(CACHE_S, float(params.get("period_s", CACHE_S))),
        }

    def skew(self, ctx: NemesisContext, node: Node, detail: dict[str, Any]) -> None:
        stop = threading.Event()
        t = threading.Thread(
            target=_strobe,
            name=f"strobe-{node.name}",
            daemon=True,
            args=(ctx.backend, node, detail["offset_s"], detail["period_s"], stop),
        )
        ctx.state[f"strobe:{node.name}"] = (stop, t)
        t.start()

    def undo(self, ctx: NemesisContext, targets: list[str], detail: dict[str, Any]) -> None:
        for name in targets:
            stop, t = ctx.state.pop(f"strobe:{name}", (None, None))
            if stop is not None:
                stop.set()
                t.join(5)
        super().undo(ctx, targets, detail)


class Rate(ClockFault):
    """The clock runs `rate` x fast (from now on: no jump)."""

    def detail(self, params: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        return {"rate": float(params.get("rate", DEFAULT_RATE))}

    def skew(self, ctx: NemesisContext, node: Node, detail: dict[str, Any]) -> None:
        ctx.backend.set_clock(node, f"+0 x{detail['rate']:g}")

    def undo(self, ctx: NemesisContext, targets: list[str], detail: dict[str, Any]) -> None:
        # Back to 1x; the lead gained stays (stepping back now would freeze the leader's
        # session expiry for that long), so the node stays dirty: the final heal puts its
        # clock back on real time.
        for name in targets:
            ctx.backend.set_clock(ctx.node(name), NORMAL_RATE)


def _strobe(
    backend: Backend, node: Node, offset_s: int, period_s: float, stop: threading.Event
) -> None:
    high = True
    while not stop.is_set():
        backend.set_clock(node, _offset(offset_s) if high else REAL)
        high = not high
        stop.wait(period_s)


def heal(ctx: NemesisContext, everything: bool = False) -> list[str]:
    """Put every skewed clock back on real time: stop strobes, `+0 x1`, wait for it to be read,
    `+0`. `everything` resets all nodes (cleanup after a crash, when nobody remembers)."""
    for key in [k for k in ctx.state if k.startswith("strobe:")]:
        stop, t = ctx.state.pop(key)
        stop.set()
        t.join(5)
    names = [n.name for n in ctx.backend.nodes] if everything else sorted(ctx.dirty_clocks)
    if everything:
        names += [h.name for h in ctx.clients()]
    if not names:
        return []
    problems = []
    clients = {h.name: h for h in ctx.clients()}
    for step in (NORMAL_RATE, REAL):
        for name in names:
            try:
                if name in clients:  # a client's program (nemesis/client_clock.py)
                    clients[name].set_clock(step)
                else:
                    ctx.backend.set_clock(ctx.node(name), step)
            except Exception as e:  # noqa: BLE001 - report, keep healing the rest
                problems.append(f"{name}: {e}")
        if step == NORMAL_RATE:
            time.sleep(CACHE_S)
    ctx.dirty_clocks.clear()
    return problems
