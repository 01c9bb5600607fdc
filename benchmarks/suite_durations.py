"""Where the test suite's time goes: runs pytest with `--durations=0` on the given arguments
and prints the slowest tests (setup + call + teardown), the time per module and the total,
with the load average before and after (figures only; the tests assert behaviour, never time).

    flock /tmp/zkj-timing.lock .venv/bin/python benchmarks/suite_durations.py \\
        [--top 10] -- tests/integration/test_nemesis.py [more pytest args]

With no pytest arguments it times the README's command's selection (the whole suite: 30+ min;
on a shared machine time single modules instead). The figures behind issue 36's closing note
come from here: one module at a time, or the whole suite on a machine of its own.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S+)")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def parse(out: str) -> dict[str, float]:
    """test node id -> its seconds (setup + call + teardown), from --durations=0 lines."""
    per: dict[str, float] = defaultdict(float)
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            per[m.group(3)] += float(m.group(1))
    return dict(per)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("pytest_args", nargs="*")
    a = ap.parse_args()
    before = load()
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0",
         "--durations-min=0", *a.pytest_args],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    wall = time.monotonic() - t0
    per = parse(p.stdout)
    modules: dict[str, float] = defaultdict(float)
    for test, s in per.items():
        modules[test.split("::")[0]] += s
    print(f"pytest exit {p.returncode}; wall {wall:.0f} s; load {before} -> {load()}")
    print(p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "")
    print(f"\nslowest {a.top} tests (setup + call + teardown):")
    for test, s in sorted(per.items(), key=lambda kv: -kv[1])[: a.top]:
        print(f"  {s:7.1f} s  {test}")
    print("\nper module:")
    for mod, s in sorted(modules.items(), key=lambda kv: -kv[1]):
        print(f"  {s:7.1f} s  {mod}")
    print(f"\nsum of test times {sum(per.values()):.0f} s (workers run side by side: wall is less)")


if __name__ == "__main__":
    main()
