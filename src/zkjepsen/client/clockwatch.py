"""The clock a client's program reads, seen from beside it: the evidence that a client clock
fault landed (nemesis/client_clock.py waits for it, and records what it measured). A thread of
the recorder (client/main.py) watches, and writes what it saw into the client's own history as
events `f: "clock"`; the recorder itself stays on real time. Stdlib only: it runs in the client
containers, and on the host (the nemesis measures with `measure`).

One way per mechanism (nemesis/client_clock.py says which program gets which):
- zkj-timewarp (Go, any `--client-cmd` or `exec:` program): the launcher maps an observation
  page (`ZKJ_TIMEWARP_OBSERVE`, layout in client/drivers/timewarp/timewarp.h) into every process
  it reaches, and each clock reading the program makes is written there: the real clock, what
  the process read, and the control file's generation it used. So what is seen is what the
  program itself read, however it was started. The watch samples the page every `POLL_S` and
  writes a few readings per generation (`SAMPLES`, `SPACING_NS` apart: two give a rate), not
  every reading (a lock loop reads its clock thousands of times a second). The page is the
  program's to write (its processes write their readings into it), so a program could forge
  them: the most that buys it is a clock fault counted as landed on itself; the history's
  other records stay beyond its reach (client/seal.py).
- libfaketime (the Python and Java drivers): the clock is faked inside the program's process,
  where nothing outside can read it; as Jepsen's check-offsets runs `date` on a node, the watch
  runs the C clock probe (client image, `PROBE`) with the program's own environment (its
  LD_PRELOAD and FAKETIME_* variables) and uid whenever the control file changes. That shows
  what libfaketime makes of the file in a process started like the program, not the program's
  own reading (a JDK that bypasses libc would escape it: nemesis/client_clock.py).

An event's value: `{"via", "gen", "rate_on", "samples": [[clock, real_ns, read_ns], ...]}`,
`gen` being what the control file said when the reading was made (timewarp: its sequence
number; libfaketime: its spec text), `clock` one of `CLOCKS`, `real_ns` that clock's real
reading, `read_ns` what the program read. The processes the launcher reached go in events
`{"via": "timewarp", "injected": [[pid, exe], ...]}`, each once, and those whose exec it saw
but could not reach in `"missed"` (docker/timewarp.Seen).
"""

from __future__ import annotations

import logging
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from zkjepsen.docker import timewarp

CLOCKS = timewarp.CLOCK_NAMES  # realtime, monotonic, boottime
OBSERVE_ENV = "ZKJ_TIMEWARP_OBSERVE"
PROBE = "/opt/zkjepsen/drivers/timewarp/clockprobe"  # the C probe (timewarp/probe.c)
PROBE_LINES, PROBE_MS = 3, 150  # two readings 0.3 s apart measure a rate
POLL_S = 0.05
SAMPLES = 3  # readings written per clock and generation
SPACING_NS = 150_000_000  # between two of them: a rate over less would be noise
MIN_SPAN_NS = 100_000_000  # a rate is measured over at least this much real time
RATE = re.compile(r"x\s*(\d+(?:\.\d+)?)")  # a libfaketime spec's rate
S = 1e9
log = logging.getLogger(__name__)


def read_page(path: str) -> timewarp.Seen | None:
    """The observation page at `path` (nothing seen: not there yet; None: not yet a page, the
    launcher is creating it)."""
    try:
        return timewarp.observed(Path(path))
    except (OSError, ValueError):
        return None


class PageSampler:
    """Which of the page's readings go into the history: the first reading of each clock under
    a new generation, then up to `SAMPLES` in all, each `SPACING_NS` after the last written."""

    def __init__(self, via: str = "timewarp") -> None:
        self.via = via
        self.last: dict[str, tuple[int, int]] = {}  # clock -> (gen, real_ns) last written
        self.count: dict[str, int] = {}  # clock -> readings written under its gen
        self.injections = 0
        self.told: set[tuple[str, int, str]] = set()  # the processes already said

    def feed(self, page: timewarp.Seen) -> list[dict[str, Any]]:
        by_gen: dict[int, list[list[Any]]] = {}
        for name, r in page.clocks.items():
            last = self.last.get(name)
            if last is not None and r.gen == last[0]:
                if r.real_ns == last[1] or self.count[name] >= SAMPLES:
                    continue
                if r.real_ns - last[1] < SPACING_NS:
                    continue
                self.count[name] += 1
            else:
                self.count[name] = 1
            self.last[name] = (r.gen, r.real_ns)
            by_gen.setdefault(r.gen, []).append([name, r.real_ns, r.read_ns])
        out: list[dict[str, Any]] = [
            {"via": self.via, "gen": gen, "rate_on": "monotonic", "samples": samples}
            for gen, samples in sorted(by_gen.items())
        ]
        if page.injections < self.injections:  # a new page: the program was started again
            self.told.clear()
        self.injections = page.injections
        told: dict[str, list[list[Any]]] = {}
        for key, procs in (("injected", page.injected), ("missed", page.missed)):
            for pid, exe in procs:
                if (key, pid, exe) not in self.told:
                    self.told.add((key, pid, exe))
                    told.setdefault(key, []).append([pid, exe])
        if told:
            out.append({"via": self.via, **told})
        return out


def real_offset_ns() -> int:
    """CLOCK_REALTIME minus CLOCK_MONOTONIC here, on real time (the kernel's: every container
    shares it), the smallest of a few reads (the one least cut by a preemption)."""
    best = None
    for _ in range(5):
        m0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        r = time.clock_gettime_ns(time.CLOCK_REALTIME)
        m1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if best is None or m1 - m0 < best[0]:
            best = (m1 - m0, r - (m0 + m1) // 2)
    assert best is not None
    return best[1]


def probe_samples(out: str, delta_ns: int) -> list[list[Any]]:
    """The C probe's lines (`raw_mono realtime monotonic boottime gettimeofday_us time_s`, the
    first by a raw syscall, which nothing fakes) as samples; `delta_ns` is real REALTIME minus
    MONOTONIC (`real_offset_ns`)."""
    samples: list[list[Any]] = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 6 or not all(p.lstrip("-").isdigit() for p in parts):
            continue
        raw, realtime, mono, boot = (int(p) for p in parts[:4])
        samples += [["realtime", raw + delta_ns, realtime], ["monotonic", raw, mono]]
    return samples


def probe_ms(spec: str) -> int:
    """The probe's ms between readings for a libfaketime `spec`: libfaketime scales the probe's
    own sleep by the spec's rate (`xK`), so PROBE_MS of real time takes PROBE_MS x K of its."""
    m = RATE.search(spec)
    return int(round(PROBE_MS * max(1.0, float(m.group(1)) if m else 1.0)))


def rate_on(env: dict[str, str]) -> str:
    """The clock a libfaketime process's rate shows on: its monotonic clock, unless faking it
    is off (FAKETIME_DONT_FAKE_MONOTONIC=1: Python's drivers), then its wall clock."""
    return "realtime" if env.get("FAKETIME_DONT_FAKE_MONOTONIC") == "1" else "monotonic"


class ProbeWatch:
    """Runs the probe with the program's environment and uid when `control` (its libfaketime
    file) says something new, and turns its lines into one event."""

    def __init__(
        self,
        control: str,
        env: dict[str, str],
        uid: int | None = None,
        run: Callable[..., Any] = subprocess.run,
    ) -> None:
        self.control, self.env, self.uid, self.run = control, env, uid, run
        self.last: str | None = None

    def poll(self) -> list[dict[str, Any]]:
        try:
            with open(self.control) as fh:
                spec = fh.read().strip()
        except OSError:
            return []
        if spec == self.last:
            return []
        self.last = spec
        who: dict[str, Any] = (
            {} if self.uid is None else {"user": self.uid, "group": self.uid, "extra_groups": []}
        )
        try:
            res = self.run(
                [PROBE, str(PROBE_LINES), str(probe_ms(spec))],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=10,
                **who,
            )
        except (OSError, subprocess.SubprocessError) as e:
            return [{"via": "libfaketime-probe", "gen": spec, "error": f"{type(e).__name__}: {e}"}]
        samples = probe_samples(res.stdout, real_offset_ns())
        value: dict[str, Any] = {"via": "libfaketime-probe", "gen": spec}
        value.update(rate_on=rate_on(self.env), samples=samples)
        if not samples:
            value["error"] = f"the probe printed nothing (exit {res.returncode})"
        return [value]


class ClockWatch:
    """The recorder's thread: every `POLL_S`, what the sources saw, written by `emit`."""

    def __init__(
        self,
        emit: Callable[[dict[str, Any]], None],
        stop: threading.Event,
        page: str | None = None,
        probe: ProbeWatch | None = None,
    ) -> None:
        self.emit, self.stop = emit, stop
        self.page, self.probe = page, probe
        self.sampler = PageSampler()
        self.thread = threading.Thread(target=self._run, daemon=True, name="clockwatch")

    def start(self) -> ClockWatch:
        self.thread.start()
        return self

    def poll(self) -> None:
        values: list[dict[str, Any]] = []
        if self.page:
            page = read_page(self.page)
            if page is not None:
                values += self.sampler.feed(page)
        if self.probe is not None:
            values += self.probe.poll()
        for v in values:
            self.emit(v)

    def _run(self) -> None:
        while not self.stop.wait(POLL_S):
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - the watch must never stop the recorder
                log.exception("clock watch")


def measure(values: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The offset and rate the events' samples show (all under one generation): the offset
    (REALTIME read minus real, s) of the last REALTIME sample, the rate (read / real elapsed)
    between the two samples furthest apart on the clock the events say (`rate_on`; else any
    clock), over at least MIN_SPAN_NS; and when (`at_ns`: the real CLOCK_MONOTONIC of the
    latest MONOTONIC sample, the kernel's, shared by every container). None where there is not
    enough to say."""
    by_clock: dict[str, dict[int, int]] = {}
    via, on = "", ""
    for v in values:
        via, on = via or str(v.get("via", "")), on or str(v.get("rate_on", ""))
        for s in v.get("samples") or ():
            if isinstance(s, list) and len(s) == 3 and s[0] in CLOCKS:
                by_clock.setdefault(s[0], {})[int(s[1])] = int(s[2])
    n = sum(len(x) for x in by_clock.values())
    wall = by_clock.get("realtime", {})
    offset = None
    if wall:
        last = max(wall)
        offset = (wall[last] - last) / S
    rate = None
    for name in [on, *CLOCKS]:
        got = by_clock.get(name, {})
        if len(got) >= 2 and max(got) - min(got) >= MIN_SPAN_NS:
            lo, hi = min(got), max(got)
            rate = (got[hi] - got[lo]) / (hi - lo)
            break
    mono = by_clock.get("monotonic", {})
    at_ns = max(mono) if mono else None
    return {"offset_s": offset, "rate": rate, "via": via, "samples": n, "at_ns": at_ns}
