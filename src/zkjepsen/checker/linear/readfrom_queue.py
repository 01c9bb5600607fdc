"""The read-from path for FIFO queues: enqueue and successful dequeue, every enqueued value
unique, an initially empty queue. Decided in O(n log n), valid or not.

With unique values each dequeue names the enqueue it took from, and a queue history of
enqueues and dequeues (no dequeue of an empty queue, no crashed dequeue or drain) is
linearizable iff it has none of four small violations (Henzinger, Sezgin & Vafeiadis,
"Aspect-oriented linearizability proofs", CONCUR 2013; Emmi & Enea, "Sound, complete, and
tractable linearizability monitoring for concurrent collections", POPL 2018, who extend this
to collections with empty results):

- a dequeue of a value never enqueued, or two dequeues of one value;
- a dequeue of v that returned before v's enqueue was called;
- enqueue(a) returned before enqueue(b) was called (so a is ahead of b in the queue), b was
  dequeued, and a was never dequeued or its dequeue was called after b's returned.

Crashed ops: a crashed enqueue of a value no dequeue returns drops out (FifoQueue.reduce
argues why); one whose value was dequeued took effect, so it counts as returned at +inf (it
precedes nothing in real time). Any other op (a dequeue that found the queue empty, a crashed
dequeue, a drain), a value enqueued twice or a non-empty initial queue: None, the search
decides.

A refutation is certified as the register path's are: the two to four ops of the violation
alone are not linearizable, which the search confirms on them, and its longest prefix and
stuck op are the counterexample. That the whole partition is then not linearizable either
rests on the values being unique (the ops include the enqueue of every value they dequeue,
and no other op enqueues it), so uniqueness is checked over the whole partition first. A
valid verdict rests on the theorem above (and on the brute-force tests that hold this path
to it).
"""

from __future__ import annotations

from typing import Any

from zkjepsen.checker.linear.models import dequeue_value, enqueue_value
from zkjepsen.checker.linear.wgl import Outcome, run

INF = float("inf")


def applies(ops: list[Any]) -> bool:
    """Whether the partition is a queue's (its first op enqueues or dequeues)."""
    fn = ops[0].action.fn if ops else None
    return fn is enqueue_value or fn is dequeue_value


def decide(ops: list[Any], init: Any) -> tuple[bool, Outcome] | None:
    """(verdict, outcome) for one queue partition's LinOps, or None (see the docstring)."""
    if init != ():
        return None
    enq: dict[Any, int] = {}
    deq: dict[Any, int] = {}
    twice = None  # a second dequeue of one value
    try:  # every value checked unique before anything is refuted: a core rests on it
        for i, (_, action, _, end) in enumerate(ops):
            fn, v = action[0], action[1]
            if fn is enqueue_value:
                if v in enq:
                    return None
                enq[v] = i
            elif fn is dequeue_value and end is not None:
                if v in deq:
                    twice = twice or [deq[v], i]
                deq[v] = i
            else:
                return None
    except TypeError:  # a value that does not hash
        return None
    if twice:
        v = ops[twice[0]].action[1]
        return _refute(ops, [*twice, *([enq[v]] if v in enq else [])])
    core = _violation(ops, enq, deq)
    if core is not None:
        return _refute(ops, core)
    return True, Outcome(True, ops, [], [], None, len(ops))


def _violation(ops: list[Any], enq: dict[Any, int], deq: dict[Any, int]) -> list[int] | None:
    """The ops of one violation (see the docstring), or None."""
    start = [op.start for op in ops]
    end = [INF if op.end is None else op.end for op in ops]
    for v, d in deq.items():
        e = enq.get(v)
        if e is None:
            return [d]
        if end[d] < start[e]:
            return [e, d]
    # a completed enqueue never dequeued, ahead of a value that was
    kept = [e for v, e in enq.items() if v not in deq and ops[e].end is not None]
    if kept:
        a = min(kept, key=end.__getitem__)
        for v, d in deq.items():
            if start[enq[v]] > end[a]:
                return [a, enq[v], d]
    # enqueue(a) before enqueue(b), dequeue(b) before dequeue(a): a sweep over b by enqueue
    # call, keeping the latest-called dequeue among the a whose enqueue returned before
    done = sorted(deq, key=lambda v: end[enq[v]])
    k, best = 0, None
    for b in sorted(deq, key=lambda v: start[enq[v]]):
        while k < len(done) and end[enq[done[k]]] < start[enq[b]]:
            if best is None or start[deq[done[k]]] > start[deq[best]]:
                best = done[k]
            k += 1
        if best is not None and start[deq[best]] > end[deq[b]]:
            return [enq[best], enq[b], deq[b], deq[best]]
    return None


def _refute(ops: list[Any], core: list[int]) -> tuple[bool, Outcome] | None:
    """The search's outcome on the violation's ops (None if they are linearizable after all:
    then the whole partition goes to the search)."""
    part = [ops[i] for i in sorted(set(core))]
    out = run(part, ())
    return None if out.valid else (False, out)
