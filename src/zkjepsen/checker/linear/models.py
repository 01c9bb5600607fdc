"""Sequential specifications for the linearizability checker, as small pure-function objects.

A model turns each completed call into an `Action` (or None: the call constrains nothing and is
dropped) and says how an action changes a state. `Action.fn(state, arg)` returns the next state or
`ILLEGAL`; functions are chosen per action so the search's hot loop is one call per candidate.
`read_only` promises the action never changes ANY state it is legal in: the search then places
it greedily, without a backtrack point (see linearizability.py for why that is sound).

`status` is the call's outcome: "ok" (happened; `value` is the completion's value), "fail"
(certainly did not happen; dropped unless the model gives fail a meaning, as porcupine's etcd
model does for cas), "info" (unknown: may have happened; `value` is the invocation's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zkjepsen.checker.linear.kv_models import KV, KVSingle, MultiRegister
from zkjepsen.checker.linear.model_base import (
    ILLEGAL,
    Action,
    Model,
    cas_value,
    freeze,
    read_not,
    read_value,
    write_value,
)
from zkjepsen.errors import BadInput

_new = tuple.__new__  # an Action without NamedTuple's Python-level __new__ (one per op)
_FLAT = frozenset((int, str, type(None)))  # values freeze() returns unchanged


def _add(s: Any, v: Any) -> Any:
    return s + v


def _acquire(s: Any, _: Any) -> Any:
    return ILLEGAL if s else True


def _release(s: Any, _: Any) -> Any:
    return False if s else ILLEGAL


class CasRegister(Model):
    """A register with read, write and cas [old new].

    `nil_read_unknown`: a read whose value is nil says nothing (Knossos' cas-register); otherwise
    nil is a value (ZooKeeper "no such node", etcd "key not found"). `fail_asserts_cas`: a failed
    cas asserts the register did not hold `old` (porcupine's etcd model); otherwise failed ops are
    dropped (Knossos). A failed read is always dropped (etcd's `:fail :read :timed-out` is a read
    with an unknown result).
    """

    def __init__(
        self,
        initial: Any = None,
        *,
        name: str = "cas-register",
        nil_read_unknown: bool = True,
        fail_asserts_cas: bool = False,
    ) -> None:
        super().__init__(initial)
        self.name = name
        self.nil_read_unknown = nil_read_unknown
        self.fail_asserts_cas = fail_asserts_cas

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        if status == "fail":
            if f == "cas" and self.fail_asserts_cas:
                old = value[0] if value[0].__class__ in _FLAT else freeze(value[0])
                label = ("cas {}->{} (failed)", value[0], value[1])
                return _new(Action, (read_not, old, True, label))
            if f in ("read", "write", "cas"):
                return None
            raise self._unsupported(f)
        if f == "read":
            if status != "ok" or (value is None and self.nil_read_unknown):
                return None
            v = value if value.__class__ in _FLAT else freeze(value)
            return _new(Action, (read_value, v, True, ("read {1!r}", key, value)))
        if f == "write":
            v = value if value.__class__ in _FLAT else freeze(value)
            return _new(Action, (write_value, v, False, ("write {1!r}", key, value)))
        if f == "cas":
            if not isinstance(value, (list, tuple)) or len(value) != 2:
                raise BadInput(f"cas value must be [old, new], got {value!r}")
            old, new = value  # (freeze only what is not flat: this runs once per cas)
            if old.__class__ not in _FLAT:
                old = freeze(old)
            if new.__class__ not in _FLAT:
                new = freeze(new)
            return _new(Action, (cas_value, (old, new), old == new, ("cas {!r}->{!r}", old, new)))
        raise self._unsupported(f)

    def action_table(self) -> Any:
        """Reads and writes follow the table rule (see Model.action_table) where nil is a
        value: the compiled builder makes them without a call (a cas still calls `action`)."""
        if self.nil_read_unknown or type(self).action is not CasRegister.action:
            return None
        return (None, _REGISTER_TABLE)


_REGISTER_TABLE = {
    "read": (read_value, True, "read {1!r}"),
    "write": (write_value, False, "write {1!r}"),
}


class Register(CasRegister):
    """read/write (and cas) where nil is a value: a ZooKeeper znode's data, absent = None."""

    def __init__(self, initial: Any = None) -> None:
        super().__init__(initial, name="register", nil_read_unknown=False)


class Counter(Model):
    """add v / read v, starting from `initial` (0)."""

    name = "counter"

    def __init__(self, initial: Any = 0) -> None:
        super().__init__(0 if initial is None else initial)

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        if status == "fail":
            return None
        if f in ("add", "incr"):
            return Action(_add, 1 if value is None else value, False, f"add {value!r}")
        if f == "read":
            return (
                None
                if status != "ok" or value is None
                else Action(read_value, value, True, f"read {value!r}")
            )
        raise self._unsupported(f)


class Mutex(Model):
    """Knossos' mutex: acquire legal iff free, release legal iff held (by anyone)."""

    name = "mutex"

    def __init__(self, initial: Any = None) -> None:
        super().__init__(bool(initial))

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        if status == "fail":
            return None
        if f in ("acquire", "elected"):
            return Action(_acquire, None, False, "acquire")
        if f in ("release", "resign"):
            return Action(_release, None, False, "release")
        raise self._unsupported(f)

    def describe_state(self, state: Any) -> str:
        return "held" if state else "free"


def _fenced_acquire(s: tuple[Any, int], at: tuple[Any, Any]) -> Any:
    holder, last = s
    actor, token = at
    if holder is not None or (token is not None and token <= last):
        return ILLEGAL
    return (actor, last if token is None else token)


def _fenced_release(s: tuple[Any, int], actor: Any) -> Any:
    return (None, s[1]) if s[0] == actor else ILLEGAL


class FencedMutex(Model):
    """A mutex whose grants carry strictly increasing fencing tokens, released by the holder.

    State (holder, last token). acquire ok with `value.token` t is legal iff free and t > last.
    """

    name = "fenced-mutex"

    def __init__(self, initial: Any = None) -> None:
        super().__init__((None, -1 if initial is None else initial))

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        if status == "fail":
            return None
        if f in ("acquire", "elected"):
            token = value.get("token") if isinstance(value, dict) else None
            return Action(_fenced_acquire, (actor, token), False, f"acquire token={token}")
        if f in ("release", "resign"):
            return Action(_fenced_release, actor, False, "release")
        raise self._unsupported(f)


def _set_add(s: frozenset[Any], v: Any) -> Any:
    return s | {v}


class SetModel(Model):
    """add v / read [all elements]: read legal iff it returns exactly the set."""

    name = "set"

    def __init__(self, initial: Any = None) -> None:
        super().__init__(frozenset(freeze(x) for x in (initial or ())))

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        if status == "fail":
            return None
        if f == "add":
            return Action(_set_add, freeze(value), False, f"add {value!r}")
        if f == "read":
            if status != "ok" or value is None:
                return None
            return Action(read_value, frozenset(freeze(x) for x in value), True, f"read {value!r}")
        raise self._unsupported(f)

    def reduce(self, ops: list[Any]) -> list[Any]:
        """A crashed add of a value no read returns can go: had it happened, every later read
        would contain the value, so it could only have happened after the last read."""
        seen: set[Any] = set()
        for o in ops:
            if o.action.fn is read_value:
                seen |= o.action.arg
        return [
            o
            for o in ops
            if not (o.end is None and o.action.fn is _set_add and o.action.arg not in seen)
        ]


def enqueue_value(s: tuple[Any, ...], v: Any) -> Any:
    return s + (v,)


def dequeue_value(s: tuple[Any, ...], v: Any) -> Any:
    return s[1:] if s and s[0] == v else ILLEGAL


def _dequeue_any(s: tuple[Any, ...], _: Any) -> Any:
    return s[1:] if s else ILLEGAL  # on an empty queue it changed nothing: not placing it is that


def _empty(s: tuple[Any, ...], _: Any) -> Any:
    return ILLEGAL if s else s


def _drain(s: tuple[Any, ...], v: tuple[Any, ...]) -> Any:
    return () if s == v else ILLEGAL


def _clear(s: tuple[Any, ...], _: Any) -> Any:
    return ()


class FifoQueue(Model):
    """enqueue v / dequeue v (ok) / dequeue fail = the queue was empty / drain [rest...] (takes
    everything left). A crashed dequeue may have taken the head, whatever it was; a crashed drain
    may have taken everything (a drain cut off halfway is not modelled). A failed enqueue or
    drain certainly did not happen and is dropped; only a failed dequeue says something (the
    queue was empty), because that is how a dequeue reports an empty queue."""

    name = "fifo-queue"

    def __init__(self, initial: Any = None) -> None:
        super().__init__(tuple(freeze(x) for x in (initial or ())))

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        if f == "enqueue":
            return (
                None
                if status == "fail"
                else Action(enqueue_value, freeze(value), False, f"enqueue {value!r}")
            )
        if f == "dequeue":
            if status == "fail":
                return Action(_empty, None, True, "dequeue (empty)")
            if status != "ok":
                return Action(_dequeue_any, None, False, "dequeue (unknown)")
            return Action(dequeue_value, freeze(value), False, f"dequeue {value!r}")
        if f == "drain":
            if status == "fail":
                return None  # a failed drain certainly did not happen: it took nothing
            if status != "ok":
                return Action(_clear, None, False, "drain (unknown)")
            return Action(_drain, tuple(freeze(x) for x in value or ()), False, f"drain {value!r}")
        raise self._unsupported(f)

    def reduce(self, ops: list[Any]) -> list[Any]:
        """A crashed enqueue of a value no ok dequeue or drain returns can go. Take any valid
        order that places it: remove it, and the crashed dequeue that took that element if
        any. Every other op sees the same queue minus elements of that value, which no ok
        dequeue returns (so none stood before the head it took), no drain lists (so none were
        there), and an empty queue stays empty: the order stays valid. Crashed enqueues are
        what make queue histories explode (each stays a candidate to the end)."""
        seen: set[Any] = set()
        for o in ops:
            fn = o.action.fn
            if fn is dequeue_value:
                seen.add(o.action.arg)
            elif fn is _drain:
                seen.update(o.action.arg)
        return [
            o
            for o in ops
            if not (o.end is None and o.action.fn is enqueue_value and o.action.arg not in seen)
        ]


MODELS: dict[str, Callable[[Any], Model]] = {
    "register": Register,
    "cas-register": CasRegister,
    "etcd-cas-register": lambda init: CasRegister(
        init, name="etcd-cas-register", nil_read_unknown=False, fail_asserts_cas=True
    ),
    "counter": Counter,
    "mutex": Mutex,
    "fenced-mutex": FencedMutex,
    "set": SetModel,
    "fifo-queue": FifoQueue,
    "kv": KV,
    "kv-single": KVSingle,
    "multi-register": MultiRegister,
}


def make_model(name: str, initial: Any = None) -> Model:
    """A model by its CLI name; BadInput naming the choices when unknown."""
    try:
        factory = MODELS[name]
    except KeyError:
        raise BadInput(f"unknown model {name!r} (choose from {', '.join(MODELS)})") from None
    return factory(initial)


__all__ = [
    "ILLEGAL",
    "KV",
    "MODELS",
    "Action",
    "CasRegister",
    "Counter",
    "FencedMutex",
    "FifoQueue",
    "KVSingle",
    "Model",
    "MultiRegister",
    "Mutex",
    "Register",
    "SetModel",
    "make_model",
]
