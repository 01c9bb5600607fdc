"""Crashed writes pinned by what was read (issue 54): a register's crashed write whose value
nothing else writes, and that a completed op read, took effect, and before that read returned.

A crashed op may take effect at any moment after its call, or never: the search carries it as
optional until the end of the partition, and each one it carries doubles what it may have to
explore (the "once but not twice" pattern: a crashed `write 9` called long before a read of 9
stayed optional across thousands of ops, and the search ran out of memory). But where v is
written by one op w only (a write of v, or a cas(_, v) that is not read-only), v is not the
initial value, and some completed op r reads v (a read of v, or a successful cas(v, _)), then
in every linearization w comes before r (the last write before r wrote v, and only w does),
so w took effect and its linearization point is before r's return. That is exactly what a
completed op with w's call and the earliest such return as its interval says; so w is given
that end, and the search, the sweep and the read-from path then treat it as completed: not
optional, forced by that return entry. Nothing is lost (every linearization of the history
is one of the pinned ops and back) and nothing is gained (the pin only restates what every
linearization already does). The op keeps its call: it is still reported as crashed (`info`).

Pinned so, "once but not twice" is decided by structure: two reads of 9 with a completed
write of another value between them in real time (the first returned before it was called,
it returned before the second was called) need w both before the first and after the write,
and w is now a completed op that returned before the write was called; overwritten.py refutes
the second read in one pass (no writer of 9 can be placed between the write and it).

A reader that returned before w was called makes the history not linearizable; then nothing is
pinned (an interval that ends before it starts is no op), and the other paths say so.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from zkjepsen.checker.linear.model_base import cas_value, read_value, write_value
from zkjepsen.checker.linear.wgl import LinOp, PinnedCall, is_pinned
from zkjepsen.history import Call

_END = itemgetter(3)  # a LinOp's end: None when it crashed


def pin(ops: list[LinOp], init: Any) -> int:
    """Pin, in place, each crashed sole writer of a value some completed op read (module
    docstring): it gets the earliest return of those reads as its end. How many were pinned."""
    if None not in map(_END, ops):  # (in C: most partitions have no crashed op)
        return 0
    crashed = [i for i, op in enumerate(ops) if op[3] is None]
    written: dict[Any, int] = {}  # value -> the crashed op writing it
    for i in crashed:
        fn, arg, ro = ops[i][1][:3]
        if fn is write_value:
            v = arg
        elif fn is cas_value and not ro:
            v = arg[1]
        else:
            continue
        try:
            written[v] = -1 if v in written else i
        except TypeError:  # a value that does not hash: not a register's
            return 0
    written = {v: i for v, i in written.items() if i >= 0 and v != init}
    if not written:
        return 0
    return _pin(ops, written)


def _pin(ops: list[LinOp], written: dict[Any, int]) -> int:
    first: dict[Any, Any] = {}  # value -> earliest return of a completed op reading it
    get = written.get
    for i, (_, action, _, end) in enumerate(ops):
        fn, arg = action[0], action[1]
        if fn is write_value:
            w = get(arg)
            if w is not None and w != i:
                del written[arg]  # another op writes it too
        elif fn is cas_value:
            old, new = arg
            if not action[2]:
                w = get(new)
                if w is not None and w != i:
                    del written[new]
            if end is not None and old in written and (old not in first or end < first[old]):
                first[old] = end
        elif fn is read_value:
            if end is not None and arg in written and (arg not in first or end < first[arg]):
                first[arg] = end
    pinned = 0
    for v, end in first.items():
        w = written.get(v)
        if w is None:
            continue
        op = ops[w]
        if end >= op[2]:
            ops[w] = LinOp(PinnedCall(*op[0]), op[1], op[2], end)
            pinned += 1
    return pinned


def unpinned(ops: list[LinOp]) -> list[LinOp]:
    """The ops with each pinned one crashed again (end None): what to re-pin or decide after
    removing an op, since the read that pinned a write may be the op removed."""
    return [LinOp(Call(*op[0]), op[1], op[2], None) if is_pinned(op) else op for op in ops]


def pinned_by(pinned: list[LinOp], ops: list[LinOp]) -> list[LinOp]:
    """The completed ops of `ops` that read a value one of the `pinned` ops writes: the reads
    that pinned them."""
    if not pinned:
        return []
    values = set()
    for op in pinned:
        fn, arg = op[1][0], op[1][1]
        values.add(arg if fn is write_value else arg[1])
    out = []
    for op in ops:
        if op[3] is None or is_pinned(op):
            continue
        fn, arg = op[1][0], op[1][1]
        if (fn is read_value and arg in values) or (fn is cas_value and arg[0] in values):
            out.append(op)
    return out
