"""The WGL search over one partition (see linearizability.py for the algorithm, its prunings
and why each is sound): ops in, an Outcome out, yielding every SLICE steps so a scheduler can
race several partitions."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, NamedTuple

from zkjepsen.checker.linear.model_base import cas_value, read_value, write_value
from zkjepsen.checker.linear.models import ILLEGAL, Action
from zkjepsen.history import Call

SLICE = 2048  # search steps between yields to the scheduler
# The compiled search (_fastwgl.h) gets this many walk steps per op (plus a constant) to prove
# a partition linearizable before the Python search takes over: a valid 5-client history with
# values 0..4 and 10 % crashed ops needs ~5 per op. Tried first, before the sweep, on a long
# partition (FIRST_OPS ops or more), with FIRST_STEPS_PER_OP: on 5-client CAS histories it
# proves in 4-7 ms what the sweep's closures took 35-40 ms for (10 k ops), and an invalid
# partition loses at most that budget (~1 us per op) before the sweep refutes it.
FAST_STEPS = 4096
FAST_STEPS_PER_OP = 64
FIRST_OPS = 2048
FIRST_STEPS_PER_OP = 8
# engine._patient's budget: the compiled search once more on a partition with crashed ops that
# the sweep and the structural paths left undecided, before the Python search
PATIENT_STEPS_PER_OP = 1024
LOOKAHEAD = 16  # return entries a model's lookahead looks at (see `hopeless` in search)
INF = float("inf")


try:  # the compiled search (in _fastsweep.c), when the package was built with a C compiler
    from zkjepsen.checker.linear._fastsweep import search_valid as _search_valid
except ImportError:  # pragma: no cover - the Python search below decides alone, slower
    _search_valid = None  # type: ignore[assignment]


class LinOp(NamedTuple):
    """One op as the search sees it: its call, its action, and its real-time interval."""

    call: Call
    action: Action
    start: int
    end: int | None  # None: crashed (may take effect any time after start, or never)


class Outcome(NamedTuple):
    valid: bool
    ops: list[LinOp]
    best: list[int]  # longest linearizable prefix found (indices into ops, in order)
    states: list[Any]  # model state after each op of `best` (empty when valid)
    stuck: int | None  # index of the op that cannot be placed after `best`
    configs: int


def search(
    ops: list[LinOp], init: Any, lookahead: Any = None
) -> Generator[list[int], None, Outcome]:
    """WGL over one partition; yields every SLICE steps so a scheduler can interleave it (the
    longest prefix so far, one list updated in place: what an unknown verdict explains).

    Completed ops live in the main list (call and return entries in time order); crashed ops,
    which have no return, live in a second list in call order. At a configuration the walk
    tries the main list's calls up to its first return entry R, then the crashed ops invoked
    no later than R: optional ops are tried last, so the search does not guess at effects
    that nothing needs yet. Pinned ops (pinned.py: crashed, but what was read says they took
    effect before some return) have their call entries in a third list, tried after the
    crashed ones; and first, before any other candidate, when R is the pinned op's own
    return: placed early, where nothing needs it, a pinned write is a dead end found only
    at the read it was for, after everything between has been tried.
    """
    n = len(ops)
    late = pinned_ops(ops)
    events, crashed_order, nxt, prv, e_op, e_time, call_e, ret_e = _entry_lists(ops, late)
    k = len(crashed_order)
    head, chead = 0, len(events) + 2  # see _entry_lists for the layout
    dhead = chead + k + 2
    CTAIL, DTAIL = -2 - n, -3 - n
    pinned = [False] * n
    for i in late:
        pinned[i] = True
    fns = [op.action.fn for op in ops]
    args = [op.action.arg for op in ops]
    ro = [op.action.read_only for op in ops]
    rank, cbit, crashed, need = _set_keys(ops, events, crashed_order, fns, args)
    hopeless = _lookahead_test(lookahead, n, nxt, e_op, e_time, ro, fns, args, chead, dhead - 1)
    remaining = n - k
    state = init
    low = rel = cb = 0
    limit: float = 0  # time of the main list's first return entry, while in the crashed list
    rp = False  # whether that entry is a pinned op's return
    stack: list[tuple[int, Any, bool, float, bool, int, int, int]] = []
    cache: set[tuple[int, int, int, Any]] = set()
    if late:
        hopeless = _pinned_test(ops, pinned, stack, nxt, prv, call_e, hopeless)
    # The longest prefix is kept exact without copying the stack at each new depth: `best`
    # agrees with the stack on its first `agree` entries, and only the part after that is
    # copied when the stack grows past the best depth (each entry is copied at most once
    # per push, so the bookkeeping is linear in the search's steps).
    best: list[int] = []
    agree = 0
    depth = 0
    budget = SLICE
    e = nxt[head]
    while remaining:
        budget -= 1
        if not budget:
            budget = SLICE
            yield best
        i = e_op[e]
        if i < 0:
            # The end of a list: after the main one, the crashed then the pinned ops invoked
            # no later than its first return entry R; the pinned ones first when R is a
            # pinned op's return. After the second of them, every candidate was tried.
            if i == CTAIL:
                if not rp:
                    e = nxt[dhead]
                    continue
            elif i == DTAIL:
                if rp:
                    e = nxt[chead]
                    continue
            else:
                limit = e_time[e]
                j = -1 - i
                rp = j < n and pinned[j]
                e = nxt[dhead] if rp else nxt[chead]
                continue
            # backtrack
        elif e > chead and e_time[e] > limit:
            if (e < dhead) != rp:  # invoked after R: the rest of its list too; the other list
                e = nxt[dhead] if e < dhead else nxt[chead]
                continue
            # backtrack
        else:
            ni = need[i]
            if ni and not cb & ni:
                e = nxt[e]
                continue
            ns = fns[i](state, args[i])
            if ns is ILLEGAL:
                e = nxt[e]
                continue
            if crashed[i]:
                nlow, nrel, ncb = low, rel, cb | cbit[i]
            else:
                ncb = cb
                d = rank[i] - low
                if d:
                    nlow, nrel = low, rel | (1 << d)
                else:  # the lowest gap closes: slide past the run of linearized ranks above
                    x = rel | 1
                    t = (~x & (x + 1)).bit_length() - 1
                    nlow, nrel = low + t, x >> t
            key = (nlow, nrel, ncb, ns)
            if key not in cache:
                cache.add(key)
                stack.append((i, state, ro[i], limit, rp, low, rel, cb))
                state, low, rel, cb = ns, nlow, nrel, ncb
                c = call_e[i]  # lift the op out of its list
                nxt[prv[c]] = nxt[c]
                prv[nxt[c]] = prv[c]
                r = ret_e[i]
                if r:
                    nxt[prv[r]] = nxt[r]
                    prv[nxt[r]] = prv[r]
                    remaining -= 1
                depth += 1
                if depth > len(best):
                    if agree < depth - 1:
                        best[agree:] = [fr[0] for fr in stack[agree:]]
                    else:
                        best.append(i)
                    agree = depth
                elif agree == depth - 1 and best[agree] == i:
                    agree = depth  # re-walking the best prefix: still in agreement
                if hopeless is None or ro[i] or not hopeless(state):
                    e = nxt[head]
                    continue
                # the read that must come next can never be legal: this one is dead
            elif not ro[i]:
                e = nxt[e]
                continue
            # else a legal read-only op leads to an explored configuration: this one is dead
        # backtrack: undo forced (read-only) placements, then the last real choice
        while True:
            if not stack:
                return _outcome(False, ops, init, best, len(cache))
            i, state, forced, limit, rp, low, rel, cb = stack.pop()
            depth -= 1
            if agree > depth:
                agree = depth
            c = call_e[i]
            r = ret_e[i]
            if r:
                nxt[prv[r]] = r
                prv[nxt[r]] = r
                remaining += 1
            nxt[prv[c]] = c
            prv[nxt[c]] = c
            if not forced:
                break
        e = nxt[c]
    return _outcome(True, ops, init, [fr[0] for fr in stack], len(cache))


class PinnedCall(Call):
    """The call of a pinned op (pinned.py): a crashed op given an end by what was read. It is
    still the crashed call (its completion None or `info`); the class says it was pinned."""

    __slots__ = ()


def is_pinned(op: LinOp) -> bool:
    """A crashed op pinned.py made completed: its call entry goes to a list of its own, tried
    after the crashed ops (`search`)."""
    return op.call.__class__ is PinnedCall and op.end is not None


def pinned_ops(ops: list[LinOp]) -> list[int]:
    """The indices of the pinned ops (`is_pinned`), in one pass that calls nothing per op."""
    return [i for i, op in enumerate(ops) if op[0].__class__ is PinnedCall and op[3] is not None]


def _entry_lists(ops: list[LinOp], late: list[int]) -> tuple[Any, ...]:
    """The walk's two doubly linked lists of entries, in arrays indexed by entry: 0 main head,
    1..m main (call and return entries in time order), m+1 main tail, m+2 crashed head,
    m+3..m+2+k crashed (calls in call order), m+3+k crashed tail, then the pinned ops' calls
    (head, calls in call order, tail). Returns the sorted events,
    the crashed ops in call order, next and previous links, each entry's op (-1-op for a
    return entry, -1-n for the main tail, -2-n for the crashed tail) and time, and each op's
    call and return entry (0 for a crashed op's return: nothing to lift).

    A pinned op (`_deferred`: crashed, but what was read says it took effect before some
    return) has its return entry in the main list and its call entry in the crashed list:
    the same candidates at every configuration (its call counts up to the first return
    entry, as any other), tried after the completed ops' calls. So the search does not place
    it early, where nothing needs it yet, and then backtrack over everything between."""
    n = len(ops)
    if late:
        skip = set(late)
        events = [
            (op.start, 0, i) for i, op in enumerate(ops) if op.end is not None and i not in skip
        ]
    else:
        events = [(op.start, 0, i) for i, op in enumerate(ops) if op.end is not None]
    events += [(op.end, 1, i) for i, op in enumerate(ops) if op.end is not None]
    events.sort()
    crashed_order = sorted((op.start, i) for i, op in enumerate(ops) if op.end is None)
    third = sorted((ops[i].start, i) for i in late)
    m, k = len(events), len(crashed_order)
    tail, chead, ctail = m + 1, m + 2, m + 3 + k  # the main head is entry 0
    dhead, dtail = ctail + 1, ctail + 2 + len(third)
    size = dtail + 1
    nxt = list(range(1, size + 1))
    prv = list(range(-1, size - 1))
    nxt[tail], prv[chead], nxt[ctail], prv[dhead], nxt[dtail] = tail, chead, ctail, dhead, dtail
    e_op = [0] * size  # op index for call entries; -1-op for return entries
    e_time: list[float] = [0] * size
    call_e = [0] * n
    ret_e = [0] * n  # 0 for crashed ops: nothing to lift
    for e, (t, kind, i) in enumerate(events, 1):
        e_time[e] = t
        if kind == 0:
            e_op[e] = i
            call_e[i] = e
        else:
            e_op[e] = -1 - i
            ret_e[i] = e
    e_op[tail] = -1 - n
    e_time[tail] = float("inf")
    for e, (t, i) in enumerate(crashed_order, m + 3):
        e_op[e] = i
        e_time[e] = t
        call_e[i] = e
    e_op[ctail] = -2 - n
    e_time[ctail] = float("inf")
    e_time[dhead] = -float("inf")
    for e, (t, i) in enumerate(third, dhead + 1):
        e_op[e] = i
        e_time[e] = t
        call_e[i] = e
    e_op[dtail] = -3 - n
    e_time[dtail] = float("inf")
    return events, crashed_order, nxt, prv, e_op, e_time, call_e, ret_e


def _set_keys(
    ops: list[LinOp], events: list[Any], crashed_order: list[Any], fns: list[Any], args: list[Any]
) -> tuple[list[int], list[int], list[bool], list[int]]:
    """What the linearized set's cache key is made of: each completed op's rank, each crashed
    op's bit, which ops crashed, and each crashed op's `need`.

    The linearized set is keyed compactly, so a cache key costs O(concurrency), not O(n):
    completed ops are ranked in call order, and `low` is the lowest rank not yet linearized;
    `rel` holds the linearized ranks at or above `low` as bits relative to `low` (bit 0 is
    always clear). Everything below `low` is linearized, so (low, rel) names the set exactly.
    Crashed ops have their own bit set `cb` (they may stay unlinearized forever, so ranking
    them with the rest would pin `low`). The key also holds the model state itself: like
    Porcupine's state-hash keys, the set's hash and the state's hash together pick the
    bucket and equality settles it, so distinct states never share a key by accident."""
    n = len(ops)
    rank = [0] * n
    calls = [i for _, kind, i in events if kind == 0]
    if len(calls) + len(crashed_order) < n:  # pinned ops' calls are not among the events
        calls = [
            i for _, i in sorted((op.start, i) for i, op in enumerate(ops) if op.end is not None)
        ]
    for r, i in enumerate(calls):
        rank[i] = r
    cbit = [0] * n
    for j, (_, i) in enumerate(crashed_order):
        cbit[i] = 1 << j
    crashed = [op.end is None for op in ops]
    # need[i]: bit of the previous identical crashed op, which must be linearized first
    need = [0] * n
    last_same: dict[Any, int] = {}
    for _, i in crashed_order:
        ident = (fns[i], args[i])
        try:
            same = last_same.get(ident)
        except TypeError:  # unhashable argument: no symmetry pruning
            continue
        if same is not None:
            need[i] = cbit[same]
        last_same[ident] = i
    return rank, cbit, crashed, need


def _pinned_test(
    ops: list[LinOp],
    pinned: list[bool],
    stack: list[Any],
    nxt: list[int],
    prv: list[int],
    call_e: list[int],
    then: Callable[[Any], bool] | None,
) -> Callable[[Any], bool]:
    """The search's dead-configuration test with pinned writes (pinned.py): a pinned op is the
    only writer of its value v, so every completed op that reads v comes after it and before
    the next write. A configuration where the op just placed (the top of `stack`) left state
    v while a reader of v other than it is still unplaced is dead, whatever the path to it:
    v is never written again. (Without this, a pinned write placed where nothing needed it,
    and then overwritten, was a dead end found only at its read, thousands of ops later.)
    `then`: the model's own lookahead test, or None."""
    readers: dict[Any, list[int]] = {}
    for op in ops:
        if op.call.__class__ is PinnedCall and op.end is not None:
            fn, arg = op.action.fn, op.action.arg
            readers[arg if fn is write_value else arg[1]] = []
    for i, op in enumerate(ops):
        fn, arg = op.action.fn, op.action.arg
        if op.end is None or pinned[i]:
            continue
        if fn is read_value and arg in readers:
            readers[arg].append(i)
        elif fn is cas_value and arg[0] in readers:
            readers[arg[0]].append(i)

    def hopeless(state: Any) -> bool:
        i, prev = stack[-1][0], stack[-1][1]
        if prev != state:
            rs = readers.get(prev)
            if rs:
                for r in rs:
                    c = call_e[r]
                    if r != i and nxt[prv[c]] == c:  # (still in its list: not placed)
                        return True
        return then is not None and then(state)

    return hopeless


def _lookahead_test(
    lookahead: Any,
    n: int,
    nxt: list[int],
    e_op: list[int],
    e_time: list[float],
    ro: list[bool],
    fns: list[Any],
    args: list[Any],
    chead: int,
    ctail: int,
) -> Callable[[Any], bool] | None:
    """The model's lookahead (extending ops, the read, whether a read's value is reachable
    from a state) as a test of a state on the walk's current lists, or None without one."""
    if lookahead is None:
        return None
    extending, read_fn, reachable = lookahead
    head = 0

    def hopeless(state: Any) -> bool:
        """Whether some read can never be legal: a read G (its return entry among the
        next LOOKAHEAD ones) such that every op that may still precede it (invoked before
        G returned) only extends the state or reads it, while G's value is no extension
        of the current state. The scan stops at the first other op (a put) that may
        precede: from there on anything is reachable."""
        stop = INF  # invoke time of the first crashed or pinned op neither read nor extension
        for y, end in ((nxt[chead], ctail), (nxt[ctail + 1], len(nxt) - 1)):
            while y != end:
                j = e_op[y]
                if not (ro[j] or fns[j] in extending):
                    stop = min(stop, e_time[y])
                    break
                y = nxt[y]
        x = nxt[head]
        returns = 0
        while True:
            j = e_op[x]
            if j >= 0:
                if not (ro[j] or fns[j] in extending):
                    return False
            else:
                j = -1 - j
                if j >= n or e_time[x] >= stop:
                    return False
                if fns[j] is read_fn and not reachable(state, args[j]):
                    return True
                returns += 1
                if returns == LOOKAHEAD:
                    return False
            x = nxt[x]

    return hopeless


def proven_valid(
    ops: list[LinOp],
    init: Any,
    deadline: float | None = None,
    per_op: int = FAST_STEPS_PER_OP,
    dominate: bool = False,
    max_bytes: int | None = None,
) -> Outcome | None:
    """A valid outcome when the compiled search (_fastwgl.h) finds a linearization of `ops`
    within its step budget, else None: not built, none found (the partition may still be
    valid: its cache may have pruned the way), or the budget or deadline ran out. It never
    refutes: `search` does, with the longest prefix a counterexample needs. The compiled walk
    is this module's without the model's lookahead (it only cuts the search), with the pinned
    ops' list and `_pinned_test`, so any model's transitions are applied; a linearization is
    only reported once every completed op was placed by a legal model step, in real-time
    order. `dominate`: with the domination among crashed ops (_fastwgl.h; engine._patient).
    `max_bytes`: the most its tables may hold (the check's memory limit: it runs between the
    engine's RSS polls), past which it gives up (None)."""
    if _search_valid is None:
        return None
    budget = FAST_STEPS + per_op * len(ops)
    out = _search_valid(ops, init, budget, deadline, dominate, PinnedCall, max_bytes)
    if out is NotImplemented or out[0] is not True:
        return None
    return Outcome(True, ops, [], [], None, out[1])


def run(ops: list[LinOp], init: Any, lookahead: Any = None) -> Outcome:
    """`search` to its end, without a scheduler (for a few ops: a core, a small partition)."""
    gen = search(ops, init, lookahead)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


def in_sequence(ops: list[LinOp], init: Any) -> Outcome | None:
    """The outcome `search` gives for ops that ran one after another (each called after the
    previous returned, none crashed), without searching: there is one order, the longest
    prefix is the ops before the first illegal one and that op is stuck. None when the ops
    overlap."""
    prev = -INF
    for op in ops:
        if op.end is None or op.start <= prev:
            return None
        prev = op.end
    # One replay gives _outcome's states too (issue 54: replaying twice, then looking for the
    # stuck op, was a fifth of a short refutation). The ends increase with the index, so the
    # completed op that returns first after the prefix 0..i-1 is op i.
    s = init
    states: list[Any] = []
    for i, (_, action, _, _) in enumerate(ops):
        s = action.fn(s, action.arg)
        if s is ILLEGAL:
            return Outcome(False, ops, list(range(i)), states, i, i)
        states.append(s)
    return Outcome(True, ops, list(range(len(ops))), [], None, len(ops))


def _outcome(valid: bool, ops: list[LinOp], init: Any, best: list[int], configs: int) -> Outcome:
    """For a refutation, replay the best prefix for its states, and name the op that cannot
    follow it: the unplaced completed op that returns first (it had to be placed before
    anything later). A valid outcome's states are left empty: only a counterexample shows
    them, and replaying a long history's order is a fixed cost every valid check paid."""
    states: list[Any] = []
    stuck = None
    if not valid:
        s = init
        for i in best:
            s = ops[i].action.fn(s, ops[i].action.arg)
            states.append(s)
        placed = set(best)
        rest = [i for i in range(len(ops)) if i not in placed and ops[i].end is not None]
        stuck = min(rest, key=lambda i: ops[i].end, default=None)  # type: ignore[arg-type,return-value]
    return Outcome(valid, ops, best, states, stuck, configs)
