"""Just-in-time linearization (Lowe, "Testing for linearizability", 2017): a sweep over one
partition's call and return events in time order, keeping every configuration (model state,
ops linearized ahead of their return) the history so far allows. The fast path in front of
the WGL search (wgl.py) for histories with little concurrency, where most checks are.

Why it is exact. An op may take effect at any point between its call and its return; so
deferring an op's linearization until its return is due loses nothing: at the return of op i,
the configurations are all those reachable from the current ones by linearizing some pending
ops (called, not yet linearized) and then i (i may already be linearized: then it is simply
done). Ops linearized after i can wait for their own return. Crashed ops never return: they
stay pending to the end, may be linearized in any later closure, or never. The history is
linearizable iff a configuration survives the last event. Two dominance cuts keep the sets
small, each sound for the same reason as the WGL search's read rule: when i is read-only and
legal in a configuration, placing it there dominates placing other pending ops first (they can
still follow it, leaving the same states); and when every other pending op is linearized
already, placing i is the only move.

The sweep decides; it does not explain. A refuted partition is searched again by WGL, whose
longest linearizable prefix and stuck op make the counterexample. A sweep that explores more
than its budget of configurations gives up (None) and WGL, which yields to the scheduler and
prunes with the model's lookahead, takes over: heavy concurrency is WGL's ground.
"""

from __future__ import annotations

import time
from typing import Any

from zkjepsen.checker.model_base import ILLEGAL

# Beyond these the partition goes to WGL: a sweep keeps EVERY configuration, which with many
# ops pending at once (or many crashed ops, pending forever) is WGL's worst case too, without
# its depth-first luck, its cache across the whole history or its lookahead.
MAX_PENDING = 8  # ops pending at once
STEPS_PER_OP = 8  # model steps per op returned so far, on average, plus a constant
STEPS = 512


PROBE = 1024  # ops a long partition's sweep is first tried on
INF = float("inf")


def decide(ops: list[Any], init: Any, deadline: float | None = None) -> tuple[bool | None, int]:
    """`sweep`, after a probe on a long partition: the sweep's set-up (a sort of every event)
    is wasted on a partition it gives up on, so one it gives up on within its first PROBE ops
    (in call order) goes to WGL at once. The probe's other answers mean nothing (those ops
    are not a history on their own: a read may need a write called later) and the whole
    partition is swept."""
    # A partition whose ops ran one after another (each called after the previous returned,
    # none crashed) has one order only: replay it. (One client's partition, for one.)
    s, prev, legal = init, -INF, True
    for op in ops:
        end = op.end
        if end is None or op.start <= prev:
            break
        if legal:  # once an op is illegal, only whether the rest ran in sequence matters
            action = op.action
            s = action.fn(s, action.arg)
            legal = s is not ILLEGAL
        prev = end
    else:
        return legal, len(ops)
    if len(ops) > 2 * PROBE and sweep(ops[:PROBE], init)[0] is None:
        return None, 0
    return sweep(ops, init, deadline)


def sweep(ops: list[Any], init: Any, deadline: float | None = None) -> tuple[bool | None, int]:
    """(True: linearizable | False: not | None: handed over to WGL, configurations made).
    `ops` are the search's LinOps of one partition (wgl.LinOp). Past `deadline` (a
    time.monotonic() value, read every 4096 returns) it gives up too: WGL, which checks the
    clock after every slice, then answers "unknown"."""
    # The budget grows with each return, so a partition the sweep cannot afford is handed
    # over as soon as its pace shows, not after the sweep has spent a whole budget on it.
    budget = STEPS
    events = [(op.start, 0, i) for i, op in enumerate(ops)]
    events += [(op.end, 1, i) for i, op in enumerate(ops) if op.end is not None]
    events.sort()  # at equal times a call comes first: the two ops overlap, as in WGL
    actions = [op.action for op in ops]
    fns = [a.fn for a in actions]
    args = [a.arg for a in actions]
    ro = [a.read_only for a in actions]
    # A pending op is named by a bit of a small int, reused once the op returns, so a
    # configuration's set costs O(concurrency), whatever the history's length.
    bit = [0] * len(ops)
    free: list[int] = []
    top = 1
    pending: list[int] = []
    configs: list[tuple[Any, int]] = [(init, 0)]
    made = 1
    returns = 0
    for _, is_return, i in events:
        if not is_return:
            if free:
                bit[i] = free.pop()
            else:
                bit[i] = top
                top <<= 1
            pending.append(i)
            if len(pending) > MAX_PENDING:
                return None, made
            continue
        budget += STEPS_PER_OP
        returns += 1
        if not returns & 4095 and deadline is not None and time.monotonic() > deadline:
            return None, made
        b = bit[i]
        pending.remove(i)
        free.append(b)
        fi, ai = fns[i], args[i]
        if len(configs) == 1:
            s, lin = configs[0]
            if lin & b:
                configs[0] = (s, lin ^ b)
                continue
            if ro[i] or not pending or all(lin & bit[j] for j in pending):
                ns = fi(s, ai)
                made += 1
                if ns is not ILLEGAL:
                    configs[0] = (ns, lin)
                    continue
        out: dict[tuple[Any, int], None] = {}
        seen = set(configs)
        stack = list(configs)
        while stack:
            s, lin = stack.pop()
            if lin & b:
                out[(s, lin ^ b)] = None
                continue
            ns = fi(s, ai)
            made += 1
            if ns is not ILLEGAL:
                out[(ns, lin)] = None
                if ro[i]:
                    continue
            for j in pending:
                bj = bit[j]
                if lin & bj:
                    continue
                nj = fns[j](s, args[j])
                made += 1
                if nj is ILLEGAL:
                    continue
                key = (nj, lin | bj)
                if key not in seen:
                    seen.add(key)
                    stack.append(key)
            if made > budget:
                return None, made
        if not out:
            return False, made
        configs = list(out)
    return True, made
