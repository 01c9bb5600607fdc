"""zkj-timewarp in a real container (the etcd image, which carries the launcher and both
probes): a Go program and a C program read a skewed clock through the vDSO, as unprivileged as
a client's program (uid 65534, no capability, no-new-privileges), while the host rewrites the
control file: a wall-clock step of +3600 s, a 4x rate, back to 1x, and the heal.

The probes print, with every reading, the real CLOCK_MONOTONIC read by a raw syscall (no patch
reaches it), and the host stamps each change on the same kernel clock, so each line is judged
against the change in force when it was read, however slow the machine is."""

from __future__ import annotations

import time
from pathlib import Path

from zkjepsen.docker import resources
from zkjepsen.docker import timewarp as tw

S = 1_000_000_000
GO = "/opt/zkjepsen/drivers/clockprobe/clockprobe"
C = "/opt/zkjepsen/drivers/timewarp/clockprobe"
LINES = 200  # at 50 ms: the container is stopped once the schedule is through


def _lines(container) -> tuple[list[list[int]], list[list[int]]]:
    rows = [ln.split() for ln in container.logs(stderr=False).decode().splitlines()]
    go = [[int(x) for x in r] for r in rows if len(r) == 4]
    c = [[int(x) for x in r] for r in rows if len(r) == 6]
    return go, c


def _after(container, more: int) -> None:
    """Wait until each probe has printed `more` lines more (bounded: a stuck probe fails)."""
    go0, c0 = (len(x) for x in _lines(container))
    for _ in range(600):
        go, c = _lines(container)
        if len(go) >= go0 + more and len(c) >= c0 + more:
            return
        time.sleep(0.05)
    raise AssertionError(f"the probes stopped printing: {container.logs().decode()[-500:]}")


def _segment(rows, at, start: int, end: int | None, lag: int = 0):
    """The rows read (real monotonic `at(row)`) after change `start` and before `end`."""
    return [r for r in rows if at(r) > start + lag and (end is None or at(r) < end)]


def test_go_and_c_read_the_skewed_clock_through_the_vdso(docker_client, etcd_image, tmp_path):
    control = tmp_path / "ctl"
    control.mkdir()
    control.chmod(0o755)
    tw.blank(control / "tw")
    delta = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    run_id = resources.new_run_id()
    script = f"{tw.LAUNCHER} /ctl/tw {GO} {LINES} 50 & {tw.LAUNCHER} /ctl/tw {C} {LINES} 50; wait"
    box = docker_client.containers.run(
        etcd_image,
        ["-c", script],
        entrypoint="/bin/sh",
        name=f"zkjepsen-{run_id}-timewarp",
        labels=resources.labels(run_id, "probe"),
        volumes={str(control): {"bind": "/ctl", "mode": "ro"}},
        user="65534:65534",
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        detach=True,
    )
    try:
        stamps = {}
        _after(box, 5)
        for name, spec in (("bump", "+3600"), ("rate", "+0 x4"), ("x1", "+0 x1"), ("heal", "+0")):
            stamps[name] = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            tw.apply(Path(control / "tw"), spec)
            _after(box, 6)
        box.kill()
        go, c = _lines(box)
    finally:
        resources.remove_run(docker_client, run_id)
    _check_c(c, stamps, delta)
    _check_go(go, stamps, delta)


def _check_c(rows, st, delta):
    # columns: raw_mono realtime monotonic boottime gettimeofday_us time_s
    def lead(r):
        # REALTIME's lead over real time: two clocks read in one row, an offset, not a duration
        return r[1] - r[0] - delta

    first = st["bump"]
    before = [r for r in rows if r[0] < first]
    assert before and all(abs(lead(r)) < S for r in before)  # real until the first change
    assert all(abs(r[2] - r[0]) < S for r in before)  # MONOTONIC too
    bumped = _segment(rows, lambda r: r[0], st["bump"], st["rate"], lag=10**7)
    assert bumped and all(abs(lead(r) - 3600 * S) < S for r in bumped)
    assert all(abs(r[4] * 1000 - r[1]) < S and abs(r[5] * S - r[1]) < 2 * S for r in bumped)
    fast = _segment(rows, lambda r: r[0], st["rate"], st["x1"], lag=10**7)
    _rate_between(fast, lambda r: r[0], lambda r: r[2], 3.5, 4.5)  # MONOTONIC
    _rate_between(fast, lambda r: r[0], lambda r: r[3], 3.5, 4.5)  # BOOTTIME
    _rate_between(fast, lambda r: r[0], lambda r: r[1], 3.5, 4.5)  # REALTIME
    healed = _segment(rows, lambda r: r[0], st["heal"], None, lag=10**7)
    assert healed and all(abs(lead(r)) < S for r in healed)  # REALTIME's lead gone (one row)
    mono = [r[2] for r in rows]
    assert mono == sorted(mono)  # never backward, through the step, the rate and the heal
    assert all(r[2] > r[0] for r in healed)  # the lead is given back slowly, not stepped
    _rate_between(healed, lambda r: r[0], lambda r: r[2], 0.3, 0.7)


def _check_go(rows, st, delta):
    # columns: raw_mono wall go_elapsed raw_elapsed
    def lead(r):
        return r[1] - r[0] - delta

    before = [r for r in rows if r[0] < st["bump"]]
    assert before and all(abs(lead(r)) < S for r in before)
    bumped = _segment(rows, lambda r: r[0], st["bump"], st["rate"], lag=10**7)
    assert bumped and all(abs(lead(r) - 3600 * S) < S for r in bumped)
    fast = _segment(rows, lambda r: r[0], st["rate"], st["x1"], lag=10**7)
    _rate_between(fast, lambda r: r[0], lambda r: r[2], 3.5, 4.5)  # Go's monotonic reading
    healed = _segment(rows, lambda r: r[0], st["heal"], None, lag=10**7)
    assert healed and all(abs(lead(r)) < S for r in healed)
    elapsed = [r[2] for r in rows]
    assert elapsed == sorted(elapsed)


def _rate_between(rows, real, skewed, low: float, high: float) -> None:
    assert len(rows) >= 2, rows
    d_real = real(rows[-1]) - real(rows[0])
    d_skew = skewed(rows[-1]) - skewed(rows[0])
    assert d_real > 0 and low < d_skew / d_real < high, (d_skew, d_real)
