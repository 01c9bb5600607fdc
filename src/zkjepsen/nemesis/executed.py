"""One executed fault of a run's schedule.json, typed: what a replay re-runs (its kind, its
recorded times since the test's start, its resolved targets, its trigger) and the rest of what
was recorded about it (`extra`: when it went in, what fired it, a miss, an error), so that it
reads back and writes out as the same table."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

# What a schedule.json fault carries for a replay (its timing and resolved targets).
FAULT_FIELDS = (
    "fault_id",
    "f",
    "target",
    "targets",
    "detail",
    "params",
    "duration",
    "start_ns",
    "end_ns",
)
_TYPED = (*FAULT_FIELDS, "trigger", "armed_ns", "fired", "lane")


class NotAFault(ValueError):
    """A table that is not an executed fault (the reader names the file and position)."""


@dataclass
class ExecutedFault:
    f: str
    start_ns: int
    end_ns: int
    fault_id: Any = None
    target: str | None = None  # what it was aimed at: a role, "random", a node, "trigger"
    targets: list[str] | None = None  # whom it hit (None: resolved again at replay time)
    detail: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    duration: Any = None  # the planned length (seconds or session timeouts)
    trigger: dict[str, Any] | None = None  # a triggers.Trigger's table: fired on an event
    armed_ns: int | None = None
    fired: dict[str, Any] | None = None  # when its trigger was armed, fired, seen
    lane: int | None = None  # a fault of generator.lanes: its timeline (None: the first)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, d: Any, known: Any = None) -> ExecutedFault:
        """Read one fault back; `known`, if given, are the fault names it may have. Raises
        NotAFault unless it has a known name, a start and end (ns, >= 0) in order, and a lane
        (if any) that is a whole number >= 0."""
        ok = (
            isinstance(d, dict)
            and isinstance(d.get("f"), str)
            and (known is None or d["f"] in known)
            and all(
                isinstance(d.get(k), int) and not isinstance(d.get(k), bool) and d[k] >= 0
                for k in ("start_ns", "end_ns")
            )
            and d["end_ns"] >= d["start_ns"]
            and isinstance(d.get("targets") or [], list)
            and (d.get("lane") is None or (type(d["lane"]) is int and d["lane"] >= 0))
        )
        if not ok:
            raise NotAFault("not a replayable fault")
        return cls(
            **{k: copy.deepcopy(d[k]) for k in _TYPED if k in d},
            extra={k: copy.deepcopy(v) for k, v in d.items() if k not in _TYPED},
        )

    def to_json(self) -> dict[str, Any]:
        """The table schedule.json holds (None fields a replay does not need are left out)."""
        out = {k: getattr(self, k) for k in FAULT_FIELDS}
        for k in ("trigger", "armed_ns", "fired", "lane"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        return copy.deepcopy({**out, **self.extra})

    def replay_table(self) -> dict[str, Any]:
        """The nemesis's schedule input for a replay of it: `replay_fields`, and when it is
        triggered its trigger and when that was armed."""
        table = self.replay_fields()
        if self.lane:  # a fault of a lane (generator.lanes) replays in its lane
            table["lane"] = self.lane
        if self.trigger:
            table["trigger"] = copy.deepcopy(self.trigger)
            table["armed_ns"] = self.armed_ns
        return table

    def replay_fields(self) -> dict[str, Any]:
        """What a replay of it starts from: its kind, times and resolved targets."""
        return copy.deepcopy({k: getattr(self, k) for k in FAULT_FIELDS})


def replay_plan(schedule: Any) -> list[dict]:
    """The faults to replay from an executed schedule (schedule.json's dict or its "faults"
    list), in the order they started, each with its resolved targets and recorded times. Each
    is read by `ExecutedFault.from_json` and given as its `replay_table`: one reader of the
    table (a stored schedule.json was checked field by field when its run was loaded)."""
    faults = schedule.get("faults", []) if isinstance(schedule, dict) else list(schedule)
    out = [
        ExecutedFault.from_json(f).replay_table()
        for f in faults
        if f.get("f") != "heal" and "start_ns" in f
    ]
    return sorted(out, key=lambda f: f["start_ns"])
