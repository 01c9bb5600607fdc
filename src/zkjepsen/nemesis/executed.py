"""One fault op, one shape, from planning to the stored schedule and back.

`generator.plan` emits a `FaultOp` per fault (what it is, its aim, its length, when, its
trigger and lane); the executor (nemesis/schedule.py) runs that value and gets back the same
type with what it resolved and observed (whom it hit, the family's `detail`, its times, what
fired it, whether it landed); the nemesis log and schedule.json write `to_json()` of it;
`replay`, `shrink`, `gen=` recording and the runner read a schedule's faults back through
`read_faults`, the one reader, which checks each table once (a stored schedule.json was first
checked against its run by run/stored_files.py). The JSON names are the ones schedule.json has
always had, so older runs load; a key this version does not know is kept in `extra` and
written back.

Import-light (no docker, no fault module): the runner's recording reads it at start-up.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# What a replay re-runs of an executed fault: its kind, aim, length, times and whom it hit.
REPLAYED = ("fault_id", "f", "target", "targets", "detail", "params", "duration")
# Every field's JSON name, in the order schedule.json has always written them.
_ORDER = (
    "fault_id", "f", "target", "duration", "duration_s", "at_s", "params", "trigger", "lane",
    "armed_ns", "aim", "targets", "detail", "start_ns", "applied_ns", "fired", "attempt", "error",
    "landed", "missed", "end_ns", "end_error", "observed", "interrupted",
)  # fmt: skip

Table = dict[str, Any]  # a JSON table as schedule.json holds it


class NotAFault(ValueError):
    """A table that is not a fault op (the reader names the file and position)."""


@dataclass(frozen=True)
class FaultOp:
    """A fault, planned or executed. Planned: `f`, `fault_id`, `target` (a role, "random", a
    node, "trigger"; None: the kind's default), `duration` (seconds or "1.5x") and
    `duration_s`, `at_s` (seconds after the nemesis starts), `params`, `trigger` (a
    triggers.Trigger's table), `lane`. A replay-ready op also carries its recorded `targets`,
    `detail`, `start_ns`/`end_ns` (since the test's start) and, when triggered, `armed_ns`.
    Executed: the same fields, plus what the executor resolved and observed."""

    f: str
    fault_id: int | None = None
    target: str | None = None
    duration: float | str | None = None
    duration_s: float | None = None
    at_s: float | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    trigger: Mapping[str, Any] | None = None
    lane: int = 0  # its timeline (generator.lanes); 0 unsaid in JSON
    armed_ns: int | None = None  # when its trigger was armed (a replay re-arms it then)
    aim: str | None = None  # the target its trigger's event named (a fault aimed at "trigger")
    targets: tuple[str, ...] | None = None  # whom it hit (None: resolved when it starts)
    # The family's record of how it hit (apply and undo write their observations into it: the
    # one mutable part, by design; a replay starts from a copy without the observations).
    detail: dict[str, Any] | None = None
    start_ns: int | None = None
    applied_ns: int | None = None
    fired: Mapping[str, Any] | None = None  # when its trigger was armed, fired, seen; who
    attempt: int | None = None  # a triggered fault: which arming this was
    error: str | None = None  # apply raised (recorded, the end still undoes)
    landed: bool | None = None  # a triggered fault: inside the state its event began
    missed: tuple[Mapping[str, Any], ...] | None = None  # the attempts that landed outside
    end_ns: int | None = None
    end_error: str | None = None
    observed: Mapping[str, Any] | None = None  # faultkinds.landing: {landed, why}
    interrupted: bool = False  # ended by the final heal, not at its time
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys another version wrote

    @classmethod
    def from_json(cls, d: Any, known: Any = None, *, executed: bool = True) -> FaultOp:
        """The one reader of a fault table; `known`, if given, are the names it may have.
        NotAFault (one phrase) unless every field it has is of its type: a name, whole
        nanoseconds >= 0 (an executed one: a start and an end, in order), a list of names,
        tables, a lane that is a whole number >= 0. Nothing of `d` is shared with the op."""
        if not isinstance(d, dict) or not isinstance(d.get("f"), str):
            raise NotAFault("not a fault (a table with a name f)")
        if known is not None and d["f"] not in known:
            raise NotAFault(f"{d['f']!r} is not a fault kind")
        d = copy.deepcopy(d)
        for k in ("start_ns", "end_ns", "applied_ns", "armed_ns", "attempt", "lane", "fault_id"):
            if d.get(k) is not None and not _whole(d[k]):
                raise NotAFault(f"{k} must be a whole number >= 0, not {d[k]!r}")
        if executed and (d.get("start_ns") is None or d.get("end_ns") is None):
            raise NotAFault("an executed fault has a start_ns and an end_ns")
        if d.get("start_ns") is not None and d.get("end_ns") is not None:
            if d["end_ns"] < d["start_ns"]:
                raise NotAFault(f"end_ns {d['end_ns']} is before start_ns {d['start_ns']}")
        targets = d.get("targets")
        if targets is not None and not (
            isinstance(targets, list) and all(isinstance(t, str) for t in targets)
        ):
            raise NotAFault(f"targets must be a list of names, not {targets!r}")
        for k in ("detail", "params", "trigger", "fired", "observed"):
            if d.get(k) is not None and not isinstance(d[k], dict):
                raise NotAFault(f"{k} must be a table, not {d[k]!r}")
        for k in ("target", "aim", "error", "end_error"):
            if d.get(k) is not None and not isinstance(d[k], str):
                raise NotAFault(f"{k} must be a string, not {d[k]!r}")
        _check_duration(d.get("duration"))
        missed = d.get("missed")
        if missed is not None and not (
            isinstance(missed, list) and all(isinstance(m, dict) for m in missed)
        ):
            raise NotAFault(f"missed must be a list of tables, not {missed!r}")
        return _from_checked(d)

    def to_json(self) -> Table:
        """The table schedule.json holds: every field that says something (an unset one, lane
        0 and a fault not interrupted are left out), then the keys another version wrote."""
        out: Table = {}
        for k in _ORDER:
            v = getattr(self, k)
            if v is None or (k == "lane" and v == 0) or (k == "interrupted" and not v):
                continue
            out[k] = list(v) if k in ("targets", "missed") else dict(v) if k == "params" else v
        return copy.deepcopy({**out, **self.extra})

    def replay_ready(self) -> FaultOp:
        """What a replay of it re-runs: its kind, aim, length, recorded times and whom it hit
        (its detail without what apply and undo observed), its lane, and when triggered its
        trigger and when that was armed."""
        return FaultOp(
            f=self.f,
            fault_id=self.fault_id,
            target=self.target,
            duration=self.duration,
            params=copy.deepcopy(dict(self.params)),
            trigger=copy.deepcopy(self.trigger),
            lane=self.lane,
            armed_ns=self.armed_ns if self.trigger else None,
            targets=self.targets,
            detail=copy.deepcopy(self.detail),
            start_ns=self.start_ns,
            end_ns=self.end_ns,
        )

    @property
    def start_s(self) -> float:
        """Its recorded start, in seconds since the test's start (0 for one not started)."""
        return (self.start_ns or 0) / 1e9

    @property
    def hold_ns(self) -> int:
        """Its recorded length (0 for one not yet ended)."""
        if self.start_ns is None or self.end_ns is None:
            return 0
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class PlannedHeal:
    """A heal between phases of a plan (`generator.final_heal`), at `at_s`."""

    at_s: float

    @property
    def f(self) -> str:
        """Its name in a plan, as a fault op's (schedule.json's `planned`: {"f": "heal"})."""
        return "heal"

    def to_json(self) -> Table:
        return {"f": self.f, "at_s": self.at_s}


Planned = FaultOp | PlannedHeal


def read_faults(schedule: Any, known: Any = None) -> list[FaultOp]:
    """The executed faults of a schedule (schedule.json's table or its "faults" list), each
    read by `FaultOp.from_json`, in the order they started. NotAFault names the position."""
    faults = schedule.get("faults", []) if isinstance(schedule, dict) else schedule
    if not isinstance(faults, list):
        raise NotAFault("a schedule's faults are a list")
    out = []
    for i, f in enumerate(faults):
        if isinstance(f, dict) and f.get("f") == "heal":
            continue
        try:
            out.append(FaultOp.from_json(f, known))
        except NotAFault as e:
            raise NotAFault(f"faults[{i}]: {e}") from None
    return sorted(out, key=lambda f: f.start_ns or 0)


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _check_duration(v: Any) -> None:
    """None, seconds >= 0, or session timeouts ("1.5x")."""
    if v is None:
        return
    text = v.strip()[:-1] if isinstance(v, str) and v.strip().endswith("x") else v
    try:
        ok = not isinstance(text, bool) and math.isfinite(float(text)) and float(text) >= 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise NotAFault(f"duration must be seconds or session timeouts ('1.5x'), not {v!r}")


_FIELDS = {f.name for f in dataclasses.fields(FaultOp)} - {"extra"}


def _from_checked(d: Table) -> FaultOp:
    known = {k: v for k, v in d.items() if k in _FIELDS}
    if known.get("targets") is not None:
        known["targets"] = tuple(known["targets"])
    if known.get("missed") is not None:
        known["missed"] = tuple(known["missed"])
    known["params"] = known.get("params") or {}
    known["lane"] = known.get("lane") or 0
    known["interrupted"] = bool(known.get("interrupted"))
    return FaultOp(**known, extra={k: v for k, v in d.items() if k not in _FIELDS})
