"""Just-in-time linearization (Lowe, "Testing for linearizability", 2017): a sweep over one
partition's call and return events in time order, with configurations (model state, ops
linearized ahead of their return) the history so far allows, explored depth first. The fast
path in front of the WGL search (wgl.py) for histories with little concurrency, where most
checks are.

Why it is exact. An op may take effect at any point between its call and its return; so
deferring an op's linearization until its return is due loses nothing: at the return of op i,
the configurations are all those reachable from the current one by linearizing some pending
ops (called, not yet linearized) and then i (i may already be linearized: then it is simply
done). Ops linearized after i can wait for their own return. Crashed ops never return: they
stay pending to the end, may be linearized in any later closure, or never. The history is
linearizable iff some configuration survives the last event. The sweep follows one
configuration; where a return allows several it tries them in turn, backtracking to the
latest choice when one dies, and remembers the configurations that died at each event
(nothing ahead of an event depends on how it was reached, so one that died once dies again:
the search visits each configuration at each event at most once, like keeping them all, and
a valid history whose ops mostly take effect in return order costs about one step per op).
Two dominance cuts keep the choices few, each sound for the same reason as the WGL search's
read rule: when i is read-only and legal in a configuration, placing it there dominates
placing other pending ops first (they can still follow it, leaving the same states); and when
every other pending op is linearized already, placing i is the only move.

The sweep decides; it does not explain. A refuted partition is searched again by WGL, whose
longest linearizable prefix and stuck op make the counterexample. A sweep that makes more
model steps than its budget gives up (None) and WGL, which yields to the scheduler and prunes
with the model's lookahead, takes over: heavy concurrency is WGL's ground.
"""

from __future__ import annotations

import time
from itertools import accumulate, islice
from typing import Any

from zkjepsen.checker.linear.model_base import ILLEGAL, cas_value, read_not, read_value, write_value

# Beyond these the partition goes to WGL: with many ops pending at once (or many crashed ops,
# pending forever) a closure has exponentially many configurations, WGL's worst case too, but
# WGL has its cache across the whole history and its lookahead.
MAX_PENDING = 8  # ops pending at once
STEPS_PER_OP = 16  # model steps per op returned so far, on average, plus a constant
STEPS = 512


PROBE = 1024  # ops a long partition's sweep is first tried on
INF = float("inf")

try:  # the compiled fast path (_fastsweep.c), built with the package (setup.py) given a C compiler
    from zkjepsen.checker.linear._fastsweep import decide as _fast_decide
    from zkjepsen.checker.linear._fastsweep import setup as _fast_setup
except ImportError:  # pragma: no cover - the pure-Python path below gives the same answers
    _fast_decide = None  # type: ignore[assignment]  # None: not built
else:
    from zkjepsen.checker.linear.kv_models import append_str

    _fast_setup(
        ILLEGAL,
        read_value,
        write_value,
        append_str,
        cas_value,
        read_not,
        MAX_PENDING,
        STEPS,
        STEPS_PER_OP,
        PROBE,
    )


def decide(ops: list[Any], init: Any, deadline: float | None = None) -> tuple[bool | None, int]:
    """`sweep`, after a probe on a long partition: the sweep's set-up (a sort of every event)
    is wasted on a partition it gives up on, so one it gives up on within its first PROBE ops
    (in call order) goes to WGL at once. The probe's other answers mean nothing (those ops
    are not a history on their own: a read may need a write called later) and the whole
    partition is swept. The compiled port (_fastsweep.c) answers the same, when built."""
    if _fast_decide is not None:
        out = _fast_decide(ops, init, deadline)
        if out is not NotImplemented:
            return out
    return py_decide(ops, init, deadline)


def py_decide(ops: list[Any], init: Any, deadline: float | None = None) -> tuple[bool | None, int]:
    """`decide` in pure Python."""
    # A partition whose ops ran one after another (each called after the previous returned,
    # none crashed) has one order only: replay it. (One client's partition, for one.)
    s, prev, legal = init, -INF, True
    for _, action, start, end in ops:
        if end is None or start <= prev:
            break
        if legal:  # once an op is illegal, only whether the rest ran in sequence matters
            s = action[0](s, action[1])
            legal = s is not ILLEGAL
        prev = end
    else:
        return legal, len(ops)
    if len(ops) > 2 * PROBE and sweep(ops[:PROBE], init)[0] is None:
        return None, 0
    return sweep(ops, init, deadline)


def sweep(ops: list[Any], init: Any, deadline: float | None = None) -> tuple[bool | None, int]:
    """(True: linearizable | False: not | None: handed over to WGL, model steps made).
    `ops` are the search's LinOps of one partition (wgl.LinOp). Past `deadline` (a
    time.monotonic() value, read every 4096 returns) it gives up too: WGL, which checks the
    clock after every slice, then answers "unknown"."""
    n = len(ops)
    if not n:
        return True, 1
    events = _events(ops)
    if events is None:  # more ops pending at once than MAX_PENDING: WGL's ground
        return None, 1
    fns, args, ro, order = events
    # A pending op is named by a bit of a small int, reused once the op returns, so a
    # configuration's set costs O(concurrency), whatever the history's length.
    bit = [0] * n
    free: list[int] = []
    top = 1
    # Depth first, one configuration at a time (s, lin: the model state and the bits of the
    # pending ops placed ahead of their return). At a return whose op is not placed yet, the
    # configurations the closure allows are tried in turn: the first at once, the others
    # kept on `choices` with what the pending ops and the free bits were. A configuration
    # met again at the same event failed before (`tried`), as in WGL's cache: the events
    # ahead are the same, so what failed from it once fails again.
    pending: list[int] = []
    pmask = 0  # bits of the pending ops
    s, lin = init, 0
    choices: list[tuple[Any, ...]] = []
    tried: set[tuple[int, Any, int]] = set()
    made = 1
    returns = far = 0
    start = 0
    while True:
        for p, e in enumerate(islice(order, start, None), start):
            if e < n:
                if free:
                    b = bit[e] = free.pop()
                else:
                    b = bit[e] = top
                    top <<= 1
                pending.append(e)
                pmask |= b
                continue
            i = e - n
            returns += 1
            if not returns & 4095 and deadline is not None and time.monotonic() > deadline:
                return None, made
            b = bit[i]
            pending.remove(i)
            free.append(b)
            pmask ^= b
            if lin & b:
                lin ^= b
                continue
            fi, ai = fns[i], args[i]
            unplaced = pmask & ~lin  # the other pending ops not placed yet
            ns = fi(s, ai)
            made += 1
            if ns is not ILLEGAL and (ro[i] or not unplaced):
                s = ns  # the only move, or a read's dominant one (see the module docstring)
                continue
            key = (~p, s, lin)  # before the return at p; after it, configurations are (p + 1, ...)
            if key in tried:
                break
            tried.add(key)
            if returns > far:
                far = returns
            if unplaced & (unplaced - 1):
                outs, made = closure(s, lin, i, b, pending, bit, fns, args, ro, made)
            else:  # one other op could go first (or none): the closure, inline
                outs = []
                if unplaced:
                    for j in pending:
                        if bit[j] == unplaced:
                            break
                    nj = fns[j](s, args[j])
                    made += 1
                    if nj is not ILLEGAL:
                        nj = fi(nj, ai)
                        made += 1
                        if nj is not ILLEGAL:
                            outs.append((nj, lin | unplaced))
                if ns is not ILLEGAL:
                    outs.append((ns, lin))  # i alone: tried first
            if made > STEPS + STEPS_PER_OP * far:
                return None, made
            if not outs:
                break
            s, lin = outs.pop()
            if outs:
                choices.append((p + 1, outs, tuple(pending), pmask, tuple(free), top, returns))
        else:
            return True, made
        # backtrack: the next configuration of the latest choice not yet exhausted
        while choices:
            start, outs, snap, pmask, free_snap, top, returns = choices[-1]
            s, lin = outs.pop()
            if not outs:
                choices.pop()
            if (start, s, lin) not in tried:
                tried.add((start, s, lin))
                pending, free = list(snap), list(free_snap)
                break
        else:
            return False, made


def _events(ops: list[Any]) -> tuple[Any, Any, Any, list[int]] | None:
    """The ops' model functions, arguments and read-only flags (columns), and their events
    in time order (calls 0..n-1, returns n..2n-1; crashed ops' returns left out); None when
    more ops are pending at once than MAX_PENDING (crashed ones stay pending)."""
    n = len(ops)
    _, actions, starts, ends = zip(*ops, strict=True)  # columns, built in C
    fns, args, ro, _ = zip(*actions, strict=True)
    # Event keys: time * 2, plus 1 for a return, so a call sorts before a return at the same
    # time; a crashed op's return sorts last (INF) and ends the sweep. A stable sort of the
    # event numbers (calls 0..n-1, returns n..2n-1) keeps op order among equal keys.
    keys = [t * 2 for t in starts]
    if None in ends:
        keys += [INF if t is None else t * 2 + 1 for t in ends]
    else:
        keys += [t * 2 + 1 for t in ends]
    order = sorted(range(2 * n), key=keys.__getitem__)
    crashed = ends.count(None)
    if crashed:
        del order[2 * n - crashed :]  # their returns (INF) sort last: crashed ops never return
    if max(accumulate([1 if e < n else -1 for e in order])) > MAX_PENDING:
        return None
    return fns, args, ro, order


def closure(
    s: Any,
    lin: int,
    i: int,
    b: int,
    pending: list[int],
    bit: list[int],
    fns: Any,
    args: Any,
    ro: Any,
    made: int,
) -> tuple[list[tuple[Any, int]], int]:
    """The configurations after op i's return from (s, lin): some pending ops placed, then i
    (see the module docstring), the one that places i alone LAST (it is tried first), and
    the model steps made."""
    fi, ai = fns[i], args[i]
    out: dict[tuple[Any, int], None] = {}
    seen = {(s, lin)}
    stack = [(s, lin)]
    while stack:
        cs, cl = stack.pop()
        if cl & b:
            out[(cs, cl ^ b)] = None
            continue
        ns = fi(cs, ai)
        made += 1
        if ns is not ILLEGAL:
            out[(ns, cl)] = None
            if ro[i]:
                continue
        for j in pending:
            bj = bit[j]
            if cl & bj:
                continue
            nj = fns[j](cs, args[j])
            made += 1
            if nj is ILLEGAL:
                continue
            key = (nj, cl | bj)
            if key not in seen:
                seen.add(key)
                stack.append(key)
    found = list(out)
    found.reverse()
    return found, made
