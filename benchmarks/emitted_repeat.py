"""How often an emitted reproducer (`<run>/minimal/test_reproduce_*.py`, written by `zkjepsen
shrink`) FAILS, i.e. finds the bug again: each file run `--runs` times as its own pytest process,
at most `--parallel` at once, exactly as a CI job would run it.

    .venv/bin/python benchmarks/emitted_repeat.py FILE [FILE ...] [--runs 20] [--parallel 2]
        [--store DIR]

A run counts as a reproduction only if the test failed with an INVALID verdict (a violation found
in the history); a pass, an UNKNOWN verdict or an error is not one and is counted apart. Prints
every run (its verdict, the violations it names, its store dir) and per file the rate with its 95 %
Wilson interval.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from zkjepsen.report.stats import rate_text


def one(path: Path, i: int, store: Path) -> tuple[str, str]:
    """(outcome, detail): outcome is invalid | valid | unknown | error."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "-q",
        "-x",
        str(path),
        "--zk-store",
        str(store),
    ]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=path.parent)
    took = f"{time.monotonic() - started:.0f}s"
    out = proc.stdout + proc.stderr
    verdict = re.search(r"zkjepsen verdict (INVALID|UNKNOWN)", out)
    # The last one: pytest's traceback first shows the source line that formats it.
    evidence = re.findall(r"evidence: (\S+)/timeline.html", out)
    where = evidence[-1] if evidence else ""
    if proc.returncode == 0:
        return "valid", f"passed ({took})"
    if verdict is None:
        tail = " | ".join(out.strip().splitlines()[-3:])
        return "error", f"exit {proc.returncode} ({took}): {tail[-300:]}"
    lines = [
        ln.strip()
        for ln in out.splitlines()
        if re.match(r"\s*E\s+\w+: ", ln) and "{" not in ln and "evidence" not in ln
    ]
    named = "; ".join(ln.removeprefix("E").strip() for ln in lines[:3])
    return verdict.group(1).lower(), f"{named} ({took}) {where}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--store", type=Path, default=Path("store/emitted-repeat"))
    a = ap.parse_args()
    store = a.store.resolve()
    store.mkdir(parents=True, exist_ok=True)
    jobs = [(f.resolve(), i) for f in a.files for i in range(a.runs)]
    outcomes: dict[Path, list[str]] = {f.resolve(): [] for f in a.files}

    def run(job: tuple[Path, int]) -> None:
        path, i = job
        outcome, detail = one(path, i, store)
        outcomes[path].append(outcome)
        print(f"{path.name} run {i + 1}: {outcome.upper()} {detail}", flush=True)

    with ThreadPoolExecutor(a.parallel) as pool:
        list(pool.map(run, jobs))
    for path, got in outcomes.items():
        fails = got.count("invalid")
        others = {k: got.count(k) for k in ("valid", "unknown", "error") if got.count(k)}
        print(
            f"{path}: FAILED (invalid) in {rate_text(fails, len(got))}"
            + (f"; not a reproduction: {others}" if others else "")
        )


if __name__ == "__main__":
    main()
