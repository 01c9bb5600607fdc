"""The suite's wall time on two workers, from measured test times: the order and groups that
tests/conftest.py gives the tests (collected here, or read from a file saved earlier, e.g. at
another commit), replayed through pytest-xdist's `--dist loadgroup` hand-out (a whole group to a
worker; a worker is given the next group once two or fewer of its tests are left), with each
test's seconds (setup + call + teardown) from `--durations=0` outputs. Prints each worker's
groups, when it ends and how long it waits for the other at the end (figures only).

    .venv/bin/pytest -p no:cacheprovider -n 0 --durations=0 -q tests/integration/test_x.py \\
        > /tmp/x.txt                                   # times, one module or many, any number
    .venv/bin/python benchmarks/suite_time.py /tmp/x.txt /tmp/units.txt [--save-order F]
    .venv/bin/python benchmarks/suite_time.py /tmp/x.txt --order F   # groups saved before

A test with no figure counts 0 s (their number is printed). The figures of separate runs on a
shared machine were taken under different loads: compare orders on the same figures.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite_durations import parse  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ENV_OUT = "ZKJEPSEN_SUITE_ORDER"


def pytest_collection_finish(session) -> None:  # as a pytest plugin (`-p suite_time`)
    out = os.environ.get(ENV_OUT)
    if not out:
        return
    with open(out, "w") as f:
        for item in session.items:
            marker = item.get_closest_marker("xdist_group")
            f.write(f"{marker.args[0] if marker else item.nodeid}\t{key(item.nodeid)}\n")


def key(nodeid: str) -> str:
    """A test's name whatever the root and group: `file.py::test[param]`."""
    path, _, rest = nodeid.partition("::")
    return f"{Path(path).name}::{rest.split('@')[0]}"


def collect(tests: list[str]) -> list[tuple[str, str]]:
    """(group, test) in the order xdist is handed them, by this checkout's conftest."""
    with tempfile.NamedTemporaryFile("r", suffix=".tsv") as f:
        env = {**os.environ, ENV_OUT: f.name}
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env.get("PYTHONPATH", "")])
        p = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "suite_time",
             "-n", "0", "--collect-only", "-q", *tests],
            cwd=REPO, env=env, capture_output=True, text=True,
        )  # fmt: skip
        rows = read_order(Path(f.name))
    if not rows:
        sys.exit(f"collection failed: {p.stdout[-2000:]}{p.stderr[-2000:]}")
    return rows


def read_order(path: Path) -> list[tuple[str, str]]:
    rows = []
    for line in path.read_text().splitlines():
        group, test = line.split("\t")
        rows.append((group, test))
    return rows


def simulate(rows: list[tuple[str, str]], secs: dict[str, float], workers: int):
    """xdist's LoadScopeScheduling replayed: (per worker [(group, start, end)], its end)."""
    queue: dict[str, list[str]] = {}
    for group, test in rows:
        queue.setdefault(group, []).append(test)
    pending: list[list[float]] = [[] for _ in range(workers)]  # each test's duration, in order
    clock = [0.0] * workers
    log: list[list[list]] = [[] for _ in range(workers)]

    def assign(w: int) -> None:
        group, tests = next(iter(queue.items()))
        del queue[group]
        start = clock[w] + sum(pending[w])
        pending[w] += [secs.get(t, 0.0) for t in tests]
        log[w].append([group, start, start + sum(secs.get(t, 0.0) for t in tests)])

    for w in range(workers):
        if queue:
            assign(w)
    for w in range(workers):
        if queue and len(pending[w]) <= 2:
            assign(w)
    while any(pending):
        w = min((w for w in range(workers) if pending[w]), key=lambda w: clock[w] + pending[w][0])
        clock[w] += pending[w].pop(0)  # the worker's next test completes
        if queue and len(pending[w]) <= 2:
            assign(w)
    return log, clock


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("durations", nargs="+", type=Path, help="pytest --durations=0 outputs")
    ap.add_argument("--order", type=Path, help="(group, test) lines saved by --save-order")
    ap.add_argument("--save-order", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tests", nargs="*", default=["tests"], help="what to collect")
    a = ap.parse_args()
    secs: dict[str, float] = {}
    for f in a.durations:
        secs |= {key(t): s for t, s in parse(f.read_text()).items()}
    rows = read_order(a.order) if a.order else collect(a.tests)
    if a.save_order:
        a.save_order.write_text("".join(f"{g}\t{t}\n" for g, t in rows))
    missing = sum(t not in secs for _, t in rows)
    print(f"{len(rows)} tests in {len({g for g, _ in rows})} groups; {missing} without a figure")
    log, ends = simulate(rows, secs, a.workers)
    for w, groups in enumerate(log):
        docker = [g for g in groups if g[2] - g[1] >= 30]
        print(f"\nworker {w}: ends at {ends[w]:.0f} s; groups of 30 s or more:")
        for group, start, end in docker:
            print(f"  {start:6.0f} -> {end:6.0f} s  {end - start:5.0f} s  {group}")
    wall = max(ends)
    print(f"\nwall {wall:.0f} s; the other worker idle at the end {wall - min(ends):.0f} s;")
    print(f"sum of test times {sum(secs.get(t, 0.0) for _, t in rows):.0f} s")


if __name__ == "__main__":
    main()
