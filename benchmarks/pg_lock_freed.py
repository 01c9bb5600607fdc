"""From stored runs: how long a lock stayed with a holder that a fault cut off or froze, and
what the checkers found. Reads each run's history.jsonl and results.json (no cluster).

For every client fault (`isolate-client`, `pause-client`, `pg-terminate-holder`, ...) that hit
a client while it held the lock: seconds from the fault's start to the next `ok` acquire by
another client (the moment the service let the lock go), or "never" within the run. Per run:
belief overlaps and effect overlaps (lock checker), and whether the verdict was invalid.

    .venv/bin/python benchmarks/pg_lock_freed.py store/pg-isolate [more stores or run dirs]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

CLIENT_FAULTS = ("isolate-client", "pause-client", "kill-client", "pg-terminate-holder")


def run_dirs(paths: list[str]) -> list[Path]:
    out = []
    for p in map(Path, paths):
        out += sorted({h.parent for h in p.rglob("history.jsonl") if not h.parent.is_symlink()})
    return out


def freed_after(records: list[dict]) -> list[tuple[str, str, float | None]]:
    """(fault, target, seconds until another client acquired) per fault that hit a holder:
    the target held (an ok acquire, no release begun) when the fault started, and the nemesis
    did not note that it had stopped holding by the time the fault was in place."""
    acquires = [r for r in records if r.get("f") == "acquire" and r.get("type") in ("ok", "invoke")]
    releases = [r for r in records if r.get("f") == "release" and r.get("type") == "invoke"]
    # The nemesis notes at the fault's end whether the target still held once the fault was
    # in place (docker takes 0.1-0.5 s to act); a holder that had released by then is no hit.
    missed = {
        r["value"].get("fault_id")
        for r in records
        if r.get("process") == "nemesis"
        and isinstance(r.get("value"), dict)
        and r["value"].get("phase") == "end"
        and (r["value"].get("detail") or {}).get("holding_when_hit") is False
    }
    out = []
    for r in records:
        v = r.get("value")
        if r.get("process") != "nemesis" or r.get("f") not in CLIENT_FAULTS:
            continue
        if not isinstance(v, dict) or v.get("phase") != "start" or v.get("fault_id") in missed:
            continue
        target = int(v["targets"][0].lstrip("c"))
        t0 = r["time"]
        last_ok = [a for a in acquires if a.get("client") == target and a["type"] == "ok"]
        last_ok = [a for a in last_ok if a["time"] <= t0]
        if not last_ok:
            continue
        held_from = last_ok[-1]["time"]
        released = [
            x for x in releases if x.get("client") == target and held_from < x["time"] <= t0
        ]
        if released:
            continue  # it had begun to release before the fault landed: not a holder
        nxt = [
            a["time"]
            for a in acquires
            if a["type"] == "ok" and a.get("client") != target and a["time"] > t0
        ]
        out.append((r["f"], f"c{target}", (min(nxt) - t0) / 1e9 if nxt else None))
    return out


def main(paths: list[str]) -> None:
    delays: list[float] = []
    never = 0
    for d in run_dirs(paths):
        records = [json.loads(line) for line in (d / "history.jsonl").read_text().splitlines()]
        results = (
            json.loads((d / "results.json").read_text()) if (d / "results.json").exists() else {}
        )
        lock = results.get("lock", {})
        belief = lock.get("belief_overlap_count", len(lock.get("belief_overlaps", [])))
        effect = lock.get("effect_overlap_count", len(lock.get("effect_overlaps", [])))
        hits = freed_after(records)
        for _, _, s in hits:
            if s is None:
                never += 1
            else:
                delays.append(s)
        shown = ", ".join(f"{f}@{c}: {'never' if s is None else f'{s:.1f} s'}" for f, c, s in hits)
        print(
            f"{d}: valid={results.get('valid')} belief overlaps {belief}, effect overlaps "
            f"{effect}; lock freed after: {shown or 'no fault hit a holder'}"
        )
    if delays or never:
        print(
            f"faults on a holder: {len(delays) + never}; another client acquired after "
            + (
                f"median {statistics.median(delays):.1f} s (min {min(delays):.1f}, max "
                f"{max(delays):.1f}, n={len(delays)})"
                if delays
                else "-"
            )
            + (f"; never within the run: {never}" if never else "")
        )


if __name__ == "__main__":
    main(sys.argv[1:])
