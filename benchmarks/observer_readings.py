"""The observer's readings of who holds (run/observer.py), from stored runs: prints figures,
asserts nothing.

Per run folder given: the readings (how many, how many answered), how long one took (its
`start` to its record's `time`: p50, p99, max, in ms), the gap between two readings' starts
(median, max), and the verdict's `phantom` part (valid, grants checked of all). How often the
service is read, and how late a reading may be, bound what a grant must last to be checked.

    .venv/bin/python benchmarks/observer_readings.py store/*/2026*
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def figures(run: Path) -> str:
    records = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    readings = [r for r in records if r.get("process") == "observer" and r["f"] == "holders"]
    if not readings:
        return f"{run}: no readings (not a lock run, or run before the observer)"
    answered = [r for r in readings if r["value"].get("ok")]
    took = sorted((r["time"] - r["value"]["start"]) / 1e6 for r in answered) or [0.0]
    starts = [r["value"]["start"] for r in readings]
    gaps = [(b - a) / 1e6 for a, b in zip(starts, starts[1:], strict=False)] or [0.0]
    part = json.loads((run / "results.json").read_text()).get("phantom", {})
    return (
        f"{run}: {len(readings)} readings, {len(answered)} answered; one took p50 "
        f"{took[len(took) // 2]:.1f} ms, p99 {took[int(len(took) * 0.99)]:.1f} ms, max "
        f"{took[-1]:.1f} ms; gap median {statistics.median(gaps):.1f} ms, max {max(gaps):.1f} "
        f"ms; phantom valid={part.get('valid')} checked {part.get('checked')} of "
        f"{part.get('grants')} grants"
    )


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(figures(Path(arg)))
