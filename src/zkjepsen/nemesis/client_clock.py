"""Clock faults on clients: libfaketime in the program under test, never in the recorder.

When a run has a client clock fault, every client's program (the process the recorder drives
through the wire protocol) starts with libfaketime preloaded and its own control file,
`/control/faketime-cN` (the run's control directory, read-only in the container; the host
rewrites the file atomically, read at most once a second). The recorder beside it is not
preloaded: the history's stamps stay on the kernel's real CLOCK_MONOTONIC, so the history says
when things really happened while the program believes what its clock says.

What each language gets (measured, libfaketime 0.9.10 in the client image):
- Python (the Python and service drivers): the wall clock only (`FAKETIME_DONT_FAKE_MONOTONIC=1`;
  with monotonic faking on, python3 hung at start-up). `time.time()` is skewed, `time.monotonic()`
  is real: what a lock that judges expiry by timestamps (SETNX/GETSET) reads.
- Java (Curator): wall and monotonic (monotonic faking must stay on for the JVM: with
  `FAKETIME_DONT_FAKE_MONOTONIC=1` its timed waits break), on JDK 17/21. Curator 2.7.1
  (bullseye) runs on JDK 11, whose nanoTime escapes libfaketime: its wall clock and timed
  waits move, its nanoTime does not (backends/zookeeper/versions.py says why it cannot run on 17).
- Go (go-zookeeper, the etcd drivers) and any other program (`--client-cmd`): libfaketime
  cannot reach a static binary that reads the clock through the vDSO, so these run under
  zkj-timewarp (docker/timewarp.py) instead: the program starts under the launcher, which
  patches its vDSO at exec and reads `/control/timewarp-cN`; REALTIME, MONOTONIC and BOOTTIME
  all move (a skew steps the wall clock only; a rate runs all three). Python and Java keep
  libfaketime, whose behaviour there is measured (above).

Faults: `clock-skew-client` steps one client's clock by `offset_s` (default: ahead by twice the
client's lock TTL / session timeout, rounded up), `clock-rate-client` runs it `rate` x fast
(default 4). The end of a skew puts the clock back on real time; a rate goes back to x1 and
the final heal steps back the lead it gained (nemesis/clock.py records that step).

Landed means seen: after writing the control file, `apply` waits (at most `WAIT_S`) for the
`clock` events the client's recorder writes into its history (client/clockwatch.py: what the
program's processes read, zkj-timewarp's page; or the clock probe run with the program's
environment, libfaketime) under the new generation, and records the offset and rate they show
in `detail["clock_seen"]`; `undo` does the same into `detail["clock_healed"]`. Nothing seen is
recorded as such (offset and rate None): faultkinds.landing calls that fault missed.
"""

from __future__ import annotations

import math
import platform
import random
import time
from typing import Any

from zkjepsen.client.clockwatch import measure
from zkjepsen.client.spec import CONTROL_DIR, CONTROL_NAME, WARP_NAME
from zkjepsen.history.live import Cursor
from zkjepsen.nemesis.arming import WENT_IN
from zkjepsen.nemesis.clock import CLOCK, rate_ended, record_heal_steps, remember_rate
from zkjepsen.nemesis.family import Detail, Params
from zkjepsen.nemesis.targets import NemesisContext, resolve_client

REAL = "+0"
NORMAL_RATE = "+0 x1"
NAMES = ("clock-skew-client", "clock-rate-client")
FAKETIME_LANGUAGES = ("python", "java")  # measured under libfaketime; the rest: zkj-timewarp
WAIT_S = 5.0  # for the program's clock to be seen under a new control file


def program_warp(client: int, language: str) -> str:
    """The zkj-timewarp control file client `client`'s program reads ("": libfaketime's)."""
    if language in FAKETIME_LANGUAGES:
        return ""
    return f"{CONTROL_DIR}/{WARP_NAME.format(n=client)}"


def program_clock(client: int, language: str) -> dict[str, Any]:
    """The `ClientSpec` fields that put client `client`'s program on a clock of its own."""
    return {
        "program_env": program_env(client, language),
        "program_warp": program_warp(client, language),
    }


def program_env(client: int, language: str) -> dict[str, str]:
    """The environment that preloads libfaketime into client `client`'s program (none for a
    program under zkj-timewarp)."""
    if program_warp(client, language):
        return {}
    env = {
        "LD_PRELOAD": f"/usr/lib/{platform.machine()}-linux-gnu/faketime/libfaketime.so.1",
        "FAKETIME_TIMESTAMP_FILE": f"{CONTROL_DIR}/{CONTROL_NAME.format(n=client)}",
        "FAKETIME_CACHE_DURATION": "1",
        "FAKETIME_XRESET": "1",
    }
    if language != "java":
        env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
    return env


class ClientClock:
    family = CLOCK  # a client's program clock is healed with the servers' (clock.py, CLOCK)

    def __init__(self, kind: str) -> None:
        self.kind = kind  # "skew" | "rate"

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        client, how = resolve_client(ctx, target, rng)
        detail: Detail = {"chosen": how}
        if self.kind == "skew":
            default = math.ceil(2 * ctx.session_timeout_of(client))
            detail["offset_s"] = int(round(float(params.get("offset_s", default))))
        else:
            detail["rate"] = float(params.get("rate", 4.0))
        return [client], detail

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        for key in ("clock_seen", "clock_healed", "heal_step_s", "heal_step_via", WENT_IN):
            detail.pop(key, None)  # a replay's detail: the run it replays saw those
        spec = f"{detail['offset_s']:+d}" if self.kind == "skew" else f"+0 x{detail['rate']:g}"
        seen = {}
        for name in targets:
            with ctx.lock:
                ctx.dirty_clocks.add(name)
            seen[name] = set_and_see(ctx, name, spec, rate=self.kind == "rate")
            if self.kind == "rate":
                remember_rate(ctx, name, detail)
        detail["clock_seen"] = seen
        # when every target's clock was first read under the new setting (the history's time):
        # the fault went in then, not when the measurement above was complete (arming.went_in)
        firsts = [x.get("first_ns") for x in seen.values()]
        ints = [t for t in firsts if isinstance(t, int)]
        if firsts and len(ints) == len(firsts):
            detail[WENT_IN] = max(ints)

    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        healed = {}
        for name in targets:
            if self.kind == "skew":  # back on real time: a rate's lead goes too
                record_heal_steps(ctx, [name], {h.name: h for h in ctx.clients()}, time.monotonic())
                healed[name] = set_and_see(ctx, name, REAL, rate=False)
                with ctx.lock:
                    ctx.dirty_clocks.discard(name)
            else:  # the final heal steps back the lead (nemesis/clock.py records the step)
                healed[name] = set_and_see(ctx, name, NORMAL_RATE, rate=True)
                rate_ended(ctx, name, detail)
        detail["clock_healed"] = healed


def set_and_see(ctx: NemesisContext, name: str, spec: str, rate: bool) -> dict[str, Any]:
    """Write `spec` into client `name`'s control file and return what its program's clock was
    then seen doing (`clock_seen`'s entry for it: offset_s, rate, via, at_ns, samples)."""
    tail = _history_tail(ctx, name)
    gen = ctx.client(name).set_clock(spec)
    if tail is None or gen is None:
        return measure([])
    return await_seen(tail, gen, rate)


def _history_tail(ctx: NemesisContext, name: str) -> Cursor | None:
    """A reader of client `name`'s records from now on (the run's live history): only what is
    written next."""
    live = ctx.live
    return live.cursor(int(name.lstrip("c")), from_now=True) if live is not None else None


def await_seen(tail: Cursor, gen: int | str, rate: bool, wait_s: float = WAIT_S) -> dict[str, Any]:
    """The measurement (client/clockwatch.measure) of the `clock` events under `gen` that `tail`
    finds within `wait_s`: as soon as it has an offset (and a rate, if `rate`), else what it
    has when the time is up. Never raises: nothing seen is a measurement of nothing."""
    values: list[dict[str, Any]] = []
    first_ns = None  # the history's time of the first record read under `gen`
    deadline = time.monotonic() + wait_s
    while True:
        for rec in tail.poll():
            v = rec.get("value")
            if rec.get("f") != "clock" or not isinstance(v, dict) or v.get("gen") != gen:
                continue
            if v.get("samples"):
                values.append(v)
                if first_ns is None and isinstance(rec.get("time"), int):
                    first_ns = rec["time"]
        got = measure(values) | {"first_ns": first_ns}
        if got["offset_s"] is not None and (got["rate"] is not None or not rate):
            break
        if time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    return got
