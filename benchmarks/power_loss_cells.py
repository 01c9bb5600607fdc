"""The power-loss findings table from matrix stores (issue 34): per cell, its runs, how many
broke the lock or fencing (with the 95 % Wilson interval), the violations by kind, the other
invalid parts, the faults each run executed and the bytes each power loss dropped per server
(`lost_bytes` in every run's schedule.json), the servers that could not boot again after a
fault (`failed_to_start`, with the line of their log that says why) and the load the matrix
ran under.

    .venv/bin/python benchmarks/power_loss_cells.py STORE [STORE ...]

Each STORE is a `zkjepsen matrix --store` folder (its matrix-runs.json, one run folder per run,
and the matrix.md beside it when --out put it there). Reads only; prints one block per cell.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

from zkjepsen.checker.recovery import readable_why
from zkjepsen.nemesis.disk import why_stopped
from zkjepsen.report.stats import rate_text

LOCK_PARTS = ("lock", "fencing")


def _kinds(part: dict) -> Counter:
    counts = part.get("violation_counts") or {}
    if not counts:
        counts = Counter(v.get("kind", "?") for v in part.get("violations") or [])
    return Counter(counts)


def _faults(root: Path, store: str) -> list[dict]:
    try:
        return json.loads((root / store / "schedule.json").read_text()).get("faults") or []
    except (OSError, ValueError):
        return []


def _kb(n: int) -> str:
    return f"{n / 1000:.1f} KB" if n >= 1000 else f"{n} B"


def cell_lines(root: Path) -> list[str]:
    m = json.loads((root / "matrix-runs.json").read_text())
    svc = next(iter(m["settings"].get("services", {}).values()), {})
    runs = sorted(m["runs"], key=lambda r: r["seed"])
    broke = 0
    kinds: Counter = Counter()  # runs showing each lock/fencing kind
    others: Counter = Counter()  # runs with another invalid part
    verdicts: Counter = Counter(str(r["valid"]) for r in runs)
    lost: dict[str, list[int]] = {}
    executed: Counter = Counter()
    unknown: Counter = Counter()  # runs with a part unknown, by its reason's start
    acked = 0  # power losses that landed right after the acquirer's acknowledged write
    errors: list[str] = []
    refused: list[str] = []  # servers that did not boot again after a fault
    for r in runs:
        res = r["results"]
        hit = False
        for name, part in res.items():
            if isinstance(part, dict) and part.get("valid") == "unknown" and name != "power":
                why = re.sub(r"\d+", "N", str(part.get("reason", "")))  # its kind, not whose
                unknown[name + ": " + why.split(":")[0][:60]] += 1
            if not isinstance(part, dict) or part.get("valid") is not False:
                continue
            if name in LOCK_PARTS:
                hit = True
                kinds.update(f"{name}:{k}" for k in _kinds(part))
            elif name != "power":
                others[name + ":" + ",".join(sorted(_kinds(part))) if _kinds(part) else name] += 1
        broke += hit
        for f in _faults(root, r["store"]):
            executed[f["f"]] += 1
            d = f.get("detail") or {}
            acked += bool(d.get("after_ack"))
            if f.get("error"):
                errors.append(f"seed {r['seed']} {f['f']}: {str(f['error'])[:90]}")
            if "lost_bytes" in d:
                lost.setdefault(f["f"], []).extend(d["lost_bytes"].values())
            for node, log in (d.get("failed_to_start") or {}).items():
                lines = [x for x in str(log).splitlines() if x.strip()]
                last = why_stopped(lines) or (lines or [""])[-1]  # why, else the last line
                refused.append(
                    f"seed {r['seed']} {f['f']} {node}: {readable_why(last.strip())[:110]}"
                )
    md = root / "matrix.md"
    text = md.read_text() if md.exists() else ""
    load = re.search(r"load average [\d.]+ at the start, [\d.]+ at the end", text)
    lines = [
        f"{root.name}: {m['settings']['recipes'][0]} x {m['settings']['nemeses'][0]} "
        f"fsync={svc.get('fsync')} ({len(runs)} runs, seeds {runs[0]['seed']}-{runs[-1]['seed']};"
        f" {load.group(0) if load else 'load not recorded'})",
        f"  lock/fencing broken: {rate_text(broke, len(runs))}; verdicts {dict(verdicts)}",
        f"  lock/fencing kinds (runs): {dict(kinds) or 'none'}; other invalid parts (runs): "
        f"{dict(others) or 'none'}",
        f"  unknown parts (runs): {dict(unknown) or 'none'}",
        f"  faults executed: {dict(executed)} ({acked} right after an acknowledged write)",
    ]
    for f, values in sorted(lost.items()):
        lines.append(
            f"  {f} lost_bytes per server: {_kb(min(values))}-{_kb(max(values))} "
            f"({sum(v > 0 for v in values)} of {len(values)} server-losses > 0)"
        )
    lines.append(f"  servers that could not boot again: {len(refused)}")
    lines += [f"    {x}" for x in refused]
    lines += [f"  fault error: {e}" for e in errors]
    return lines


def main() -> None:
    for arg in sys.argv[1:]:
        print("\n".join(cell_lines(Path(arg))))


if __name__ == "__main__":
    main()
