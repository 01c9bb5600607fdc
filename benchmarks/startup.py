"""How long `zkjepsen check` takes to start: a 10-line history vs a bare `python -c pass`.

Prints the median (and min/max) wall and CPU (user+sys) time of N runs of each, interleaved,
and the differences.
No assertion: the figure is for the closing note (target: difference <= 60 ms).

    .venv/bin/python benchmarks/startup.py [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def history_file(directory: Path) -> Path:
    """Ten records: five writes of a register, each invoked and acknowledged."""
    records = []
    for i in range(5):
        records.append(
            {
                "index": 2 * i,
                "time": 10 * i,
                "process": i,
                "type": "invoke",
                "f": "write",
                "value": i,
            }
        )
        records.append(
            {
                "index": 2 * i + 1,
                "time": 10 * i + 5,
                "process": i,
                "type": "ok",
                "f": "write",
                "value": i,
            }
        )
    path = directory / "h10.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, user+sys CPU seconds) of one run: on a loaded machine the wall time
    mostly measures the queue for a CPU, the CPU time what the program itself costs."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(p.pid, 0)
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    exe = Path(sys.executable)
    zkjepsen = exe.with_name("zkjepsen")
    with tempfile.TemporaryDirectory() as d:
        h = history_file(Path(d))
        check = [str(zkjepsen), "check", str(h), "--model", "register"]
        bare = [str(exe), "-c", "pass"]
        out = subprocess.run(check, capture_output=True, text=True)
        print(f"zkjepsen check says: {out.stdout.strip()} (exit {out.returncode})")
        timed(check), timed(bare)  # warm the page cache
        a, b = [], []
        for _ in range(args.runs):
            a.append(timed(check))
            b.append(timed(bare))
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set: without cached bytecode every run compiles")
    for what, k in (("wall", 0), ("CPU", 1)):
        for name, runs in (("zkjepsen check (10 lines)", a), ("python -c pass", b)):
            xs = [r[k] for r in runs]
            print(
                f"{name:28s} {what:4s} median {statistics.median(xs) * 1000:6.1f} ms "
                f"(min {min(xs) * 1000:.1f}, max {max(xs) * 1000:.1f}) over {len(xs)} runs"
            )
        diff = statistics.median(r[k] for r in a) - statistics.median(r[k] for r in b)
        print(f"difference of {what} medians: {diff * 1000:.1f} ms (target <= 60 ms)")


if __name__ == "__main__":
    main()
