"""Linearizability: Wing & Gong's search with Lowe's memoization (WGL), in pure Python, behind
a just-in-time sweep (sweep.py) that decides most partitions first at a fraction of the cost,
and, where the sweep does not decide, the read-from path (readfrom.py): with unique written
values it decides registers and queues in polynomial time, crashed ops and all. Each result
says which path decided each partition (`decided_by`).

The history's calls become a doubly linked list of call and return entries in time order. The
search walks it from the head: a call entry is a candidate to linearize next (its op is applied
to the model; on success the op is lifted out of the list and the walk restarts at the head); the
first return entry met means the op returning there must be linearized before anything later, so
the walk backtracks. Each explored configuration (linearized set, model state) is cached:
meeting it again cannot succeed where it failed before. The set is keyed as (lowest rank not yet
linearized, bits above it), so a key costs O(concurrency) and a long history with few clients
is checked in near-linear time (wgl.py).

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
- A model may declare transitions that only extend the state (`Model.lookahead`: kv's append
  makes s into s + v). Then a configuration is dead as soon as a read among the next few
  return entries has a value that does not extend the current state while every op that may
  still precede that read only extends or reads: no order of those ops can make it legal.
  The scan stops at the first op that may precede it and does something else (a put).

Partitions (per key, when the model partitions) are independent (P-compositionality); their
searches are generators stepped round-robin, so one hard partition cannot hide a quick refutation
in another. A time limit and a memory limit (process RSS) stop the search with `unknown`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from itertools import islice
from operator import itemgetter
from typing import Any

from zkjepsen.checker import Result, Violation
from zkjepsen.checker.linear.ambiguity import explain, summary
from zkjepsen.checker.linear.blame import blame
from zkjepsen.checker.linear.models import ILLEGAL, Model
from zkjepsen.checker.linear.overwritten import fast_decide
from zkjepsen.checker.linear.partitions import build, builder, group, prepare, settle
from zkjepsen.checker.linear.pinned import pin
from zkjepsen.checker.linear.sweep import decide
from zkjepsen.checker.linear.wgl import (
    FIRST_OPS,
    FIRST_STEPS_PER_OP,
    PATIENT_STEPS_PER_OP,
    SLICE,
    LinOp,
    Outcome,
    in_sequence,
    proven_valid,
    search,
)
from zkjepsen.errors import BadInput
from zkjepsen.history import History, fault_windows, faults_during
from zkjepsen.history.stream import paused_gc

try:  # a counterexample's records in C (_fastgroup.c), when built; the same in Python below
    from zkjepsen.checker.linear._fastgroup import op_json as _c_op_json
    from zkjepsen.checker.linear._fastgroup import op_jsons as _c_op_jsons
except ImportError:  # pragma: no cover - not built: _py_op_json
    _c_op_json = _c_op_jsons = None  # type: ignore[assignment]
try:  # the compiled sweep (set up by sweep.py, imported above), for the first pass to call
    from zkjepsen.checker.linear._fastsweep import decide as _c_decide
except ImportError:  # pragma: no cover - not built: sweep.decide
    _c_decide = None  # type: ignore[assignment]

BIG = 8_192  # records from which a check pauses the cyclic garbage collector
PREFIX_SHOWN = 200  # ops of the longest linearizable prefix kept in a result's details
_END = itemgetter(3)  # a LinOp's end: None when it crashed
_NO_PAUSE = nullcontext()  # (reusable: a short check need not make one)
_DECIDE = decide if _c_decide is None else _c_decide  # the first pass's sweep
__all__ = [
    "SLICE",
    "LinOp",
    "Linearizable",
    "Outcome",
    "build",
    "check_partitions",
    "group",
    "prepare",
    "search",
]


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def check_partitions(
    parts: dict[Any, list[LinOp]] | Iterable[tuple[Any, list[LinOp]]],
    model: Model,
    time_limit: float | None = None,
    memory_limit: int | None = None,
    total: int | None = None,
    paths: dict[Any, str] | None = None,
    progress: dict[Any, list[int]] | None = None,
    settled: tuple[dict[Any, Outcome], Any] | None = None,
) -> tuple[Any, dict[Any, Outcome], str]:
    """Race the partitions' searches round-robin. Returns (verdict, outcomes, reason): the first
    refuted partition ends everything; a budget running out gives "unknown". `parts` may be
    (key, ops) pairs made on demand (`total` of them at most): a refutation then ends the
    check before the later partitions are even built. `paths` gets, per decided partition,
    what decided it: "sweep", "read-from" or "search"; `progress` the longest prefix each
    search reached (indices into its ops), for an unknown verdict's explanation. `settled`:
    the outcomes of partitions a first pass decided (`_settled`), and the sweep's (verdict,
    made) for the first of `parts`, or None."""
    if paths is None:
        paths = {}
    if progress is None:
        progress = {}
    if isinstance(parts, dict):
        total = len(parts)
        parts = parts.items()
    # The clock is read after every slice of every partition (a slice is a few ms), so the
    # limit is honoured to within one slice, not one round over all partitions.
    t0 = time.monotonic()
    deadline = None if time_limit is None else t0 + time_limit
    done, decided = ({}, None) if settled is None else settled
    limits = (deadline, time_limit, memory_limit)
    running, ended = _fast_paths(parts, model, limits, total, done, paths, decided)
    if ended is not None:
        return ended
    return _race(running, done, (paths, progress), t0, deadline, time_limit, memory_limit)


def _fast_paths(
    parts: Iterable[tuple[Any, list[LinOp]]],
    model: Model,
    limits: tuple[float | None, float | None, int | None],
    total: int | None,
    done: dict[Any, Outcome],
    paths: dict[Any, str],
    decided: Any = None,
) -> tuple[dict[Any, Any], tuple[Any, dict[Any, Outcome], str] | None]:
    """The sweep and the read-from path over each partition as it is built; the searches left
    to race, and the check's end when a partition was refuted or the time ran out first.

    The sweep first (sweep.py): it decides most partitions at a fraction of WGL's cost. A
    partition it refutes is searched by WGL alone, for the counterexample; one it gives up
    on goes to WGL with the others. `decided`: the sweep's answer for the first of `parts`,
    when the first pass (`_settled`) asked it already."""
    deadline, time_limit, memory = limits  # memory: the compiled searches' (proven_valid)
    look = model.lookahead()
    init, new = model.init, tuple.__new__
    running: dict[Any, Any] = {}
    for k, ops in parts:
        if len(ops) >= FIRST_OPS:  # the compiled search first on a long one (wgl.FIRST_OPS)
            proof = proven_valid(ops, init(), deadline, FIRST_STEPS_PER_OP, max_bytes=memory)
            if proof is not None:
                done[k] = proof
                paths[k] = "search"
                continue
        if decided is None:
            verdict, made = decide(ops, init(), deadline)
        else:
            (verdict, made), decided = decided, None
        if verdict:
            done[k] = new(Outcome, (True, ops, [], [], None, made))  # (no Python-level __new__)
            paths[k] = "sweep"
        else:
            if verdict is False:
                done_now = in_sequence(ops, model.init())  # WGL's outcome, without the search
                if done_now is not None:
                    done[k] = done_now
                    paths[k] = "sweep"
                    return running, (False, done, f"partition {k!r} is not linearizable")
            # The read-from path (readfrom.py): where written values are unique it decides
            # what the sweep cannot (crashed ops, heavy concurrency), and explains a
            # refutation by a core of a few ops the search then needs only a few steps for;
            # where values repeat, overwritten.py refutes a read of an overwritten value.
            fast = fast_decide(ops, init(), None if verdict is False else _prover(deadline, memory))
            if fast is not None:
                done[k] = fast[1]
                paths[k] = fast[2]
                if not fast[0]:
                    for g in running.values():
                        g.close()
                    return running, (False, done, f"partition {k!r} is not linearizable")
            elif verdict is False:
                running = {k: search(ops, model.init(), look)}
                break
            else:
                proof = _patient(ops, model.init(), deadline, memory)
                if proof is not None:
                    done[k] = proof
                    paths[k] = "search"
                else:
                    running[k] = search(ops, model.init(), look)
        if running and deadline is not None and time.monotonic() > deadline:
            for g in running.values():
                g.close()
            return running, (
                "unknown",
                done,
                f"time limit of {time_limit:g} s reached with "
                f"{(total or 0) - len(done)} partition(s) undecided",
            )
    return running, None


def _patient(
    ops: list[LinOp], init: Any, deadline: float | None, memory: int | None
) -> Outcome | None:
    """The compiled search again, with PATIENT_STEPS_PER_OP and half the time left, on a
    partition with crashed ops that nothing else decided: there its domination of crashed
    ops (_fastwgl.h) proves valid what the Python search, which has none, runs out of time
    on (issue 54: 5 x 10 k over values 0..4 with 10 % crashed ops, seed 2, k = 338: 4.2 M
    steps, 430 per op). Without crashed ops the earlier budgets stand. `memory`: the check's
    memory limit, held by the search's own tables (the engine's RSS polls are not running)."""
    if None not in map(_END, ops):
        return None
    if deadline is not None:
        now = time.monotonic()
        deadline = now + (deadline - now) / 2
    return proven_valid(ops, init, deadline, PATIENT_STEPS_PER_OP, True, memory)


def _prover(deadline: float | None, memory: int | None) -> Any:
    """The compiled search's proof of a partition (wgl.proven_valid), with the check's
    deadline and memory limit, as fast_decide takes it: tried where the read-from path does
    not apply and before the overwritten reads' pass, which a valid partition would pay for
    nothing."""
    return lambda ops, init: proven_valid(ops, init, deadline, max_bytes=memory)


def _race(
    running: dict[Any, Any],
    done: dict[Any, Outcome],
    paths_progress: tuple[dict[Any, str], dict[Any, list[int]]],
    t0: float,
    deadline: float | None,
    time_limit: float | None,
    memory_limit: int | None,
) -> tuple[Any, dict[Any, Outcome], str]:
    """The searches stepped round-robin, a slice each, to the first refutation, the last
    success, or the time or memory limit."""
    paths, progress = paths_progress
    rss0 = -1  # read at the first slice: a check that needs none opens no file
    next_rss = t0 + 0.25
    while running:
        for k in list(running):
            try:
                progress[k] = next(running[k])
            except StopIteration as stop:
                out: Outcome = stop.value
                del running[k]
                done[k] = out
                paths[k] = "search"
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
            if memory_limit and rss0 < 0:
                rss0 = _rss_bytes()
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


def _py_op_json(op: LinOp, state: Any = ILLEGAL) -> dict[str, Any]:
    """One op as a counterexample's record (_fastgroup.op_json in C, when built)."""
    # (Call.status, Op.actor and Action.text inlined, the tuples unpacked rather than read by
    # attribute: a refutation reads hundreds, and a short one's cost was mostly these)
    (inv, comp), action, start, end = op
    label, process, client = action.label, inv.process, inv.client
    d: dict[str, Any] = {
        "process": process,
        "actor": process if client is None else client,
        "f": inv.f,
        "op": label if label.__class__ is str else label[0].format(*label[1:]),
        "status": "info" if comp is None else comp.type,
        "invoke_index": inv.index,
        "start": start,
        "end": end,
    }
    if comp is not None:
        d["complete_index"] = comp.index
    if inv.key is not None:
        d["key"] = inv.key
    if state is not ILLEGAL:
        d["state_after"] = repr(state)
    return d


def _op_json(op: LinOp, state: Any = ILLEGAL) -> dict[str, Any]:
    """One op as a counterexample's record, with the state after it unless ILLEGAL."""
    if _c_op_json is None:
        return _py_op_json(op, state)
    return _c_op_json(op, state, ILLEGAL)


def _op_jsons(ops: list[LinOp], indices: list[int], states: list[Any]) -> list[dict[str, Any]]:
    """The records of ops[i] for each index, each with its state (a prefix): one C call."""
    if _c_op_jsons is None:
        return [_py_op_json(ops[i], s) for i, s in zip(indices, states, strict=True)]
    return _c_op_jsons(ops, indices, states, ILLEGAL)


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
    return (
        f"none of the history's ops ({', '.join(fs[:8])}) is one model {model.name!r} "
        "reads: nothing was tested"
    )


class Linearizable:
    """Checker: is the history linearizable with respect to `model`?

    Details: model, reason, partitions, ops, configurations, `decided_by` (partitions per
    path: "sweep", "read-from", "search"); when invalid also the refuted `partition`, the path
    that refuted it (`refuted_by`), `longest_prefix_length`, the last PREFIX_SHOWN ops of
    `longest_prefix` (each with the state after it), `cannot_place` (the op that cannot follow
    that prefix) and the `faults` active while it was in flight; when unknown, the `undecided`
    partitions. A refutation is one `not-linearizable` violation, and the Result's `outcome`
    keeps the refuted partition's search outcome for report.counterexample (the read-from
    path's: the search's on the conflict's core). A history with no op the model reads is
    `unknown` (every model accepts an empty history: nothing was tested).
    """

    KINDS = ("not-linearizable",)

    def __init__(
        self, model: Model, time_limit: float | None = 60.0, memory_limit: int | None = 2 << 30
    ) -> None:
        self.model = model
        self.time_limit = time_limit
        self.memory_limit = memory_limit

    def check(self, history: History) -> Result:
        t0 = time.monotonic()
        try:
            # Pausing the collector pays off on long histories only: on a short one, the
            # collection that follows re-enabling it costs more than it saved.
            with paused_gc() if len(history.ops) > BIG else _NO_PAUSE:
                nemesis: list[Any] = []
                groups = group(history, self.model, nemesis)
                parts: dict[Any, list[LinOp]] = {}
                empty: set[Any] = set()
                paths: dict[Any, str] = {}
                progress: dict[Any, list[int]] = {}
                done: dict[Any, Outcome] = {}
                built, decided = _settled(
                    groups, self.model, (parts, empty, done, paths), t0, self.time_limit
                )
                verdict, done, reason = check_partitions(
                    built,
                    self.model,
                    self.time_limit,
                    self.memory_limit,
                    len(groups),
                    paths,
                    progress,
                    (done, decided),
                )
                if not parts and verdict is True:
                    missing = _nothing_to_test(history, self.model)
                    if missing:
                        return Result(
                            "unknown",
                            {
                                "model": self.model.name,
                                "partitions": 0,
                                "ops": 0,
                                "reason": missing,
                            },
                        )
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            # the model's transitions met values they cannot compare or combine
            raise BadInput(
                f"model {self.model.name!r} cannot apply this history's values: "
                f"{type(e).__name__}: {e}"
            ) from None
        unread = len(groups) - len(parts) - len(empty)
        decided_by: dict[str, int] = {}
        for path in paths.values():
            decided_by[path] = decided_by.get(path, 0) + 1
        details: dict[str, Any] = {
            "model": self.model.name,
            "reason": reason,
            "partitions": len(parts) + unread,
            "ops": sum(map(len, parts.values())),
            "configurations": sum([o.configs for o in done.values()]),
            "decided_by": decided_by,
        }
        if unread:  # a refutation came first: their ops were never read into the model
            details["partitions_unread"] = unread
        violations: list[Violation] = []
        outcome = None
        if verdict is False:
            deadline = None if self.time_limit is None else t0 + self.time_limit
            violations, outcome = _refutation(
                details, done, paths, nemesis, (parts, self.model, deadline)
            )
        elif verdict == "unknown":
            details["undecided"] = [k for k in groups if k not in done and k not in empty]
            details["reason"] = _ambiguity(details, parts, progress, reason)
        return Result(verdict, details, violations, outcome=outcome)


def _ambiguity(
    details: dict[str, Any],
    parts: dict[Any, list[LinOp]],
    progress: dict[Any, list[int]],
    reason: str,
) -> str:
    """Say why it is unknown (ambiguity.py): per undecided partition the search's frontier,
    k and the ambiguous ops, into `details["ambiguous"]`; the reason with the first of them."""
    found = {
        k: explain(parts[k], progress.get(k, []), _op_json)
        for k in details["undecided"]
        if k in parts
    }
    if not found:
        return reason
    details["ambiguous"] = [{"partition": k, **f} for k, f in found.items()]
    worst = max(found, key=lambda k: found[k]["k"])
    more = f" ({len(found) - 1} other partition(s) in details)" if len(found) > 1 else ""
    return f"{reason}; {summary(worst, found[worst])}{more}"


def _settled(
    groups: dict[Any, Any],
    model: Model,
    into: tuple[dict[Any, list[LinOp]], set[Any], dict[Any, Outcome], dict[Any, str]],
    t0: float,
    time_limit: float | None,
) -> tuple[Iterator[tuple[Any, list[LinOp]]], Any]:
    """The first pass, in C (partitions.settle): the short partitions with no crashed op that
    the sweep finds valid, settled into `into` (parts, empty, done, paths) without a Python
    call each (issue 54: a short history's check was mostly those calls). The partitions
    left, built on demand (`_built`), and the sweep's answer for the first of them (or None)."""
    deadline = None if time_limit is None else t0 + time_limit
    n, first, decided = settle(groups, model, _DECIDE, deadline, FIRST_OPS, into, Outcome)
    parts, empty = into[0], into[1]
    return _built(groups, builder(model), parts, empty, model.init(), n, first), decided


def _built(
    groups: dict[Any, Any],
    make: Any,
    parts: dict[Any, list[LinOp]],
    empty: set[Any],
    init: Any,
    start: int = 0,
    first: list[LinOp] | None = None,
) -> Iterator[tuple[Any, list[LinOp]]]:
    """Each group's ops for the search, built on demand: a group with none goes to `empty`,
    the others to `parts` as they are yielded, with the crashed writes what was read pins
    made completed (pinned.py). From the `start`-th group on; `first`: its ops, if built."""
    items: Iterable[tuple[Any, Any]] = groups.items()
    if start:
        items = islice(items, start, None)
    for k, calls in items:
        ops = make(calls) if first is None else first
        first = None
        if ops is None:
            empty.add(k)
        else:
            pin(ops, init)
            parts[k] = ops
            yield k, ops


def _refutation(
    details: dict[str, Any],
    done: dict[Any, Outcome],
    paths: dict[Any, str],
    nemesis: list[Any],
    blaming: tuple[dict[Any, list[LinOp]], Model, float | None],
) -> tuple[list[Violation], Outcome]:
    """A refuted partition's details (added to `details`), its violation and its outcome.
    `blaming`: the partitions' ops, the model and the deadline, to name the op to blame."""
    key, out = next((k, o) for k, o in done.items() if not o.valid)
    details["partition"] = key
    details["refuted_by"] = paths.get(key, "search")
    # The tail of the prefix is what explains the failure; the HTML report has it all.
    details["longest_prefix_length"] = len(out.best)
    ops, best, states = out.ops, out.best, out.states
    if len(best) != len(states):
        raise ValueError("a refutation's prefix and its states differ in length")
    details["longest_prefix"] = _op_jsons(ops, best[-PREFIX_SHOWN:], states[-PREFIX_SHOWN:])
    if out.stuck is not None:
        details["cannot_place"] = _op_json(ops[out.stuck])
    _name_the_op(details, out, blaming)
    where = details.get("blamed")
    if where:
        # (fault_windows reads only the nemesis ops, faults_during the windows: none, none
        # to look for)
        windows = fault_windows(nemesis) if nemesis else []
        details["faults"] = faults_during(windows, where["start"], where["end"]) if windows else []
    violation = Violation(
        "not-linearizable",
        (where["actor"],) if where else (),
        where["start"] if where else None,
        where["end"] if where else None,
        tuple(details.get("faults", ())),
        {
            "partition": key,
            "cannot_place": details.get("cannot_place"),
            "blamed": where,
            "longest_prefix_length": len(out.best),
        },
    )
    return [violation], out


def _name_the_op(
    details: dict[str, Any],
    out: Outcome,
    blaming: tuple[dict[Any, list[LinOp]], Model, float | None],
) -> None:
    """The op to blame (blame.py) as `details["blamed"]`: the one op whose removal makes the
    refuted partition linearizable, else the op that cannot be placed; and
    `details["blamed_because"]`, which of the two ("removal" or "cannot-place")."""
    parts, model, deadline = blaming
    part = parts.get(details["partition"])
    found = None
    if part is not None and details["refuted_by"] == "read-from":
        found = blame(part, out, model, deadline)
    if found is not None:
        details["blamed"] = _op_json(found)
        details["blamed_because"] = "removal"
    elif "cannot_place" in details:
        details["blamed"] = details["cannot_place"]
        details["blamed_because"] = "cannot-place"
