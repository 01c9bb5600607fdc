"""Calls into a linearizability check's input: pair each invoke with its completion, group the
calls by partition key, and turn one partition's calls into the search's ops (LinOps: the call,
the model's action, the real-time interval). The compiled fast path (_fastgroup.c) does the
common case; this module words every error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zkjepsen.checker.linear.models import Action, Model, freeze
from zkjepsen.checker.linear.wgl import LinOp
from zkjepsen.errors import BadInput
from zkjepsen.history import NEMESIS, Call, History, Op

try:  # the compiled fast path (_fastgroup.c), built with the package (setup.py) given a C compiler
    from zkjepsen.checker.linear._fastgroup import build as _fast_build
    from zkjepsen.checker.linear._fastgroup import group as _fast_group
    from zkjepsen.checker.linear._fastgroup import setup as _fast_setup
except ImportError:  # pragma: no cover - the pure-Python paths below give the same ops
    _fast_build = _fast_group = None  # type: ignore[assignment]  # None: not built
else:
    _fast_setup(Op)  # it reads an Op's fields from their slots
try:  # (an older build of the module may lack it: then no first pass)
    from zkjepsen.checker.linear._fastgroup import settle as _fast_settle
except ImportError:  # pragma: no cover
    _fast_settle = None  # type: ignore[assignment]


_PLAIN_KEYS = frozenset((str, int, type(None)))  # partition keys that need no freezing


def group(
    history: History, model: Model, nemesis: list[Op] | None = None
) -> dict[Any, list[list[Any]]]:
    """Pair calls (as History.pairs(validate=False) does) and group them by partition key, in
    invocation order, in one pass: each call is an [invoke, completion or None] pair, filled
    in when its completion comes. No model action yet: a partition's ops are built when the
    check reaches it (`build`). The nemesis's records, in order, go to `nemesis` if given."""
    # The default partition is the op's key itself: no method call per op for it.
    by_key = type(model).partition_key is Model.partition_key
    if by_key and _fast_group is not None:
        out = _fast_group(history.ops, NEMESIS, nemesis)
        if out is not NotImplemented:
            return out
        if nemesis:
            nemesis.clear()
    parts: dict[Any, list[list[Any]]] = {}
    pending: dict[Any, list[Any]] = {}
    partition_key = model.partition_key
    for op in history.ops:
        t = op.type
        if nemesis is not None and op.process == NEMESIS:
            nemesis.append(op)
        if t == "invoke":
            p = op.process
            if p == NEMESIS or p in pending:
                continue  # a second invoke while one is pending: skipped, as by pairs()
            part = op.key
            if not by_key or part.__class__ not in _PLAIN_KEYS:
                try:
                    if not by_key:
                        part = partition_key(op.f, part)
                    if part.__class__ not in _PLAIN_KEYS:
                        part = freeze(part)
                        hash(part)
                except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
                    raise BadInput(
                        f"op {op.f!r} at index {op.index} (key {op.key!r}) does not fit "
                        f"model {model.name!r}: {e}"
                    ) from None
            pair = pending[p] = [op, None]
            calls = parts.get(part)
            if calls is None:
                parts[part] = [pair]
            else:
                calls.append(pair)
        elif t != "event":
            done = pending.pop(op.process, None)
            if done is not None:  # (nemesis ops are never pending)
                done[1] = op
    return parts


def builder(model: Model, reduce: bool = True) -> Callable[[list[list[Any]]], Any]:
    """`build` for this model, with what it looks up once per check bound (a check builds
    every partition with it)."""
    # The base reduce keeps every op: no call per partition for it.
    reduce = reduce and type(model).reduce is not Model.reduce
    if _fast_build is None:
        return lambda calls: build(calls, model, reduce)
    action_of, table, reduce_ops = model.action, model.action_table(), model.reduce

    def build_fast(calls: list[list[Any]]) -> list[LinOp] | None:
        fast = _fast_build(calls, action_of, LinOp, Call, Action, table)
        if fast is NotImplemented:  # an error to word, or an odd value: the Python path
            return build(calls, model, reduce)
        if not fast:
            return None
        return reduce_ops(fast) if reduce else fast

    return build_fast


def settle(
    groups: dict[Any, list[list[Any]]],
    model: Model,
    decide: Callable[[list[LinOp], Any, float | None], Any],
    deadline: float | None,
    first_ops: int,
    into: tuple[dict[Any, list[LinOp]], set[Any], dict[Any, Any], dict[Any, str]],
    outcome: type,
) -> tuple[int, list[LinOp] | None, Any]:
    """A check's first pass, in C (_fastgroup.settle): the groups, in order, built as `builder`
    builds them, and the short ones with no crashed op that `decide` (the sweep) finds valid
    settled: into `into` = (parts, empty, done, paths) as the check's own loop would put them
    (done: outcome(True, ops, [], [], None, made), paths: "sweep"). It stops at the first group
    it does not settle: (groups settled, that group's ops or None, the sweep's answer for them
    or None); (0, None, None) when not built or when the model reduces its ops."""
    if _fast_settle is None or type(model).reduce is not Model.reduce:
        return 0, None, None
    table = model.action_table()
    how = (model.action, LinOp, Call, Action, table)  # build's arguments
    return _fast_settle(
        groups, *how, model.init, decide, deadline, first_ops, *into, outcome, "sweep"
    )


def build(calls: list[list[Any]], model: Model, reduce: bool = True) -> list[LinOp] | None:
    """One partition's calls as model actions (None when none is left: failed ops and crashed
    reads constrain nothing); with `reduce`, the model drops crashed ops nothing could
    observe. BadInput names the first op that does not fit the model. (Pure Python; the
    compiled path is `builder`'s.)"""
    ops: list[LinOp] = []
    append = ops.append
    new = tuple.__new__  # LinOp without its Python-level __new__: this loop runs per call
    action_of = model.action
    for inv, comp in calls:
        if comp is None:
            status, value, end = "info", inv.value, None
        else:
            status = comp.type
            if status == "info":
                value, end = inv.value, None
            else:
                value = comp.value
                if value is None:
                    value = inv.value
                end = comp.time
        try:
            action = action_of(
                inv.f, inv.key, value, status, inv.process if inv.client is None else inv.client
            )
            if action is None:
                continue
            arg = action[1]
            if arg.__class__ not in _PLAIN_KEYS:
                hash(arg)  # the search memoizes states built from it (a str always hashes)
        except BadInput:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            raise BadInput(
                f"op {inv.f!r} at index {inv.index} (value {value!r}) does not fit "
                f"model {model.name!r}: {e}"
            ) from None
        if end is None and action[2]:
            continue  # a crashed read-only op constrains nothing
        append(new(LinOp, (new(Call, (inv, comp)), action, inv.time, end)))
    if not ops:
        return None
    return model.reduce(ops) if reduce else ops


def prepare(history: History, model: Model, reduce: bool = True) -> dict[Any, list[LinOp]]:
    """Pair calls, turn them into model actions, and group them by partition key; with
    `reduce`, let the model drop crashed ops nothing could observe."""
    out = {}
    make = builder(model, reduce)
    for k, calls in group(history, model).items():
        ops = make(calls)
        if ops is not None:
            out[k] = ops
    return out
