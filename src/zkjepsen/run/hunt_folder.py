"""A hunt's folder read back (`zkjepsen analyze <hunt folder>`): its hunt.jsonl, one line per run
as it ended (run/hunt.py), and, when it found something, finding.json (reproduce/hunt_finding.py).

An interrupted hunt's folder is whole up to its last finished run: each line was written at
once. A line that is not JSON (a write cut by a crash) is counted and left out, not fatal; a
folder with no hunt.jsonl, or none that is a run's line, is bad input (one sentence).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkjepsen.errors import BadInput
from zkjepsen.store import RunDir, read_json
from zkjepsen.store.regular import parse_json, read_bytes

FINDING_JSON = "finding.json"  # what the hunt found: confirmed, shrunk, written


def is_hunt_folder(folder: Path) -> bool:
    """A hunt's folder: hunt.jsonl, and no test.json (a run's folder is analyzed as a run)."""
    d = RunDir(Path(folder))
    return d.hunt_log.is_file() and not d.test_json.exists()


@dataclass
class HuntFolder:
    folder: Path
    lines: list[dict[str, Any]]
    finding: dict[str, Any] | None
    unreadable: int = 0  # lines that were not JSON (a write cut short)
    missing: list[str] = field(default_factory=list)  # run folders named but gone

    @classmethod
    def load(cls, folder: Path) -> HuntFolder:
        log = RunDir(Path(folder)).hunt_log
        text = read_bytes(log, "the hunt's log").decode("utf-8", errors="replace")
        lines, bad = [], 0
        for raw in text.splitlines():
            try:
                line = parse_json(raw, f"a line of {log}")
            except (ValueError, BadInput):  # a write cut short, or not the hunt's
                bad += 1
                continue
            if isinstance(line, dict) and "run" in line:
                lines.append(line)
            else:
                bad += 1
        if not lines:
            raise BadInput(f"{log} holds no run's line: the hunt ended before its first run did")
        found = Path(folder) / FINDING_JSON
        finding = read_json(found, "the hunt's finding") if found.is_file() else None
        gone = [
            str(x["folder"]) for x in lines if x.get("folder") and not Path(x["folder"]).exists()
        ]
        return cls(Path(folder), lines, finding if isinstance(finding, dict) else None, bad, gone)

    def found(self) -> dict[str, Any] | None:
        return next((x for x in self.lines if x.get("reached") == "found"), None)

    def verdict(self) -> Any:
        """As the hunt said it: invalid when a run found something, valid when none did and
        some run was valid, else unknown."""
        if self.found() is not None:
            return False
        return True if any(x.get("valid") is True for x in self.lines) else "unknown"

    def summary(self) -> list[str]:
        """What the hunt did, a line each: its runs (choice, what each reached), its coverage,
        what it found and what the finding left."""
        out = []
        for x in self.lines:
            out.append(
                f"  run {x.get('run')}: {_described(x.get('choice'))}: "
                f"{x.get('reached')}, {str(x.get('words') or '')[:100]} ({x.get('folder')})"
            )
        pairs = {
            (str((x.get("choice") or {}).get("moment")), str((x.get("choice") or {}).get("fault")))
            for x in self.lines
        }
        last = max((float(x.get("elapsed_s") or 0) for x in self.lines), default=0.0)
        found = self.found()
        out.append(
            f"{'a violation' if found else 'no violation'} in {len(self.lines)} runs / "
            f"{last / 60:.1f} min, {len(pairs)} (moment, fault) pairs tried"
        )
        if found is not None:
            out.append(
                f"found by run {found.get('run')}: {found.get('words')} ({found.get('folder')})"
            )
        f = self.finding
        if f is not None:
            conf = f.get("confirmed") or {}
            out.append(
                f"confirmed {conf.get('hits')} of {conf.get('runs')}; shrunk: {f.get('shrunk')}"
            )
            for key in ("reproducer", "entry"):
                if f.get(key):
                    out.append(f"{key}: {f[key]}")
        if self.unreadable:
            out.append(f"{self.unreadable} line(s) of hunt.jsonl unreadable (cut short), left out")
        if self.missing:
            out.append(f"run folders named but gone: {', '.join(self.missing)}")
        return out


def _described(choice: Any) -> str:
    """`pause-client 1.5x on-acquire -> holder` (run/hunt.py's Choice), or what the line has."""
    from zkjepsen.run.hunt import Choice  # the hunt's modules only when a hunt's folder is read

    try:
        return Choice.from_json(choice).describe()
    except (KeyError, TypeError, AttributeError):
        return str(choice)
