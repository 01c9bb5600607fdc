"""Overwritten reads: a refutation for registers whose values repeat (etcd's 0..4), where the
read-from path does not apply and the search may not end (issue 39's small-domain stretch).

A read r of v (a read returning v, or a successful cas(v, x): both need the register to hold
v) is refuted when some write j of another value (a write or successful cas, completed)
returned before r was called, and every op that may write v and was called no later than r
returned (writes of v and cas(_, v), completed or crashed: a crashed one has no end) returned
before j was called. In every linearization each such writer of v comes before j (real
time), j before r, and no writer of v can come between j and r (the others were called after
r returned): the last write before r is j or a later write of another value, so r cannot read
v. Nor can the initial value explain it: j comes first. That takes one pass over the
partition in O(n log n): for each read, the latest call of a completed write of another value
that returned before the read was called, against the latest return of a writer of its value
called no later than the read returned (crashed writers return at +inf).

This refutes only what no placement of any op explains, whatever the other ops did, so it is
exact where it answers and silent elsewhere: a read that some crashed write of its value may
explain, or two reads that conflict with each other, still go to the search. It is certified
as the read-from path's refutations are: the core, j then r starting from the state j needs
(a cas's old value; a write needs none), is confirmed not linearizable by the search, and
stands for the whole partition because the condition above was checked over all of its ops:
were the partition linearizable, the last write before r would be a writer of v between j
and r, and there is none. (The writers of v before j are not in the core: the state they
leave is overwritten by j.) The read is the op that cannot be placed after the core's
prefix, and the one named.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zkjepsen.checker.linear import readfrom
from zkjepsen.checker.linear.model_base import cas_value, read_not, read_value, write_value
from zkjepsen.checker.linear.wgl import LinOp, Outcome, run

INF = float("inf")


def fast_decide(
    ops: list[LinOp],
    init: Any,
    prove: Callable[[list[LinOp], Any], Outcome | None] | None = None,
) -> tuple[bool, Outcome, str] | None:
    """The read-from path's decision (readfrom.decide), else `prove`'s valid outcome (the
    compiled search's, "search"), else this module's refutation, with the path's name
    ("read-from", "search" or "overwritten"); None when none answers."""
    fast = readfrom.decide(ops, init)
    if fast is not None:
        return fast[0], fast[1], "read-from"
    if prove is not None:
        valid = prove(ops, init)
        if valid is not None:
            return True, valid, "search"
    found = refute(ops, init)
    return None if found is None else (False, found, "overwritten")


def refute(ops: list[LinOp], init: Any) -> Outcome | None:
    """The search's outcome on the core of an overwritten read (module docstring), or None:
    none found, or the ops are not a register's."""
    try:
        found = _find(ops)
    except TypeError:  # a value that does not hash
        return None
    if found is None:
        return None
    j, r = found
    action = ops[j].action  # j's own read, if it is a cas, is the state the core starts in
    out = run([ops[j], ops[r]], action[1][0] if action[0] is cas_value else init)
    return None if out.valid else out


def _find(ops: list[LinOp]) -> tuple[int, int] | None:
    """(j, r) of the overwritten read r that returned first (module docstring)."""
    writes: list[tuple[Any, Any, Any, int]] = []  # (start, end, value, op): every writer
    reads: list[tuple[Any, Any, Any, int]] = []  # (start, end, value, op): completed readers
    for i, (_, action, start, end) in enumerate(ops):
        fn, arg = action[0], action[1]
        if fn is read_value:
            if end is not None:
                reads.append((start, end, arg, i))
        elif fn is write_value:
            writes.append((start, INF if end is None else end, arg, i))
        elif fn is cas_value:
            if end is not None:
                reads.append((start, end, arg[0], i))
            if not action[2]:  # (cas(v, v) only reads)
                writes.append((start, INF if end is None else end, arg[1], i))
        elif fn is not read_not:
            return None
    if not reads or not writes:
        return None
    latest = _latest_overwrite(writes, reads)
    last_of = _last_writer_of_value(writes, reads)
    best: tuple[Any, int, int] | None = None
    for r, (_, end, _, i) in enumerate(reads):
        j = latest[r]
        w = last_of[r]
        if j is not None and (w is None or w[0] < j[0]) and (best is None or end < best[0]):
            best = (end, j[1], i)
    return None if best is None else best[1:]


def _latest_overwrite(
    writes: list[tuple[Any, Any, Any, int]], reads: list[tuple[Any, Any, Any, int]]
) -> list[tuple[Any, int] | None]:
    """Per read: (start, op) of the completed writer called last among those that returned
    before the read was called and wrote another value than it reads, or None."""
    done = sorted((w for w in writes if w[1] != INF), key=lambda w: w[1])
    out: list[tuple[Any, int] | None] = [None] * len(reads)
    top1: tuple[Any, Any, int] | None = None  # (start, value, op) called last
    top2: tuple[Any, Any, int] | None = None  # the same among the other values than top1's
    k = 0
    for r in sorted(range(len(reads)), key=lambda r: reads[r][0]):
        start, _, value, _ = reads[r]
        while k < len(done) and done[k][1] < start:
            s, _, v, i = done[k]
            k += 1
            if top1 is None or v == top1[1]:
                if top1 is None or s > top1[0]:
                    top1 = (s, v, i)
            elif s > top1[0]:
                top1, top2 = (s, v, i), top1  # (the old top1: the best of the values but v)
            elif top2 is None or s > top2[0]:
                top2 = (s, v, i)
        pick = top1 if top1 is not None and top1[1] != value else top2
        out[r] = None if pick is None else (pick[0], pick[2])
    return out


def _last_writer_of_value(
    writes: list[tuple[Any, Any, Any, int]], reads: list[tuple[Any, Any, Any, int]]
) -> list[tuple[Any, int] | None]:
    """Per read: (end, op) of the writer of its value that returned last among those called
    no later than the read returned (end +inf: crashed), or None (no such writer)."""
    by_start = sorted(writes, key=lambda w: w[0])
    last: dict[Any, tuple[Any, int]] = {}
    out: list[tuple[Any, int] | None] = [None] * len(reads)
    k = 0
    for r in sorted(range(len(reads)), key=lambda r: reads[r][1]):
        _, end, value, _ = reads[r]
        while k < len(by_start) and by_start[k][0] <= end:
            _, e, v, i = by_start[k]
            k += 1
            seen = last.get(v)
            if seen is None or e > seen[0]:
                last[v] = (e, i)
        out[r] = last.get(value)
    return out
