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
the final heal steps back the lead it gained.
"""

from __future__ import annotations

import math
import platform
import random
from typing import Any

from zkjepsen.client.spec import CONTROL_DIR, CONTROL_NAME, WARP_NAME
from zkjepsen.nemesis.targets import NemesisContext, resolve_client

REAL = "+0"
NORMAL_RATE = "+0 x1"
NAMES = ("clock-skew-client", "clock-rate-client")
FAKETIME_LANGUAGES = ("python", "java")  # measured under libfaketime; the rest: zkj-timewarp


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
    def __init__(self, kind: str) -> None:
        self.kind = kind  # "skew" | "rate"

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: dict[str, Any]
    ) -> tuple[list[str], dict[str, Any]]:
        client, how = resolve_client(ctx, target, rng)
        detail: dict[str, Any] = {"chosen": how}
        if self.kind == "skew":
            default = math.ceil(2 * ctx.session_timeout_of(client))
            detail["offset_s"] = int(round(float(params.get("offset_s", default))))
        else:
            detail["rate"] = float(params.get("rate", 4.0))
        return [client], detail

    def apply(self, ctx: NemesisContext, targets: list[str], detail: dict[str, Any]) -> None:
        for name in targets:
            with ctx.lock:
                ctx.dirty_clocks.add(name)
            if self.kind == "skew":
                ctx.client(name).set_clock(f"{detail['offset_s']:+d}")
            else:
                ctx.client(name).set_clock(f"+0 x{detail['rate']:g}")

    def undo(self, ctx: NemesisContext, targets: list[str], detail: dict[str, Any]) -> None:
        for name in targets:
            if self.kind == "skew":
                ctx.client(name).set_clock(REAL)
                with ctx.lock:
                    ctx.dirty_clocks.discard(name)
            else:
                ctx.client(name).set_clock(NORMAL_RATE)  # the final heal steps back the lead
