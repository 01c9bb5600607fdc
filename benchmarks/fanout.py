"""Fan-out benchmark: wall time and CPU of a 12-cell matrix on 1 slot and 2 slots of this
machine's engine; and `shrink` with --parallel 1 vs 2 (several machines: dask_fanout.py).
Prints figures and whether the verdicts (and the minimal schedules) agree; asserts nothing.

    .venv/bin/python benchmarks/fanout.py                  # everything (~20-30 min, 2 cores)
    .venv/bin/python benchmarks/fanout.py --skip-shrink
    .venv/bin/python benchmarks/fanout.py --slots 1,2

CPU is the whole machine's, read from /proc/stat over each
configuration (busy % of all cores), next to the same figure measured for 15 s of idling first:
other work on the machine shows there, not in our figure's difference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

ZKJ = [sys.executable, "-m", "zkjepsen.cli"]
ENV = {**os.environ, "PYTHONPATH": f"{REPO / 'tests'}:{os.environ.get('PYTHONPATH', '')}"}
NOLOCK = "subjects.nolock:NoLock"
MATRIX = [
    "--recipes",
    f"kazoo,kazoo-careful,{NOLOCK}",
    "--nemeses",
    "none,kill-client,pause-server,kill-one",
    "--runs",
    "1",
    "--workload",
    "lock",
    "--nodes",
    "3",
    "--clients",
    "2",
    "--time-limit",
    "8",
    "--session-timeout",
    "3",
]


def cpu_times() -> tuple[int, int]:
    vals = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = vals[3] + vals[4]
    return sum(vals) - idle, sum(vals)


def busy_pct(before: tuple[int, int], after: tuple[int, int]) -> float:
    return 100.0 * (after[0] - before[0]) / max(1, after[1] - before[1])


def measure(argv: list[str]) -> tuple[float, float, float, subprocess.CompletedProcess]:
    """(wall s, machine busy %, 1-min load at the end, the process)."""
    c0, t0 = cpu_times(), time.monotonic()
    proc = subprocess.run([*ZKJ, *argv], env=ENV, capture_output=True, text=True)
    wall = time.monotonic() - t0
    return wall, busy_pct(c0, cpu_times()), os.getloadavg()[0], proc


def idle_baseline(seconds: float = 15.0) -> float:
    c0 = cpu_times()
    time.sleep(seconds)
    return busy_pct(c0, cpu_times())


def verdicts(out_md: Path) -> dict[str, str]:
    cells = json.loads(out_md.with_suffix(".json").read_text())
    return {
        k: f"{c['invalid']}/{c['runs']}" + (f" ({c['unknown']} unknown)" if c["unknown"] else "")
        for k, c in sorted(cells.items())
    }


def matrix(configs: list[str], work: Path) -> None:
    print(f"12-cell matrix: {' '.join(MATRIX)}")
    print(f"{'config':<22} {'wall s':>7} {'busy %':>7} {'idle-before %':>13} {'load1':>6}")
    results = {}
    for cfg in configs:
        slots = int(cfg)
        base = idle_baseline()
        out = work / f"m-{cfg}.md"
        wall, busy, load, proc = measure(
            [
                "matrix",
                *MATRIX,
                "--parallel",
                str(slots),
                "--store",
                str(work / f"store-{cfg}"),
                "--out",
                str(out),
            ]
        )
        if proc.returncode != 0:
            print(f"{cfg}: matrix failed: {proc.stderr.strip().splitlines()[-1:]}")
            continue
        results[cfg] = verdicts(out)
        label = f"{slots} slot{'s' if slots > 1 else ''}"
        print(f"{label:<22} {wall:7.0f} {busy:7.0f} {base:13.0f} {load:6.1f}", flush=True)
    if results:
        first = next(iter(results.values()))
        for cfg, v in results.items():
            diff = {k: (first[k], v[k]) for k in first if first.get(k) != v.get(k)}
            print(f"verdicts {cfg}: {'same as ' + next(iter(results)) if not diff else diff}")
        print("verdicts (invalid/runs): " + json.dumps(first))


def shrink(work: Path) -> None:
    store = work / "shrink-src"
    proc = subprocess.run(
        [
            *ZKJ,
            "test",
            "--recipe",
            NOLOCK,
            "--workload",
            "lock",
            "--nemesis",
            "pause-client,kill-one",
            "--nodes",
            "3",
            "--clients",
            "4",
            "--time-limit",
            "16",
            "--session-timeout",
            "3s",
            "--seed",
            "3",
            "--store",
            str(store),
        ],
        env=ENV,
        capture_output=True,
        text=True,
    )
    (latest,) = store.glob("*/latest")
    faults = json.loads((latest / "schedule.json").read_text())["faults"]
    print(
        f"\nshrink of a failing run (exit {proc.returncode}, {len(faults)} faults: "
        + ", ".join(f"{f['f']}@{f['start_ns'] / 1e9:.1f}s" for f in faults)
        + ")"
    )
    minimal = {}
    for parallel in (1, 2):
        wall, busy, load, p = measure(
            [
                "shrink",
                str(latest.resolve()),
                "--tries",
                "2",
                "--min-hits",
                "2",
                "--budget",
                "15m",
                "--parallel",
                str(parallel),
                "--store",
                str(work / f"sh-{parallel}"),
            ]
        )
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("minimal:")]
        minimal[parallel] = line[0].split(";")[0] if line else f"failed: {p.stderr[-200:]}"
        print(
            f"--parallel {parallel}: {wall:5.0f} s wall, {busy:3.0f} % busy, load {load:.1f}: "
            f"{minimal[parallel]}",
            flush=True,
        )
    print("same minimal schedule" if minimal[1] == minimal[2] else "DIFFERENT minimal schedules")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slots", default="1,2", help="--parallel values, comma-separated")
    ap.add_argument("--skip-shrink", action="store_true")
    ap.add_argument("--skip-matrix", action="store_true")
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores, load now {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="zkjepsen-fanout-bench-") as tmp:
        if not args.skip_matrix:
            matrix(args.slots.split(","), Path(tmp))
        if not args.skip_shrink:
            shrink(Path(tmp))


if __name__ == "__main__":
    main()
