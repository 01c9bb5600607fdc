"""The nemesis's own history file, nemesis.jsonl: a `start` and an `end` record per fault (the
values nemesis/schedule.py's FaultNemesis writes), merged with the clients' histories into the
run's one history."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from zkjepsen.history.jsonl import Appender
from zkjepsen.nemesis.executed import FaultOp

NEMESIS = "nemesis"
# What a start and an end record say of the fault op, when set (run/stored_files.py reads it).
SAID = ("detail", "trigger", "fired", "attempt", "error", "end_error")


def record_value(op: FaultOp, phase: str) -> dict[str, Any]:
    """A fault's start or end as nemesis.jsonl holds it (the value of an `info` op named after
    the fault): its id, the phase, whom it hit, and what of the op is set."""
    table = op.to_json()
    value = {"fault_id": op.fault_id, "phase": phase, "targets": table.get("targets") or []}
    value |= {k: table[k] for k in SAID if table.get(k)}
    if phase == "end" and op.landed is not None:
        value["landed"] = op.landed  # where it landed: inside the event's state or not
    return value


class NemesisLog:
    """nemesis.jsonl: one write(2) per line, O_APPEND, times on the host's real monotonic clock
    (never faked: the recorder runs outside the skewed JVMs)."""

    def __init__(self, path: Path, t0_ns: int) -> None:
        self.out = Appender(path)
        self.t0_ns = t0_ns

    def now(self) -> int:
        return time.monotonic_ns() - self.t0_ns

    def record(self, at_ns: int, f: str, value: dict[str, Any]) -> None:
        self.out.write({"time": at_ns, "process": NEMESIS, "type": "info", "f": f, "value": value})

    def close(self) -> None:
        self.out.close()
