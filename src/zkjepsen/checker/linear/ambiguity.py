"""Why a partition is undecided: the search's frontier and the ambiguous ops in front of it.

The search (wgl.py) spends its time where it must guess: an op whose effect the history does
not pin down. At the frontier (the earliest-returning completed op its longest prefix could
not get past) the ops it may still place first are those not in the prefix and called by that
op's return: the window. In the window an op is ambiguous when
- it crashed and is not read-only: it may have taken effect anywhere after its call, or never
  (a crashed write or cas);
- it is etcd's failed cas: it reads "anything but old", so many places fit it;
- it reads a value written by more than one op, or by a crashed op: which write it read from,
  and so where it goes, is not given.
Their number k is what the search's cost grows with exponentially (the window's length only
linearly), so a user knows what to shorten or re-run: a history with fewer crashed writes, or
with unique values, around that op.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from zkjepsen.checker.linear.model_base import cas_value, read_not, read_value, write_value
from zkjepsen.checker.linear.wgl import LinOp

SHOWN = 12  # ambiguous ops listed per partition (k counts them all)


def _written(ops: list[LinOp]) -> tuple[Counter[Any], set[Any]]:
    """How many ops write each value, and the values a crashed op writes (register models)."""
    count: Counter[Any] = Counter()
    by_crashed: set[Any] = set()
    for op in ops:
        fn, arg = op.action.fn, op.action.arg
        v = arg if fn is write_value else arg[1] if fn is cas_value else None
        if fn is write_value or fn is cas_value:
            try:
                count[v] += 1
                if op.end is None:
                    by_crashed.add(v)
            except TypeError:  # a value that does not hash: counted as repeated below
                pass
    return count, by_crashed


def _why(op: LinOp, count: Counter[Any], by_crashed: set[Any]) -> str | None:
    """Why this op of the window is ambiguous, or None."""
    fn, arg, ro = op.action.fn, op.action.arg, op.action.read_only
    if op.end is None:
        return None if ro else "crashed: may have taken effect anywhere after its call, or never"
    if fn is read_not:
        return "failed cas: read anything but its old value"
    read: Any = arg if fn is read_value else arg[0] if fn is cas_value else None
    if fn is not read_value and fn is not cas_value:
        return None
    try:
        if count[read] > 1:
            return f"reads {read!r}, written by {count[read]} ops"
        if read in by_crashed:
            return f"reads {read!r}, written by a crashed op"
    except TypeError:
        return "reads a value that cannot be compared"
    return None


def explain(
    ops: list[LinOp], best: list[int], describe: Callable[[LinOp], dict[str, Any]]
) -> dict[str, Any]:
    """k, the frontier and the ambiguous ops (the first SHOWN, each `describe`d with `why`)
    of one undecided partition, given the longest prefix its search reached. The window: the
    ops not in the prefix called by the frontier's return, and those of the prefix the search
    may still move (crashed, or concurrent with the frontier)."""
    placed = set(best)
    ends = [(op.end, i) for i, op in enumerate(ops) if op.end is not None and i not in placed]
    until, frontier = min(ends) if ends else (0, None)
    since = 0 if frontier is None else ops[frontier].start
    count, by_crashed = _written(ops)
    window = 0
    found: list[tuple[int, str]] = []
    for i, op in enumerate(ops):
        if frontier is not None and op.start > until:
            continue  # called after the frontier returned: it cannot come before it
        # An op of the prefix is settled if it returned before the frontier was called; a
        # crashed one, or one concurrent with the frontier, the search may still move.
        end = op.end
        if i in placed and end is not None and frontier is not None and end < since:
            continue
        window += 1
        why = _why(op, count, by_crashed)
        if why is not None:
            found.append((i, why))
    shown = [{**describe(ops[i]), "why": why} for i, why in found[:SHOWN]]
    return {
        "k": len(found),
        "window": window,
        "prefix": len(best),
        "frontier": None if frontier is None else describe(ops[frontier]),
        "ops": shown,
    }


def summary(key: Any, found: dict[str, Any]) -> str:
    """One clause for the verdict's reason: the partition, k and the first ambiguous ops."""
    named = ", ".join(
        f"{o['op']} by process {o['process']} ({o['status']}, index {o['invoke_index']})"
        for o in found["ops"][:3]
    )
    more = f" and {found['k'] - 3} more" if found["k"] > 3 else ""
    at = found["frontier"]
    where = "" if at is None else f" before {at['op']} (index {at['invoke_index']})"
    return (
        f"partition {key!r}: k={found['k']} ambiguous op(s) among {found['window']} the search "
        f"could place next{where}" + (f": {named}{more}" if named else "")
    )
