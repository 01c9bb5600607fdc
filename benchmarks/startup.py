"""How long `zkjepsen check` takes to start: a 10-line history vs a bare `python -c pass`.

Prints the median (and min/max) wall time of N runs of each, interleaved, and the difference.
No assertion: the figure is for the closing note (target: difference <= 60 ms).

    .venv/bin/python benchmarks/startup.py [--runs 20]
"""

from __future__ import annotations

import argparse
import json
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


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


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
    for name, xs in (("zkjepsen check (10 lines)", a), ("python -c pass", b)):
        print(
            f"{name:28s} median {statistics.median(xs) * 1000:6.1f} ms "
            f"(min {min(xs) * 1000:.1f}, max {max(xs) * 1000:.1f}) over {len(xs)} runs"
        )
    diff = statistics.median(a) - statistics.median(b)
    print(f"difference of medians: {diff * 1000:.1f} ms (target <= 60 ms)")


if __name__ == "__main__":
    main()
