"""Re-judge stored hunt runs, read-only: for every run folder (a results.json beside a
history.jsonl) under the folders given, what the hunt made of it then (`run/hunt.finding` on
the stored results) and what the working tree's checkers make of it now, for each run either
calls found. Nothing is written. For a change of the classification (checker/nature.py) or of
a checker: which finds were false and are now a fault's nature, which stay.

    .venv/bin/python benchmarks/rejudge_finds.py store/h4-hunt store/h2-hunt-rare
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from zkjepsen.run.analysis import check_run
from zkjepsen.run.finding import finding
from zkjepsen.run.stored import StoredRun


def main(roots: list[str]) -> int:
    tally: Counter[tuple[str, str]] = Counter()
    for root in map(Path, roots):
        for res in sorted(root.rglob("results.json")):
            folder = res.parent
            if not (folder / "history.jsonl").exists():
                continue
            stored = StoredRun.load(folder.resolve())
            before = finding(json.loads(res.read_text()))
            now = finding(check_run(stored.history(), stored.spec, stored.store_dir).to_json())
            if "found" not in (before[0], now[0]):
                continue
            tally[(before[0], now[0])] += 1
            print(f"{folder.relative_to(root)}: {before[0]} -> {now[0]}: {now[1][:160]}")
    for (before, now), n in sorted(tally.items()):
        print(f"{before} -> {now}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
