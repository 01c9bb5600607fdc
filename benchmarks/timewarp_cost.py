"""What zkj-timewarp costs a program, and what a rate does to its timed waits.

1. ns per clock_gettime(MONOTONIC) call: no launcher (the vDSO), under the launcher, under the
   launcher with its observation page (ZKJ_TIMEWARP_OBSERVE: every reading is written to a
   shared slot), and the same with two threads reading at once (the slot's cache line is then
   shared between cores). What a run without clock faults saves: since issue 47 etcd and
   Redis servers start under the launcher only when a server clock fault is planned.
2. µs per fork + exec + wait of a small static program: no launcher, and under it (the
   launcher traces the whole tree: the fork and the exec each stop once for it).
3. A timed wait under rate 4 (`+0 x4`), then after the heal (`+0 x1`, `+0`): a monotonic
   pthread_cond_timedwait of 200 ms (glibc and the JVM wait this way: an absolute deadline
   computed from the clock the program reads, which the kernel compares with the real one)
   and a relative nanosleep of 200 ms (Go's time.Sleep), in real ms, beside the lead the
   program's monotonic clock had over the real one when the wait began. The absolute wait
   takes lead + 200 ms: the lead grows 3 s per real second at rate 4 (and by 3x the wait's
   own length), and the heal gives it back at half speed, so waits stay stretched for twice
   the lead after it (issue 47's Java Thread.sleep(500): 2.4-13.7 s, ~30 s after the heal).

Built here with this machine's cc (the same build.sh the images run); run on the host (a
container shares its kernel, so a call costs the same there).

    flock /tmp/zkj-timing.lock .venv/bin/python benchmarks/timewarp_cost.py [--calls 2000000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from zkjepsen.docker import timewarp as tw

SRC = Path(tw.__file__).resolve().parents[1] / "client" / "drivers" / "timewarp"

BENCH = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static long long raw(clockid_t c) {
    struct timespec ts; syscall(SYS_clock_gettime, c, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static long long rd(clockid_t c) {
    struct timespec ts; clock_gettime(c, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static long calls;
static void *spin(void *unused) {
    (void)unused; struct timespec ts;
    for (long i = 0; i < calls; i++) clock_gettime(CLOCK_MONOTONIC, &ts);
    return 0;
}
int main(int argc, char **argv) {
    if (argv[1][0] == 'c') {  /* cost: N calls of clock_gettime(MONOTONIC) per thread */
        calls = atol(argv[2]);
        int threads = atoi(argv[3]);
        pthread_t t[8];
        long long t0 = raw(CLOCK_MONOTONIC);
        for (int i = 1; i < threads; i++) pthread_create(&t[i], 0, spin, 0);
        spin(0);
        for (int i = 1; i < threads; i++) pthread_join(t[i], 0);
        printf("%.1f\n", (double)(raw(CLOCK_MONOTONIC) - t0) / calls);
        return 0;
    }
    if (argv[1][0] == 'f') {  /* fork: N x fork + exec argv[3] + wait, us each */
        int n = atoi(argv[2]);
        long long t0 = raw(CLOCK_MONOTONIC);
        for (int i = 0; i < n; i++) {
            pid_t p = fork();
            if (p == 0) { execl(argv[3], argv[3], (char *)0); _exit(127); }
            int st; waitpid(p, &st, 0);
        }
        printf("%.1f\n", (double)(raw(CLOCK_MONOTONIC) - t0) / n / 1000);
        return 0;
    }
    /* wait: print "ready", then for each line on stdin ("c" or "s") one 200 ms wait:
       `lead_ms real_ms` (c: monotonic pthread_cond_timedwait, s: relative nanosleep) */
    pthread_condattr_t ca; pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_t cv; pthread_cond_init(&cv, &ca);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    char line[16];
    printf("ready\n"); fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        long long lead = rd(CLOCK_MONOTONIC) - raw(CLOCK_MONOTONIC), t0 = raw(CLOCK_MONOTONIC);
        if (line[0] == 'c') {
            struct timespec dl; clock_gettime(CLOCK_MONOTONIC, &dl);
            dl.tv_nsec += 200000000;
            if (dl.tv_nsec >= 1000000000) { dl.tv_sec++; dl.tv_nsec -= 1000000000; }
            pthread_mutex_lock(&mu);
            while (pthread_cond_timedwait(&cv, &mu, &dl) == 0) {}
            pthread_mutex_unlock(&mu);
        } else {
            struct timespec d = {0, 200000000}; nanosleep(&d, 0);
        }
        printf("%.0f %.0f\n", lead / 1e6, (raw(CLOCK_MONOTONIC) - t0) / 1e6); fflush(stdout);
    }
    return 0;
}
"""


def build(out: Path) -> None:
    subprocess.run(["sh", str(SRC / "build.sh"), str(out)], check=True)
    (out / "bench.c").write_text(BENCH)
    subprocess.run(
        ["cc", "-O2", "-pthread", str(out / "bench.c"), "-o", str(out / "bench")], check=True
    )
    (out / "nop.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["cc", "-O2", "-static", str(out / "nop.c"), "-o", str(out / "nop")], check=True)


def run(out: Path, argv: list[str], control: Path | None, seen: Path | None = None) -> float:
    env = {k: v for k, v in os.environ.items() if k != "ZKJ_TIMEWARP_OBSERVE"}
    if seen is not None:
        env["ZKJ_TIMEWARP_OBSERVE"] = str(seen)
    if control is not None:
        argv = [str(out / "zkj-timewarp"), str(control), *argv]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    return float(done.stdout)


def best(out: Path, argv: list[str], control, seen=None, n: int = 5) -> tuple[float, float]:
    """(min, median) of n runs: on a loaded machine the minimum is the cost, the median what
    a busy run sees."""
    xs = sorted(run(out, argv, control, seen) for _ in range(n))
    return xs[0], xs[len(xs) // 2]


def per_call(out: Path, control: Path, calls: int) -> None:
    bench = str(out / "bench")
    seen = out / "seen"
    print(f"clock_gettime(MONOTONIC), {calls} calls per thread, ns per call (min, median of 5):")
    cases = [
        ("no launcher (vDSO)", None, None, 1),
        ("launcher, real time", control, None, 1),
        ("launcher + observation page", control, seen, 1),
        ("no launcher, 2 threads", None, None, 2),
        ("launcher, 2 threads", control, None, 2),
        ("launcher + page, 2 threads", control, seen, 2),
    ]
    for name, ctl, page, threads in cases:
        lo, mid = best(out, [bench, "c", str(calls), str(threads)], ctl, page)
        print(f"  {name:32s} {lo:8.1f} {mid:8.1f}")


def forks(out: Path, control: Path, n: int) -> None:
    argv = [str(out / "bench"), "f", str(n), str(out / "nop")]
    print(f"fork + exec + wait of a static no-op, {n} times, us each (min, median of 5):")
    for name, ctl in (("no launcher", None), ("under the launcher", control)):
        lo, mid = best(out, argv, ctl)
        print(f"  {name:32s} {lo:8.1f} {mid:8.1f}")


def waits(out: Path, control: Path) -> None:
    """Timed waits of 200 ms under rate 4 (from the program's start), then after the heal."""
    tw.blank(control)
    p = subprocess.Popen(
        [str(out / "zkj-timewarp"), str(control), str(out / "bench"), "w"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdin is not None and p.stdout is not None
    p.stdout.readline()

    def one(kind: str) -> str:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(kind + "\n")
        p.stdin.flush()
        lead, real = p.stdout.readline().split()
        return f"{kind}: lead {lead:>6s} ms, waited {real:>6s} ms"

    print("200 ms timed waits (c: monotonic pthread_cond_timedwait, s: relative nanosleep):")
    print("  real time:   " + one("c") + " | " + one("s"))
    tw.apply(control, "+0 x4")
    time.sleep(0.3)  # a lead of ~0.9 s; each c wait below adds 3x its own length
    print("  rate 4:      " + one("s") + " | " + one("c"))
    tw.apply(control, "+0 x1")
    tw.apply(control, "+0")  # the heal: the lead is given back at half speed
    for _ in range(12):
        line = one("c")
        print("  after heal:  " + line)
        if float(line.split()[-2]) < 250:
            break
    p.stdin.close()
    p.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2_000_000)
    ap.add_argument("--forks", type=int, default=300)
    a = ap.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cpus")
    with tempfile.TemporaryDirectory(prefix="zkj-timewarp-cost-") as d:
        out = Path(d)
        build(out)
        control = out / "ctl"
        tw.blank(control)
        per_call(out, control, a.calls)
        forks(out, control, a.forks)
        waits(out, control)
    print(f"load average: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
