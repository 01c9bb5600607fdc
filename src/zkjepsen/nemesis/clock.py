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

Landed means seen (`clock_seen` in the fault's detail; faultkinds.landing judges it): after the
write, `apply` reads the target server's own clock, at most `WAIT_S`, and measures offset and
rate from two readings (client/clockwatch.measure), as Jepsen's check-offsets runs `date` on
each node. Under zkj-timewarp (etcd, Redis) that is the launcher's observation page, what the
server's own processes read, when the backend offers one (`clock_page(node)`); under
libfaketime (ZooKeeper) the C clock probe run in the server's container with the JVM's own
LD_PRELOAD and FAKETIME_* environment. The final heal's backward step of the wall-clock lead a
rate built is recorded in that rate fault's detail (`heal_step_s`, negative, and how it was
known: `heal_step_via`).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from zkjepsen.backends.base import Backend
from zkjepsen.client import clockwatch
from zkjepsen.docker import timewarp
from zkjepsen.docker.cluster import Node
from zkjepsen.nemesis.family import Detail, FaultFamily, Params
from zkjepsen.nemesis.targets import NemesisContext, resolve_servers

CACHE_S = 1.2  # > FAKETIME_CACHE_DURATION: a write is certainly seen after this
DEFAULT_RATE = 4.0
REAL = "+0"
NORMAL_RATE = "+0 x1"
WAIT_S = 5.0  # for the target's clock to be seen doing what the fault says
RATES = "clock:rates"  # ctx.state: target -> [[rate fault's detail, applied, undone], ...]
OBSERVED = ("clock_seen", "heal_step_s", "heal_step_via")  # a replay's detail drops these
# The C probe with the environment of the process that reads the libfaketime file (the JVM),
# taken from its /proc entry, one variable a line (a value may hold spaces); `env -i` keeps
# nothing else. Not FAKETIME_SHARED: it names the JVM's own semaphore and shared memory, which
# a probe must not take part in (a probe killed holding that semaphore would stall the JVM's
# clock). Its arguments: the probe, how many lines, the ms between them.
JVM_PROBE = """IFS='
'
for p in /proc/[0-9]*; do
  e=$(tr '\\0' '\\n' < $p/environ 2>/dev/null | grep -E '^(LD_PRELOAD|FAKETIME_[A-Z_]*)=' |
    grep -v '^FAKETIME_SHARED=')
  case "$e" in *FAKETIME_TIMESTAMP_FILE=*) exec env -i $e "$0" "$1" "$2";; esac
done
exit 3"""


def _offset(seconds: float) -> str:
    return f"{int(round(seconds)):+d}"  # whole seconds: the format libfaketime documents


class ClockFault:
    """What every clock kind shares: it skews servers only, marks them dirty until their
    clock is back on real time, and its end puts the offset back."""

    family: ClassVar[FaultFamily]

    def detail(self, params: Params, rng: random.Random) -> Detail:
        raise NotImplementedError

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        targets = resolve_servers(ctx, target, rng)
        return targets, self.detail(params, rng)

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        for key in OBSERVED:
            detail.pop(key, None)
        for name in targets:
            with ctx.lock:
                ctx.dirty_clocks.add(name)
            self.skew(ctx, ctx.node(name), detail)
        enough, spec = self.wants(detail), self.spec(detail)
        seen = ctx.each(lambda name: see_server(ctx, ctx.node(name), enough, spec), targets)
        detail["clock_seen"] = dict(zip(targets, seen, strict=True))

    def spec(self, detail: Detail) -> str:
        """What its control file says while the fault is on (a strobe: in its high half)."""
        return _offset(detail["offset_s"])

    def wants(self, detail: Detail) -> Callable[[dict[str, Any]], bool]:
        """When a measurement is enough: it shows the offset (a rate fault: the rate) set."""
        return lambda got: got["offset_s"] is not None and _near(got["offset_s"], detail)

    def skew(self, ctx: NemesisContext, node: Node, detail: Detail) -> None:
        raise NotImplementedError

    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        for name in targets:
            record_heal_steps(ctx, [name], {}, time.monotonic())  # a rate's lead goes too
            ctx.backend.set_clock(ctx.node(name), REAL)  # offsets are relative to real time
            with ctx.lock:
                ctx.dirty_clocks.discard(name)


class Bump(ClockFault):
    """One step of +-offset_s (random 1..60 s, either sign, unless given)."""

    def detail(self, params: Params, rng: random.Random) -> Detail:
        mag = float(params.get("offset_s", rng.uniform(1, 60)))
        sign = 1 if "offset_s" in params else rng.choice([-1, 1])
        return {"offset_s": int(round(sign * mag))}

    def skew(self, ctx: NemesisContext, node: Node, detail: Detail) -> None:
        ctx.backend.set_clock(node, self.spec(detail))


class Strobe(ClockFault):
    """The offset flips between +d and real time every period_s (a thread per node)."""

    def detail(self, params: Params, rng: random.Random) -> Detail:
        return {
            "offset_s": int(params.get("offset_s", rng.choice([-1, 1]) * rng.randint(1, 10))),
            "period_s": max(CACHE_S, float(params.get("period_s", CACHE_S))),
        }

    def skew(self, ctx: NemesisContext, node: Node, detail: Detail) -> None:
        stop = threading.Event()
        t = threading.Thread(
            target=_strobe,
            name=f"strobe-{node.name}",
            daemon=True,
            args=(ctx.backend, node, detail["offset_s"], detail["period_s"], stop),
        )
        ctx.state[f"strobe:{node.name}"] = (stop, t)
        t.start()

    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        for name in targets:
            stop, t = ctx.state.pop(f"strobe:{name}", (None, None))
            if stop is not None:
                stop.set()
                t.join(5)
        super().undo(ctx, targets, detail)


class Rate(ClockFault):
    """The clock runs `rate` x fast (from now on: no jump)."""

    def detail(self, params: Params, rng: random.Random) -> Detail:
        return {"rate": float(params.get("rate", DEFAULT_RATE))}

    def spec(self, detail: Detail) -> str:
        return f"+0 x{detail['rate']:g}"

    def skew(self, ctx: NemesisContext, node: Node, detail: Detail) -> None:
        ctx.backend.set_clock(node, self.spec(detail))
        remember_rate(ctx, node.name, detail)

    def wants(self, detail: Detail) -> Callable[[dict[str, Any]], bool]:
        want = float(detail["rate"])
        return lambda got: got["rate"] is not None and abs(got["rate"] - want) <= 0.01 * want

    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        # Back to 1x; the lead gained stays (stepping back now would freeze the leader's
        # session expiry for that long), so the node stays dirty: the final heal puts its
        # clock back on real time.
        for name in targets:
            ctx.backend.set_clock(ctx.node(name), NORMAL_RATE)
            rate_ended(ctx, name, detail)


def _near(offset_s: float, detail: Detail) -> bool:
    want = float(detail.get("offset_s", 0))
    return abs(offset_s - want) <= max(0.01 * abs(want), 0.05)


def remember_rate(ctx: NemesisContext, name: str, detail: Detail) -> None:
    """A rate fault on `name` began: its lead will be stepped back by the final heal."""
    with ctx.lock:
        ctx.state.setdefault(RATES, {}).setdefault(name, []).append(
            [detail, time.monotonic(), None]
        )


def rate_ended(ctx: NemesisContext, name: str, detail: Detail) -> None:
    """The rate fault whose detail is `detail` went back to 1x on `name`: its lead stays."""
    with ctx.lock:
        for entry in ctx.state.get(RATES, {}).get(name, []):
            if entry[0] is detail and entry[2] is None:
                entry[2] = time.monotonic()


def see_server(
    ctx: NemesisContext, node: Node, enough: Callable[[dict[str, Any]], bool], spec: str
) -> dict[str, Any]:
    """What server `node`'s own clock was seen doing (clock_seen's entry: offset_s, rate, via,
    at_ns, samples) once its control file says `spec`, looked at until `enough` says so or
    WAIT_S is over. Never raises."""
    nothing = clockwatch.measure([])
    page_of = getattr(ctx.backend, "clock_page", None)
    page = page_of(node) if callable(page_of) and getattr(ctx.backend, "timewarp", False) else None
    best = nothing
    deadline = time.monotonic() + WAIT_S
    values: list[dict[str, Any]] = []
    sampler = clockwatch.PageSampler()
    while time.monotonic() < deadline:
        try:
            if page is not None:
                got = clockwatch.read_page(str(page))
                values += sampler.feed(got) if got is not None else []
                seen = _page_measure(values, _warp_seq(ctx, node))
            elif getattr(ctx.backend, "timewarp", False):
                return nothing  # no page to read: nothing is seen
            else:
                seen = _probe_jvm(ctx, node, spec)
        except Exception:  # noqa: BLE001 - a server that cannot be read is not seen
            seen = nothing
        if seen["samples"]:
            best = seen
            if enough(seen):
                break
        time.sleep(0.05)
    return best


def _warp_seq(ctx: NemesisContext, node: Node) -> int | None:
    path_of = getattr(ctx.backend, "timewarp_file", None)
    if not callable(path_of):
        return None
    return timewarp.seq(Path(path_of(node)))


def _page_measure(values: list[dict[str, Any]], gen: int | None) -> dict[str, Any]:
    """The page's readings under the latest generation (`gen`, the control file's now)."""
    return clockwatch.measure(v for v in values if v.get("gen") == gen and v.get("samples"))


def _probe_jvm(ctx: NemesisContext, node: Node, spec: str) -> dict[str, Any]:
    """One run of the clock probe in `node`'s container with its JVM's own environment, its
    libfaketime file saying `spec`."""
    lines, ms = str(clockwatch.PROBE_LINES), str(clockwatch.probe_ms(spec))
    code, out = ctx.backend.exec(node, ["sh", "-c", JVM_PROBE, clockwatch.PROBE, lines, ms])
    samples = clockwatch.probe_samples(out, clockwatch.real_offset_ns())
    # the JVM fakes its monotonic clock (above): its rate shows there
    return clockwatch.measure(
        [{"via": "libfaketime-probe", "rate_on": "monotonic", "samples": samples}]
    )


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
    at_normal = time.monotonic()
    for step in (NORMAL_RATE, REAL):
        if step == REAL:
            record_heal_steps(ctx, names, clients, at_normal)
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


def record_heal_steps(
    ctx: NemesisContext, names: list[str], clients: dict[str, Any], at_normal: float
) -> None:
    """Each of `names`' wall clock is about to be put back on real time (`+0`: the final heal,
    or the end of a step or a strobe on a clock a rate made run ahead): the lead its rate faults
    built goes at once, a backward step. Said in the last rate fault's detail on each
    (`heal_step_s`, <= 0): zkj-timewarp's, read from the control lines the step replaces;
    libfaketime's (its lead lives in the process), (rate - 1) x the time each was in force
    (until `at_normal` for one still on)."""
    for name in names:
        with ctx.lock:
            entries = ctx.state.get(RATES, {}).pop(name, None)
        if not entries:
            continue
        try:
            lead = _wall_lead_s(ctx, name, clients)
        except Exception:  # noqa: BLE001 - unreadable: estimated, as for libfaketime
            lead = None
        via = "the control lines"
        if lead is None:
            lead = sum((e[0]["rate"] - 1) * ((e[2] or at_normal) - e[1]) for e in entries)
            via = "rate x time in force"
        entries[-1][0]["heal_step_s"] = round(-lead, 3)
        entries[-1][0]["heal_step_via"] = via


def _wall_lead_s(ctx: NemesisContext, name: str, clients: dict[str, Any]) -> float | None:
    if name in clients:
        lead = clients[name].wall_lead_s()
        return None if lead is None else float(lead)
    path_of = getattr(ctx.backend, "timewarp_file", None)
    if not getattr(ctx.backend, "timewarp", False) or not callable(path_of):
        return None
    now = time.clock_gettime_ns(time.CLOCK_REALTIME)
    return (timewarp.reading(timewarp.read(Path(path_of(ctx.node(name))))[0], now) - now) / 1e9


# The clocks of the servers' JVMs and of the clients' programs (nemesis/client_clock.py) are
# one mechanism, a control file each, put back together: one heal steps them all at half speed
# then to real time, so a heal waits out the clock cache once, not once per kind of clock.
CLOCK = FaultFamily("clock", heal=heal, rank=2)
ClockFault.family = CLOCK
