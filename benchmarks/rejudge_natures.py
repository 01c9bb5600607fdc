"""Re-judge stored runs' belief overlaps, read-only: for every history.jsonl under the folders
given, the lock part's classification as the working tree has it, beside the same with
`past_excuse` switched off (checker/nature.py: the rule before a fault's excuse had an end)
and beside what the run's results.json stored. Nothing is written.

    .venv/bin/python benchmarks/rejudge_natures.py store/h1-real store/h1-hunt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import zkjepsen.checker.nature as nature
from zkjepsen.checker.lock import LockChecker
from zkjepsen.history import read_jsonl


def stored_lock(run: Path) -> dict[str, Any]:
    """The stored lock part (the first part with a belief overlap count), {} when none."""

    def find(d: Any) -> dict[str, Any] | None:
        if isinstance(d, dict):
            if "belief_overlap_count" in d:
                return d
            for v in d.values():
                if (x := find(v)) is not None:
                    return x
        return None

    try:
        return find(json.loads((run / "results.json").read_text())) or {}
    except (OSError, ValueError):
        return {}


def lease_of(run: Path) -> float | None:
    try:
        spec = json.loads((run / "test.json").read_text())
    except (OSError, ValueError):
        return None
    s = spec.get("spec", spec)
    lease = (s.get("params") or {}).get("lock_ttl_s") or s.get("session_timeout_s")
    return float(lease) if lease else None


def judge(history: Path, lease: float | None, rule: bool) -> dict[str, Any]:
    keep = nature.past_excuse
    if not rule:
        nature.past_excuse = lambda *a, **k: ""  # type: ignore[assignment]
    try:
        checker = LockChecker()
        if lease:
            checker.with_lease(lease)
        return checker.check(read_jsonl(history)).details
    finally:
        nature.past_excuse = keep


def main(roots: list[str]) -> int:
    n = 0
    for root in roots:
        for h in sorted(Path(root).rglob("history.jsonl")):
            run, lease = h.parent, lease_of(h.parent)
            try:
                now, before = judge(h, lease, True), judge(h, lease, False)
            except Exception as e:  # noqa: BLE001 - a run cut short: say so, go on
                print(f"{run}: cannot check: {type(e).__name__}: {e}")
                continue
            n += 1
            old = stored_lock(run)
            print(
                f"{run}: {now['belief_overlap_count']} overlaps; beyond {now['beyond_lease_count']}"
                f", lease {now['lease_split_count']}, natures {now['nature_counts']}; with the "
                f"rule off beyond {before['beyond_lease_count']}, lease "
                f"{before['lease_split_count']}; stored beyond {old.get('beyond_lease_count')}"
            )
            for b in now["belief_overlaps"]:
                if b["nature"] == "defect" and "still claimed" in b["nature_why"]:
                    print(f"    {b['clients']}: {b['nature_why']}")
    print(f"{n} runs re-judged")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
