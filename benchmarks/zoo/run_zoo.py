"""Run each zoo program once on its real service, with the schedule its .toml names, and print
one row per program: its verdict, and the lock, liveness and power lines of it.

    .venv/bin/python benchmarks/zoo/run_zoo.py [--store DIR] [NAME ...]

NAME: a program's name without .py (default: every program with a .toml beside it). Each run
is `zkjepsen test --config benchmarks/zoo/NAME.toml --client-dir benchmarks/zoo`, one after
another (the machine is shared); its folder is kept in the store for `zkjepsen analyze`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ZOO = Path(__file__).resolve().parent
ZKJEPSEN = Path(sys.executable).parent / "zkjepsen"
PARTS = ("lock", "liveness", "fencing", "power")


def run_one(name: str, store: Path) -> dict:
    started = time.monotonic()
    argv = [str(ZKJEPSEN), "test", "--config", str(ZOO / f"{name}.toml")]
    argv += ["--client-dir", str(ZOO), "--store", str(store)]
    done = subprocess.run(argv, capture_output=True, text=True)
    folder = next(
        (
            line.split("store: ", 1)[1].strip()
            for line in done.stderr.splitlines() + done.stdout.splitlines()
            if "store: " in line
        ),
        None,
    )
    row = {"program": name, "exit": done.returncode, "wall_s": time.monotonic() - started}
    results = Path(folder) / "results.json" if folder else None
    if results is None or not results.is_file():
        row["error"] = (done.stderr.strip().splitlines() or ["no run folder"])[-1]
        return row
    verdict = json.loads(results.read_text())
    row["folder"] = folder
    row["valid"] = verdict.get("valid")
    for part in PARTS:
        table = verdict.get(part)
        if isinstance(table, dict):
            row[part] = table.get("valid")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, default=Path("store/zoo"))
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    names = args.names or sorted(p.stem for p in ZOO.glob("*.toml"))
    for name in names:
        row = run_one(name, args.store)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
