"""How long `zkjepsen check` takes to start: a two-line history vs a bare `python -c pass`.

Prints the best (the least disturbed by the rest of a loaded machine), the median and the
worst wall and CPU (user+sys) time of N runs of each, interleaved, and the differences.
No assertion: the figure is for the closing note (target: best-of-7 difference <= 60 ms).
Run it under the machine's timing lock:

    flock /tmp/zkj-timing.lock .venv/bin/python benchmarks/startup.py [--runs 7]
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
    """Two records: one write of a register, invoked and acknowledged."""
    records = [
        {"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "write", "value": 1},
        {"index": 1, "time": 5, "process": 0, "type": "ok", "f": "write", "value": 1},
    ]
    path = directory / "h2.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# Cached bytecode as an installed package has it: without it every run compiles every module
# (the warm-up run below writes the cache).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, user+sys CPU seconds) of one run: on a loaded machine the wall time
    mostly measures the queue for a CPU, the CPU time what the program itself costs."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    _, _, usage = os.wait4(p.pid, 0)
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    exe = Path(sys.executable)
    zkjepsen = exe.with_name("zkjepsen")
    with tempfile.TemporaryDirectory() as d:
        h = history_file(Path(d))
        check = [str(zkjepsen), "check", str(h), "--model", "register"]
        bare = [str(exe), "-c", "pass"]
        out = subprocess.run(check, capture_output=True, text=True, env=ENV)
        print(f"zkjepsen check says: {out.stdout.strip()} (exit {out.returncode})")
        timed(check), timed(bare)  # warm the page cache
        a, b = [], []
        for _ in range(args.runs):
            a.append(timed(check))
            b.append(timed(bare))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for what, k in (("wall", 0), ("CPU", 1)):
        for name, runs in (("zkjepsen check (2 lines)", a), ("python -c pass", b)):
            xs = [r[k] for r in runs]
            print(
                f"{name:26s} {what:4s} best {min(xs) * 1000:6.1f} ms "
                f"(median {statistics.median(xs) * 1000:.1f}, worst {max(xs) * 1000:.1f}) "
                f"over {len(xs)} runs"
            )
        best = min(r[k] for r in a) - min(r[k] for r in b)
        median = statistics.median(r[k] for r in a) - statistics.median(r[k] for r in b)
        print(
            f"difference, {what}: best {best * 1000:.1f} ms (target <= 60 ms), "
            f"median {median * 1000:.1f} ms"
        )


if __name__ == "__main__":
    main()
