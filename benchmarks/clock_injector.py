"""zkj-timewarp's cost: ns per clock_gettime call, unpatched vs patched (real time, and under a
rate), and how soon a rewritten control file reaches a running process.

Built here with this machine's cc, the same build.sh the images run; run on the host (a
container shares its kernel, so a call costs the same there).

    flock /tmp/zkj-timing.lock .venv/bin/python benchmarks/clock_injector.py [--calls 2000000]

Patched calls are raw syscalls (the stub cannot reuse the vDSO's code), so they cost a
syscall's entry and exit, where the vDSO reads the time from a shared page in user space.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from zkjepsen.docker import timewarp as tw

SRC = Path(tw.__file__).resolve().parents[1] / "client" / "drivers" / "timewarp"

BENCH = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static long long raw(void) {
    struct timespec ts; syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
int main(int argc, char **argv) {
    if (argv[1][0] == 'c') {  /* cost: N calls of clock_gettime(MONOTONIC) */
        long n = atol(argv[2]); struct timespec ts;
        long long t0 = raw();
        for (long i = 0; i < n; i++) clock_gettime(CLOCK_MONOTONIC, &ts);
        printf("%.1f\n", (double)(raw() - t0) / n);
        return 0;
    }
    /* watch: spin until REALTIME leads the real clock by > 1000 s; print the raw monotonic
       reading at that moment, for each of argv[2] changes (the host toggles the lead) */
    int changes = atoi(argv[2]);
    struct timespec r, m;
    int ahead = 0;
    printf("ready\n"); fflush(stdout);
    for (int k = 0; k < changes;) {
        clock_gettime(CLOCK_REALTIME, &r);
        syscall(SYS_clock_gettime, CLOCK_REALTIME, &m);
        int now = r.tv_sec - m.tv_sec > 1000;
        if (now != ahead) { ahead = now; printf("%lld\n", raw()); fflush(stdout); k++; }
    }
    return 0;
}
"""


def build(out: Path) -> None:
    subprocess.run(["sh", str(SRC / "build.sh"), str(out)], check=True)
    (out / "bench.c").write_text(BENCH)
    subprocess.run(["cc", "-O2", str(out / "bench.c"), "-o", str(out / "bench")], check=True)


def cost(out: Path, control: Path | None, calls: int) -> float:
    argv = [str(out / "bench"), "c", str(calls)]
    if control is not None:
        argv = [str(out / "zkj-timewarp"), str(control), *argv]
    return float(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)


def reach(out: Path, control: Path, changes: int) -> list[float]:
    """Microseconds from the control file's rewrite to the process's first skewed reading."""
    tw.blank(control)
    p = subprocess.Popen(
        [str(out / "zkj-timewarp"), str(control), str(out / "bench"), "w", str(changes)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    p.stdout.readline()  # ready
    lags = []
    for k in range(changes):
        time.sleep(0.02)
        written = time.monotonic_ns()
        tw.apply(control, "+3600" if k % 2 == 0 else "+0")
        seen = int(p.stdout.readline())
        lags.append((seen - written) / 1000)
    p.wait(10)
    return lags


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2_000_000)
    ap.add_argument("--changes", type=int, default=40)
    a = ap.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} (1 min)")
    with tempfile.TemporaryDirectory(prefix="zkj-timewarp-bench-") as d:
        out = Path(d)
        build(out)
        control = out / "ctl"
        tw.blank(control)
        plain = [cost(out, None, a.calls) for _ in range(3)]
        same = [cost(out, control, a.calls) for _ in range(3)]
        tw.apply(control, "+0 x4")
        fast = [cost(out, control, a.calls) for _ in range(3)]
        print(f"clock_gettime(MONOTONIC), {a.calls} calls, median of 3, ns per call:")
        print(f"  unpatched (vDSO)            {statistics.median(plain):8.1f}")
        print(f"  patched, real time          {statistics.median(same):8.1f}")
        print(f"  patched, rate 4             {statistics.median(fast):8.1f}")
        box: dict[str, list[float]] = {}
        t = threading.Thread(target=lambda: box.update(lags=reach(out, control, a.changes)))
        t.start()
        t.join(120)
        lags = sorted(box.get("lags", []))
        if lags:
            print(
                f"a rewrite reaches a spinning reader after (us, {len(lags)} changes): "
                f"median {statistics.median(lags):.1f}, max {lags[-1]:.1f}"
            )
        print(f"load average: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
