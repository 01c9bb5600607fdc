"""The schemas of a stored run's schedule.json and results.json, and the one check of each that
`analyze`, `replay` and `shrink` pass a file through before acting on it (StoredRun.load).

A schedule's executed fault is more than its JSON shape: its kind must be one the stored
service can run (the applicability `test` checks: run/resolve.py `fault_refusal`), its aim and
its resolved targets must exist in the stored run (the servers and clients its spec counts,
read as run/readers.py reads a fault_target), its trigger must be one the nemesis can arm
(triggers.Trigger), its times whole nanoseconds >= 0 in order. What a replay of it re-runs is
then read by `read_faults` alone (nemesis/executed.py: a `FaultOp` each), never from the raw
table.

results.json's shape is what `checker.Result.from_json` reads (verdicts, violations and their
windows, a composed result's parts): a hand-edited one is refused here, never read as a
verdict it never stated nor met as a TypeError (255) further on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkjepsen import checker
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import KINDS
from zkjepsen.history import NEMESIS
from zkjepsen.run.readers import Shape, check_target
from zkjepsen.run.resolve import fault_refusal
from zkjepsen.spec import TestSpec
from zkjepsen.store.schema import (
    Anything,
    Field,
    Int,
    Kind,
    ListOf,
    MapOf,
    Num,
    OneOf,
    Opt,
    Str,
    Table,
    Wrong,
    refusal,
    shown,
)

FIX_RESULTS = "remove the file to have `zkjepsen analyze` check the history again"


@dataclass(frozen=True)
class Length(Kind):
    """A planned fault length: seconds (a number >= 0), or session timeouts ("1.5x")."""

    expected = 'a number of seconds >= 0 or a multiple of the session timeout ("1.5x")'

    def check(self, value: Any, at: str) -> None:
        if isinstance(value, str) and re.fullmatch(r"[0-9]+(\.[0-9]+)?x", value):
            return
        try:
            Num(lo=0).check(value, at)
        except Wrong:
            raise Wrong(at, value, self.expected) from None


NS = Int(lo=0)
BOOL = OneOf((True, False))
TABLE = Table({}, rest=Anything(), what="a table")
NAMES = re.compile(r"^([nc])([0-9]+)$")

# What triggers.Trigger reads (its to_json writes these only).
TRIGGER = Table(
    {
        "kind": Str(),
        "client": Field(Opt(Int(lo=1)), required=False),
        "state": Field(Opt(Str()), required=False),
        "f": Field(Opt(Str()), required=False),
        "k": Field(Int(lo=1), required=False),
        "delay_s": Field(Num(lo=0), required=False),
        "retries": Field(Int(lo=0), required=False),
        "waiting_in": Field(Opt(Str()), required=False),
        "aim": Field(Opt(Str()), required=False),
        "settled": Field(BOOL, required=False),
    },
    what="a trigger table",
)

# One executed fault (nemesis/schedule.py writes the planned item, what invoke added, its end).
FAULT = Table(
    {
        "f": Str(),
        "fault_id": Field(Opt(Int(lo=0)), required=False),
        "start_ns": NS,
        "end_ns": NS,
        "target": Field(Opt(Str()), required=False),
        "aim": Field(Opt(Str()), required=False),
        "targets": Field(Opt(ListOf(Str(), unique=True)), required=False),
        "detail": Field(Opt(TABLE), required=False),
        "params": Field(Opt(MapOf(Anything())), required=False),
        "duration": Field(Opt(Length()), required=False),
        "duration_s": Field(Num(lo=0), required=False),
        "at_s": Field(Num(lo=0), required=False),
        "trigger": Field(Opt(TRIGGER), required=False),
        "armed_ns": Field(Opt(NS), required=False),
        "applied_ns": Field(NS, required=False),
        "fired": Field(Opt(TABLE), required=False),
        "attempt": Field(Int(lo=1), required=False),
        "lane": Field(Opt(Int(lo=0)), required=False),
        "landed": Field(Opt(BOOL), required=False),
        "observed": Field(
            Table({"landed": OneOf((True, False, None)), "why": Str(empty=True)}), required=False
        ),
        "missed": Field(ListOf(TABLE), required=False),
        "error": Field(Str(empty=True), required=False),
        "end_error": Field(Str(empty=True), required=False),
        "interrupted": Field(BOOL, required=False),
    },
    what="fault table",
)

SCHEDULE = Table(
    {
        "faults": ListOf(FAULT),
        "seed": Field(Int(), required=False),
        "names": Field(ListOf(Str()), required=False),
        "time_limit_s": Field(Num(lo=0), required=False),
        "interval_s": Field(Num(lo=0), required=False),
        "fault_duration_s": Field(Num(lo=0), required=False),
        "session_timeout_s": Field(Num(lo=0), required=False),
        "replay": Field(BOOL, required=False),
        "planned": Field(ListOf(TABLE), required=False),
        "origin_ns": Field(Int(), required=False),
        "run_id": Field(Str(), required=False),
        "heals": Field(ListOf(TABLE), required=False),
        "unresolved": Field(ListOf(TABLE), required=False),
        "unfired": Field(ListOf(TABLE), required=False),
        "final_heal": Field(TABLE, required=False),
    },
    what="a fault schedule (a table with a list of faults)",
)


def check_schedule(doc: Any, path: Path, spec: TestSpec) -> None:
    """Refuse, in one sentence naming `path` and the field, a schedule whose shape, fault
    kinds, targets, triggers or times the stored run (`spec`) could not have run."""
    try:
        SCHEDULE.check(doc, "")
        faults = doc["faults"]
        # a membership fault adds servers past the spec's count (n4 after a replace)
        spare = sum(1 for f in faults if f["f"].startswith(("member-", "rolling-")))
        seen: set[int] = set()
        for i, f in enumerate(faults):
            _check_fault(f, f"faults[{i}]", spec, spare)
            if f.get("fault_id") is not None:  # the nemesis keys a fault on it: each once
                if f["fault_id"] in seen:
                    raise Wrong(f"faults[{i}].fault_id", f["fault_id"], "an id no fault before has")
                seen.add(f["fault_id"])
    except Wrong as w:
        raise refusal(path, w, f"give a {path.name} written by zkjepsen") from None


def _check_fault(f: dict[str, Any], at: str, spec: TestSpec, spare: int) -> None:
    name = f["f"]
    if name not in KINDS or KINDS[name].power is None:
        raise Wrong(f"{at}.f", name, "a fault kind (`zkjepsen list nemeses`)")
    why = fault_refusal(spec, name)  # the one answer, its clients' needs included
    if why:
        raise Wrong(f"{at}.f", name, f"a fault this run can run: {why}")
    if f["end_ns"] < f["start_ns"]:
        raise Wrong(f"{at}.end_ns", f["end_ns"], f"a time no earlier than start_ns {f['start_ns']}")
    shape = Shape.of(spec)
    for key in ("target", "aim"):
        if isinstance(f.get(key), str):
            try:
                check_target(f[key], shape, key)
            except BadInput as e:
                raise Wrong(f"{at}.{key}", f[key], f"a target of this run ({e})") from None
    for k, t in enumerate(f.get("targets") or []):
        m = NAMES.match(t)
        top = (spec.nodes + spare) if m and m.group(1) == "n" else (spec.clients or 0)
        if not m or not 1 <= int(m.group(2)) <= top:
            servers = f"n1 to n{spec.nodes + spare}"
            raise Wrong(f"{at}.targets[{k}]", t, f"a server ({servers}) or client (c1 to c{top})")
    if f.get("trigger") is not None:
        _check_trigger(f["trigger"], f"{at}.trigger", shape)


def _check_trigger(table: dict[str, Any], at: str, shape: Shape) -> None:
    from zkjepsen.nemesis.triggers import Trigger  # as record_schedule's (import-light)

    try:
        Trigger.from_json(table)
    except (ValueError, TypeError) as e:
        raise Wrong(at, table, f"a trigger the nemesis can arm ({e})") from None
    client = table.get("client")
    if client is not None and client > shape.clients:
        raise Wrong(f"{at}.client", client, f"a client of this run (1 to {shape.clients})")


# ---- history.jsonl's nemesis records ---------------------------------------------------------
# What nemesis/schedule.py's `_record` writes for a fault's start and its end (an `info` of
# process "nemesis" named after the fault); the client records are checked by the history's
# own reader and run/stored_checks.py.
NEMESIS_VALUE = Table(
    {
        "fault_id": Opt(Int(lo=0)),
        "phase": Str(choices=("start", "end")),
        "targets": ListOf(Str(), unique=True),
        "detail": Field(TABLE, required=False),
        "trigger": Field(TRIGGER, required=False),
        "fired": Field(TABLE, required=False),
        "attempt": Field(Int(lo=1), required=False),
        "error": Field(Str(empty=True), required=False),
        "end_error": Field(Str(empty=True), required=False),
        "landed": Field(Opt(BOOL), required=False),
        "observed": Field(
            Table({"landed": OneOf((True, False, None)), "why": Str(empty=True)}), required=False
        ),
        "went_in_ns": Field(NS, required=False),  # an end's: when it went in at its target
    },
    what="a fault's start or end (a table with fault_id, phase and targets)",
)


def check_nemesis_records(history: Any, path: Path, spec: TestSpec) -> None:
    """Each nemesis record of a stored history is a fault's start or end as the nemesis writes
    it: an `info` named after a fault this run can run, its targets in this run, each fault
    started once and ended at most once after its start. One sentence naming the line."""
    spare = sum(1 for op in history.ops if str(op.f).startswith(("member-", "rolling-")))
    phases: dict[Any, str] = {}
    for op, line in zip(history.ops, history.lines, strict=False):
        if op.process != NEMESIS:
            continue
        try:
            if op.type != "info":
                raise Wrong("type", op.type, '"info" (the nemesis records its faults as info)')
            NEMESIS_VALUE.check(op.value, "value")
            fault = {"f": op.f, "start_ns": 0, "end_ns": 0, "targets": op.value["targets"]}
            _check_fault(fault, "", spec, spare)
            if "trigger" in op.value:
                _check_trigger(op.value["trigger"], "value.trigger", Shape.of(spec))
            fid, phase = op.value["fault_id"], op.value["phase"]
            # a start follows nothing or its end (a missed attempt re-armed); an end its start
            before = phases.get(fid, "none")
            if fid is not None and (before == "start") == (phase == "start"):
                said = {"none": "no start", "start": "its start", "end": "its end"}[before]
                raise Wrong("value.phase", phase, f"a phase that may follow {said}")
            phases[fid] = phase
        except Wrong as w:
            at = w.at.lstrip(".")
            at = f"value.{at}" if at.startswith("targets") else at
            raise BadInput(
                f"{path} line {line}: field {at!r} of a nemesis record is {shown(w.value)}, not "
                f"{w.expected}; give a history written by zkjepsen"
            ) from None


# ---- results.json ------------------------------------------------------------------------------
VERDICT = OneOf(tuple(v.valid for v in checker.Verdict))  # true, false, "unknown"
TIME = Anything()  # ns, or null/"inf" for "until the end" (checker._time reads any as that)
VIOLATION = Table(
    {
        "kind": Str(),
        "clients": Field(Opt(ListOf(Anything())), required=False),
        "start": Field(TIME, required=False),
        "end": Field(TIME, required=False),
        "faults": Field(Opt(ListOf(Anything())), required=False),
        "evidence": Field(Opt(TABLE), required=False),
    },
    rest=Anything(),
    what="a violation (a table with its kind)",
)
LEGACY = Opt(ListOf(Anything()))


@dataclass(frozen=True)
class Verdict(Kind):
    """A checker's result as Result.from_json reads it: a verdict, its violations, or its
    parts (each a table with a `valid` of its own), or the keys stored before violations."""

    top: bool = False
    expected = "a results table"

    def check(self, value: Any, at: str) -> None:
        if type(value) is not dict:
            raise Wrong(at, value, "a results table")
        fields: dict[str, Field | Kind] = {"valid": Field(VERDICT, required=self.top)}
        if "violations" in value:
            fields["violations"] = Opt(ListOf(VIOLATION))
            fields["violation_counts"] = Field(Opt(MapOf(Int(lo=0))), required=False)
        else:
            for key in ("belief_overlaps", "effect_overlaps", "backwards"):
                fields[key] = Field(LEGACY, required=False)
            for key in ("belief_overlaps", "effect_overlaps", "backwards"):
                found = value.get(key)
                for i, item in enumerate(found if isinstance(found, list) else ()):
                    if isinstance(item, dict):
                        VIOLATION_LEGACY.check(item, f"{at}.{key}[{i}]" if at else f"{key}[{i}]")
        Table(fields, rest=_Part()).check(value, at)


@dataclass(frozen=True)
class _Part(Kind):
    """Any other key: a part (a table with `valid`) is checked as a result; the rest is detail."""

    def check(self, value: Any, at: str) -> None:
        if type(value) is dict and "valid" in value:
            Verdict().check(value, at)


VIOLATION_LEGACY = Table(
    {"clients": Field(Opt(ListOf(Anything())), required=False)},
    rest=Anything(),
)
RESULTS = Verdict(top=True)


def check_results(doc: Any, path: Path) -> None:
    """Refuse, in one sentence naming `path` and the field, a results.json no checker wrote."""
    try:
        RESULTS.check(doc, "")
    except Wrong as w:
        raise refusal(path, w, FIX_RESULTS) from None
