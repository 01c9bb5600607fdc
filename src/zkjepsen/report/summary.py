"""Verdicts as text: one line per checker, for the CLI, the pytest plugin and the matrix."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from zkjepsen.checker import Result, Violation, as_result
from zkjepsen.checker.nature import lease_words, part_words
from zkjepsen.checker.power import Power

# How a violation kind reads in a sentence (plural); others read "<kind> violations".
KIND_WORDS = {
    "belief": "belief overlaps",
    "careful": "careful belief overlaps",
    "effect": "effect overlaps",
    "backwards": "backwards writes",
    "reused-token": "reused tokens",
    "foreign-token": "writes with a foreign token",
    "read-out-of-bounds": "reads out of bounds",
    "stuck": "stuck periods",
    "phantom-grant": "grants the service never saw (phantom grants)",
}


def summarise(res: Result | Mapping[str, Any]) -> str:
    """One line for one checker's result: how many violations, and the first in a few words;
    for an unknown verdict, why; for a valid one, its note if it has one."""
    r = as_result(res)
    if r.valid is False and r.violations:
        line = _violation_line(r, r.violations[0])
        # the lock part: how many splits a lease or a fault cannot explain; another part: how
        # many of its violations no fault's nature explains
        splits = lease_words(r.details) or part_words(r.details)
        return f"{line}; {splits}" if splits else line
    if r.valid is False:  # a checker that names no violation: its first non-empty list
        for key, items in r.details.items():
            if isinstance(items, list) and items:
                return (
                    f"{len(items)} {key.replace('_', ' ')}; first: "
                    f"{json.dumps(items[0], default=str)[:160]}"
                )
    if r.valid == "unknown":
        return r.reason[:200]
    # A valid verdict with a caveat (failed releases during faults, starved clients) says it;
    # the power part says its figures.
    if "per_kind" in r.details:
        return str(r.details.get("line") or "")
    note = str(r.details.get("note") or "")[:200]
    near = r.details.get("belief_overlap_count") or 0
    if near:  # valid with belief overlaps: the property was effect, and none reached the data
        said = (
            f"{near} belief overlaps, judged as near misses (property=effect: no write overlapped)"
        )
        splits = lease_words(r.details)  # how many of them a lease cannot explain
        said = f"{said}; {splits}" if splits else said
        return f"{said}; {note}" if note else said
    return note


def power_of_results(results: Result | Mapping[str, Any] | None) -> Power | None:
    """The verdict's power (its `power` part, run/analysis.with_power); None without one."""
    part = as_result(results).parts.get("power")
    return Power.from_json(part.details) if part is not None else None


def power_line(results: Result | Mapping[str, Any] | None) -> str:
    """The power figures in one line, e.g. "0 split holders in 27 landed client-pauses:
    per-pause split rate ≤ 10.5 % (95 %)"; '' for a run without faults or without a lock."""
    power = power_of_results(results)
    return power.line() if power is not None else ""


def _violation_line(r: Result, v: Violation) -> str:
    ev = v.evidence
    if v.kind == "not-linearizable":
        op = ev.get("cannot_place") or {}
        return (
            f"{r.details.get('reason', 'not linearizable')}; after a linearizable prefix of "
            f"{ev.get('longest_prefix_length')} ops, no order fits {op.get('op')} by "
            f"process {op.get('process')} ({op.get('status')})"
        )
    if v.kind == "lost" and "acknowledged" in ev:
        return (
            f"{ev['lost']} acknowledged increments lost: final read {ev.get('final_value')}, "
            f"but {ev['acknowledged']} adds were acknowledged" + _after(v)
        )
    if v.kind == "could-not-boot":  # checker/recovery.py: which server, after what, why
        n = r.count(v.kind)
        return (
            f"{n} server{'s' if n != 1 else ''} could not boot again; first: {ev.get('server')} "
            f"after {ev.get('fault')}: {str(ev.get('why'))[:160]}"
        )
    if v.kind == "stuck" and "bound" in ev:  # a waiter past the service's bound: who, how long
        return f"{r.count(v.kind)} {KIND_WORDS['stuck']}: {ev['reason']}"
    what = f"{r.count(v.kind)} {KIND_WORDS.get(v.kind, v.kind + ' violations')}"
    if v.clients:
        when = ""
        if v.start is not None:
            when = f" at {v.start / 1e9:.2f}s-" + (f"{v.end / 1e9:.2f}s" if v.end else "end")
        return f"{what}; first: clients {list(v.clients)}{when}{fault_words(v)}"
    return f"{what}; first: {json.dumps(dict(ev), default=str)[:160]}"


def fault_words(v: Violation) -> str:
    """ " during pause-client", " during no fault, after power-loss-all at 24.63s": the faults
    a violation's window met, and the disk fault before it when that is not among them."""
    faults = ", ".join(f.get("f", "?") for f in v.faults) or "no fault"
    return f" during {faults}" + _after(v)


def _after(v: Violation) -> str:
    """ ", after power-loss-all at 24.63s": the disk fault before a violation (what it took, a
    lock node, a lease, a fencing counter, outlives its window), unless its window is named."""
    disk = v.evidence.get("after_disk_fault")
    if not isinstance(disk, Mapping) or any(
        f.get("fault_id") == disk.get("fault_id") and f.get("f") == disk.get("f") for f in v.faults
    ):
        return ""
    start = disk.get("start")
    return f", after {disk.get('f', '?')}" + (
        f" at {start / 1e9:.2f}s" if start is not None else ""
    )
