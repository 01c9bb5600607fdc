"""Did every server a fault stopped boot again? The "When Amnesia Strikes" finding (VLDB 2024):
a torn or corrupted log, or a raft log that lost its tail in a power loss, leaves a server that
refuses to start. That is a finding of its own, apart from what the locks saw: the service lost
a member for good, which a long-lived cluster pays for at its next fault.

Pure: a function of the history. The disk-family faults (nemesis/disk.py) boot their targets
at their end, and a roll (nemesis/membership.py) each in turn, and record in their end's detail
each one still down after the nemesis' watch (`failed_to_start`: node -> the end of its log;
`why_not_started`: node -> the line of the log that says why, when one does). Each such server
is one violation, `could-not-boot`, whose window is its fault's and whose evidence names the
server, the fault and why. A run with such a fault and none of them is valid (a note counts
the faults); a run without one has no such part (`recovery_of` returns None).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from zkjepsen.checker import Result, Violation
from zkjepsen.faultkinds import UNKNOWN_RULE, boots_servers, power_rule
from zkjepsen.history import NEMESIS, History, Op

KIND = "could-not-boot"


def recovery_of(history: History | Iterable[Op]) -> Result | None:
    """The `recovery` part of a verdict (module docstring), or None without a disk fault."""
    ops = history.ops if isinstance(history, History) else list(history)
    starts: dict[Any, int] = {}
    faults = 0
    kinds: list[str] = []  # each fault's kind
    violations: list[Violation] = []
    for op in ops:
        v = op.value if isinstance(op.value, dict) else {}
        if op.process != NEMESIS or op.type == "invoke" or not _restarts(op.f):
            continue
        if v.get("phase") == "start":
            starts[v.get("fault_id")] = op.time
            faults += 1
            kinds.append(op.f)
        elif v.get("phase") == "end":
            violations += _down(op, v, starts.get(v.get("fault_id"), op.time))
    if not faults and not violations:
        return None
    if violations:
        return Result(False, {"faults": faults}, violations)
    return Result(
        True,
        {"faults": faults, "note": f"every server came back after {_faults_text(kinds)}"},
    )


def _restarts(kind: Any) -> bool:
    """A fault that stops servers and boots them again (faultkinds.boots_servers)."""
    return isinstance(kind, str) and boots_servers(kind)


def _down(op: Op, end: dict[str, Any], start: int) -> list[Violation]:
    detail = _table(end.get("detail"))
    tails, whys = _table(detail.get("failed_to_start")), _table(detail.get("why_not_started"))
    return [
        Violation(
            KIND,
            (),
            start,
            op.time,
            ({"fault_id": end.get("fault_id"), "f": op.f, "start": start, "end": op.time},),
            {
                "server": node,
                "fault": op.f,
                "fault_id": end.get("fault_id"),
                "why": readable_why(str(whys.get(node) or _last_line(tail)))[:400],
                "log_tail": str(tail),
            },
        )
        for node, tail in sorted(tails.items())
    ]


def _table(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def readable_why(line: str) -> str:
    """A structured log line (etcd's zap JSON) as its message and error, "discovery failed:
    walpb: crc mismatch"; any other line as it is. Read by pattern, not as JSON: the line
    may have been cut short (a zap line carries its stack trace)."""
    said = [m.group(1) for k in ("msg", "error") if (m := re.search(f'"{k}":"([^"]*)"', line))]
    return ": ".join(said) if line.lstrip().startswith("{") and said else line


def _last_line(tail: Any) -> str:
    lines = [x for x in str(tail).splitlines() if x.strip()]
    return lines[-1] if lines else "its log said nothing"


def _faults_text(kinds: list[str]) -> str:
    """ "2 disk faults", "1 roll", "2 disk faults and 1 roll"."""
    disk = sum((power_rule(k) or UNKNOWN_RULE).state for k in kinds)
    counts = ((disk, "disk fault"), (len(kinds) - disk, "roll"))
    return " and ".join(f"{n} {what}" + ("" if n == 1 else "s") for n, what in counts if n)
