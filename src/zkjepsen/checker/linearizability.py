"""Linearizability: Wing & Gong's search with Lowe's memoization (WGL), in pure Python.

The history's calls become a doubly linked list of call and return entries in time order. The
search walks it from the head: a call entry is a candidate to linearize next (its op is applied
to the model; on success the op is lifted out of the list and the walk restarts at the head); the
first return entry met means the op returning there must be linearized before anything later, so
the walk backtracks. Each explored configuration (linearized set as an int bitset, model state)
is cached: meeting it again cannot succeed where it failed before.

Prunings (each sound, argued here because a wrong pruning silently hides a bug):
- Crashed ops (`info`, or never completed) have no return entry: they are candidates from their
  call on and are never forced; the search succeeds when every *completed* op is linearized.
  A crashed read-only op constrains nothing and is dropped.
- A read-only action (legal only in states it leaves unchanged) that is legal now is placed
  greedily with no backtrack point: any linearization that places it later (legal there, hence
  state-preserving) can move it to now, since every op that must precede it in real time already
  precedes the current point (it is a candidate) and moving it does not change any later state.
  So if the configuration after it fails, the current one fails too, and the search backtracks.
- Identical crashed ops (same transition, same argument) are interchangeable; the later-invoked
  one may be linearized only after the earlier one, which removes symmetric orders.
- A model may drop crashed ops whose effect nothing could observe (`Model.reduce`; the queue
  and set models do, each arguing why).

Partitions (per key, when the model partitions) are independent (P-compositionality); their
searches are generators stepped round-robin, so one hard partition cannot hide a quick refutation
in another. A time limit and a memory limit (process RSS) stop the search with `unknown`.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from zkjepsen.checker import Result, Violation
from zkjepsen.checker.models import ILLEGAL, Action, Model, freeze
from zkjepsen.errors import BadInput
from zkjepsen.history import Call, History, fault_windows, faults_during

SLICE = 2048  # search steps between yields to the scheduler
PREFIX_SHOWN = 200  # ops of the longest linearizable prefix kept in a result's details


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
    states: list[Any]  # model state after each op of `best`
    stuck: int | None  # index of the op that cannot be placed after `best`
    configs: int


def prepare(history: History, model: Model, reduce: bool = True) -> dict[Any, list[LinOp]]:
    """Pair calls, turn them into model actions, and group them by partition key; with
    `reduce`, let the model drop crashed ops nothing could observe."""
    parts: dict[Any, list[LinOp]] = {}
    for call in history.calls(validate=False):
        inv, comp = call.invoke, call.complete
        status = call.status
        if status == "info":
            value = inv.value
        else:
            value = comp.value if comp.value is not None else inv.value
        try:
            action = model.action(inv.f, inv.key, value, status, inv.actor)
            if action is None:
                continue
            hash(action.arg)  # the search memoizes states built from it
            part = freeze(model.partition_key(inv.f, inv.key))
            hash(part)
        except BadInput:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            raise BadInput(
                f"op {inv.f!r} at index {inv.index} (value {value!r}) does not fit "
                f"model {model.name!r}: {e}"
            ) from None
        end = comp.time if status in ("ok", "fail") else None
        if end is None and action.read_only:
            continue  # a crashed read-only op constrains nothing
        parts.setdefault(part, []).append(LinOp(call, action, inv.time, end))
    return {k: model.reduce(ops) for k, ops in parts.items()} if reduce else parts


def search(ops: list[LinOp], init: Any) -> Generator[None, None, Outcome]:
    """WGL over one partition; yields every SLICE steps so a scheduler can interleave it.

    Completed ops live in the main list (call and return entries in time order); crashed ops,
    which have no return, live in a second list in call order. At a configuration the walk
    tries the main list's calls up to its first return entry R, then the crashed ops invoked
    no later than R: optional ops are tried last, so the search does not guess at effects
    that nothing needs yet.
    """
    n = len(ops)
    events = [(op.start, 0, i) for i, op in enumerate(ops) if op.end is not None]
    events += [(op.end, 1, i) for i, op in enumerate(ops) if op.end is not None]
    events.sort()
    crashed_order = sorted((op.start, i) for i, op in enumerate(ops) if op.end is None)
    m, k = len(events), len(crashed_order)
    # entries: 0 main head, 1..m main, m+1 main tail, m+2 crashed head, m+3..m+2+k crashed,
    # m+3+k crashed tail
    head, tail, chead, ctail = 0, m + 1, m + 2, m + 3 + k
    size = ctail + 1
    nxt = list(range(1, size + 1))
    prv = list(range(-1, size - 1))
    nxt[tail], prv[chead], nxt[ctail] = tail, chead, ctail
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
    CTAIL = -2 - n
    e_op[ctail] = CTAIL
    e_time[ctail] = float("inf")
    fns = [op.action.fn for op in ops]
    args = [op.action.arg for op in ops]
    ro = [op.action.read_only for op in ops]
    # The linearized set is keyed compactly, so a cache key costs O(concurrency), not O(n):
    # completed ops are ranked in call order, and `low` is the lowest rank not yet linearized;
    # `rel` holds the linearized ranks at or above `low` as bits relative to `low` (bit 0 is
    # always clear). Everything below `low` is linearized, so (low, rel) names the set exactly.
    # Crashed ops have their own bit set `cb` (they may stay unlinearized forever, so ranking
    # them with the rest would pin `low`). The key also holds the model state itself: like
    # Porcupine's state-hash keys, the set's hash and the state's hash together pick the
    # bucket and equality settles it, so distinct states never share a key by accident.
    rank = [0] * n
    r = 0
    for _, kind, i in events:
        if kind == 0:
            rank[i] = r
            r += 1
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
            j = last_same.get(ident)
        except TypeError:  # unhashable argument: no symmetry pruning
            continue
        if j is not None:
            need[i] = cbit[j]
        last_same[ident] = i

    remaining = n - k
    state = init
    low = rel = cb = 0
    limit: float = 0  # time of the main list's first return entry, while in the crashed list
    stack: list[tuple[int, Any, bool, float, int, int, int]] = []
    cache: set[tuple[int, int, int, Any]] = set()
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
            yield
        i = e_op[e]
        if i < 0:
            if i != CTAIL:
                limit = e_time[e]  # first return entry: now the crashed ops invoked by then
                e = nxt[chead]
                if e_time[e] <= limit:
                    continue
            # else every candidate was tried: backtrack
        elif e > chead and e_time[e] > limit:
            pass  # crashed op invoked after the return that must come first: backtrack
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
                stack.append((i, state, ro[i], limit, low, rel, cb))
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
                e = nxt[head]
                continue
            if not ro[i]:
                e = nxt[e]
                continue
            # a legal read-only op leads to an explored configuration: this one is dead
        # backtrack: undo forced (read-only) placements, then the last real choice
        while True:
            if not stack:
                return _outcome(False, ops, init, best, len(cache))
            i, state, forced, limit, low, rel, cb = stack.pop()
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


def _outcome(valid: bool, ops: list[LinOp], init: Any, best: list[int], configs: int) -> Outcome:
    """Replay the best prefix for its states, and name the op that cannot follow it: the
    unplaced completed op that returns first (it had to be placed before anything later)."""
    states, s = [], init
    for i in best:
        s = ops[i].action.fn(s, ops[i].action.arg)
        states.append(s)
    stuck = None
    if not valid:
        placed = set(best)
        rest = [i for i in range(len(ops)) if i not in placed and ops[i].end is not None]
        stuck = min(rest, key=lambda i: ops[i].end, default=None)  # type: ignore[arg-type,return-value]
    return Outcome(valid, ops, best, states, stuck, configs)


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: preparing and searching allocate millions of small
    tuples and no cycles, and each full collection walks every live object, which made long
    histories quadratic. Reference counting still frees everything."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as fh:
            import os

            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def check_partitions(
    parts: dict[Any, list[LinOp]],
    model: Model,
    time_limit: float | None = None,
    memory_limit: int | None = None,
) -> tuple[Any, dict[Any, Outcome], str]:
    """Race the partitions' searches round-robin. Returns (verdict, outcomes, reason): the first
    refuted partition ends everything; a budget running out gives "unknown"."""
    # The clock is read after every slice of every partition (a slice is a few ms), so the
    # limit is honoured to within one slice, not one round over all partitions.
    t0 = time.monotonic()
    deadline = None if time_limit is None else t0 + time_limit
    rss0 = _rss_bytes() if memory_limit else 0
    next_rss = t0 + 0.25
    running = {k: search(ops, model.init()) for k, ops in parts.items()}
    done: dict[Any, Outcome] = {}
    while running:
        for k in list(running):
            try:
                next(running[k])
            except StopIteration as stop:
                out: Outcome = stop.value
                del running[k]
                done[k] = out
                if not out.valid:
                    for g in running.values():
                        g.close()
                    return False, done, f"partition {k!r} is not linearizable"
                continue
            now = time.monotonic()
            if deadline is not None and now > deadline:
                return (
                    "unknown",
                    done,
                    f"time limit of {time_limit:g} s reached with "
                    f"{len(running)} partition(s) undecided",
                )
            if memory_limit and now > next_rss:
                next_rss = now + 0.25
                if _rss_bytes() - rss0 > memory_limit:
                    return (
                        "unknown",
                        done,
                        f"memory limit of {memory_limit >> 20} MiB reached with "
                        f"{len(running)} partition(s) undecided",
                    )
    return True, done, "every partition is linearizable"


def _op_json(op: LinOp, state: Any = ILLEGAL) -> dict[str, Any]:
    inv, comp = op.call
    d: dict[str, Any] = {
        "process": inv.process,
        "actor": inv.actor,
        "f": inv.f,
        "op": op.action.text,
        "status": op.call.status,
        "invoke_index": inv.index,
        "start": op.start,
        "end": op.end,
    }
    if comp is not None:
        d["complete_index"] = comp.index
    if inv.key is not None:
        d["key"] = inv.key
    if state is not ILLEGAL:
        d["state_after"] = repr(state)
    return d


def _nothing_to_test(history: History, model: Model) -> str | None:
    """Why a history with no op left to search tested nothing, or None when it did: ops the
    model reads that all dropped out (failed, or crashed reads) constrain nothing, and that
    history is linearizable; but every model accepts an empty history, or one of other ops."""
    calls = history.calls(validate=False)
    if not calls:
        return "the history has no client ops: nothing was tested"
    for inv, comp in calls:
        value = comp.value if comp is not None and comp.value is not None else inv.value
        try:
            if model.action(inv.f, inv.key, value, "ok", inv.actor) is not None:
                return None
        except Exception:  # noqa: BLE001, S112 - a value the model cannot read: not its op
            continue
    fs = sorted({str(inv.f) for inv, _ in calls})
    return (f"none of the history's ops ({', '.join(fs[:8])}) is one model {model.name!r} "
            "reads: nothing was tested")


class Linearizable:
    """Checker: is the history linearizable with respect to `model`?

    Details: model, reason, partitions, ops, configurations; when invalid also the refuted
    `partition`, `longest_prefix_length`, the last PREFIX_SHOWN ops of `longest_prefix` (each
    with the state after it), `cannot_place` (the op that cannot follow that prefix) and the
    `faults` active while it was in flight; when unknown, the `undecided` partitions. A
    refutation is one `not-linearizable` violation, and the Result's `outcome` keeps the refuted
    partition's full search outcome for report.counterexample. A history with no op the model
    reads is `unknown` (every model accepts an empty history: nothing was tested).
    """

    def __init__(
        self, model: Model, time_limit: float | None = 60.0, memory_limit: int | None = 2 << 30
    ) -> None:
        self.model = model
        self.time_limit = time_limit
        self.memory_limit = memory_limit

    def check(self, history: History) -> Result:
        self.last_outcome = None
        try:
            with no_gc():
                parts = prepare(history, self.model)
                if not len(history):
                    # An empty history: "valid" would say nothing while sounding like a pass.
                    # A history whose calls all failed, or with nemesis ops only, is another
                    # matter: trivially linearizable, as Knossos' own test data says.
                    return Result(
                        "unknown",
                        {
                            "model": self.model.name,
                            "partitions": 0,
                            "ops": 0,
                            "reason": "nothing to check: the history is empty",
                        },
                    )
                verdict, done, reason = check_partitions(
                    parts, self.model, self.time_limit, self.memory_limit
                )
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            # the model's transitions met values they cannot compare or combine
            raise BadInput(
                f"model {self.model.name!r} cannot apply this history's values: "
                f"{type(e).__name__}: {e}"
            ) from None
        details: dict[str, Any] = {
            "model": self.model.name,
            "reason": reason,
            "partitions": len(parts),
            "ops": sum(len(v) for v in parts.values()),
            "configurations": sum(o.configs for o in done.values()),
        }
        violations, outcome = [], None
        if verdict is False:
            key, out = next((k, o) for k, o in done.items() if not o.valid)
            outcome = out
            details["partition"] = key
            # The tail of the prefix is what explains the failure; the HTML report has it all.
            details["longest_prefix_length"] = len(out.best)
            details["longest_prefix"] = [
                _op_json(out.ops[i], s)
                for i, s in list(zip(out.best, out.states, strict=True))[-PREFIX_SHOWN:]
            ]
            if out.stuck is not None:
                stuck = out.ops[out.stuck]
                details["cannot_place"] = _op_json(stuck)
                details["faults"] = faults_during(fault_windows(history), stuck.start, stuck.end)
            where = details.get("cannot_place")
            violations.append(Violation(
                "not-linearizable", (where["actor"],) if where else (),
                where["start"] if where else None, where["end"] if where else None,
                tuple(details.get("faults", ())),
                {"partition": key, "cannot_place": where,
                 "longest_prefix_length": len(out.best)}))
        elif verdict == "unknown":
            details["undecided"] = [k for k in parts if k not in done]
        return Result(verdict, details, violations, outcome=outcome)
