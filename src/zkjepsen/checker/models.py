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
from typing import Any, NamedTuple

from zkjepsen.errors import BadInput


class _Illegal:
    def __repr__(self) -> str:
        return "ILLEGAL"


ILLEGAL: Any = _Illegal()


class Action(NamedTuple):
    fn: Callable[[Any, Any], Any]
    arg: Any
    read_only: bool
    text: str


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


# Transition functions: module-level so identical actions compare equal (see the crashed-op rule).
def _read(s: Any, v: Any) -> Any:
    return s if s == v else ILLEGAL


def _read_not(s: Any, v: Any) -> Any:
    return s if s != v else ILLEGAL


def _write(s: Any, v: Any) -> Any:
    return v


def _cas(s: Any, ov: tuple[Any, Any]) -> Any:
    return ov[1] if s == ov[0] else ILLEGAL


def _add(s: Any, v: Any) -> Any:
    return s + v


def _acquire(s: Any, _: Any) -> Any:
    return ILLEGAL if s else True


def _release(s: Any, _: Any) -> Any:
    return False if s else ILLEGAL


class Model:
    """Base: subclasses set `name` and implement `action`. Partitioning is off by default."""

    name = "model"

    def __init__(self, initial: Any = None) -> None:
        self.initial = initial

    def init(self) -> Any:
        return self.initial

    def step(self, state: Any, action: Action) -> tuple[bool, Any]:
        ns = action.fn(state, action.arg)
        return (ns is not ILLEGAL, ns)

    def partition_key(self, f: str, key: Any) -> Any:
        return None

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        raise NotImplementedError

    def describe_state(self, state: Any) -> str:
        return repr(state)

    def _unsupported(self, f: str) -> BadInput:
        return BadInput(f"model {self.name!r} has no operation {f!r}")


class CasRegister(Model):
    """A register with read, write and cas [old new].

    `nil_read_unknown`: a read whose value is nil says nothing (Knossos' cas-register); otherwise
    nil is a value (ZooKeeper "no such node", etcd "key not found"). `fail_asserts_cas`: a failed
    cas asserts the register did not hold `old` (porcupine's etcd model); otherwise failed ops are
    dropped (Knossos). A failed read is always dropped (etcd's `:fail :read :timed-out` is a read
    with an unknown result).
    """

    def __init__(self, initial: Any = None, *, name: str = "cas-register",
                 nil_read_unknown: bool = True, fail_asserts_cas: bool = False) -> None:
        super().__init__(initial)
        self.name = name
        self.nil_read_unknown = nil_read_unknown
        self.fail_asserts_cas = fail_asserts_cas

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        if status == "fail":
            if f == "cas" and self.fail_asserts_cas:
                old = value[0]
                return Action(_read_not, old, True, f"cas {value[0]}->{value[1]} (failed)")
            if f in ("read", "write", "cas"):
                return None
            raise self._unsupported(f)
        if f == "read":
            if status != "ok" or (value is None and self.nil_read_unknown):
                return None
            return Action(_read, _freeze(value), True, f"read {value!r}")
        if f == "write":
            return Action(_write, _freeze(value), False, f"write {value!r}")
        if f == "cas":
            if not isinstance(value, (list, tuple)) or len(value) != 2:
                raise BadInput(f"cas value must be [old, new], got {value!r}")
            old, new = _freeze(value[0]), _freeze(value[1])
            return Action(_cas, (old, new), old == new, f"cas {old!r}->{new!r}")
        raise self._unsupported(f)


class Register(CasRegister):
    """read/write (and cas) where nil is a value: a ZooKeeper znode's data, absent = None."""

    def __init__(self, initial: Any = None) -> None:
        super().__init__(initial, name="register", nil_read_unknown=False)

    def partition_key(self, f: str, key: Any) -> Any:
        return key  # independent registers per key: P-compositionality


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
            return None if status != "ok" or value is None else \
                Action(_read, value, True, f"read {value!r}")
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

    def partition_key(self, f: str, key: Any) -> Any:
        return key

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

    def partition_key(self, f: str, key: Any) -> Any:
        return key


def _set_add(s: frozenset[Any], v: Any) -> Any:
    return s | {v}


class SetModel(Model):
    """add v / read [all elements]: read legal iff it returns exactly the set."""

    name = "set"

    def __init__(self, initial: Any = None) -> None:
        super().__init__(frozenset(_freeze(x) for x in (initial or ())))

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        if status == "fail":
            return None
        if f == "add":
            return Action(_set_add, _freeze(value), False, f"add {value!r}")
        if f == "read":
            if status != "ok" or value is None:
                return None
            return Action(_read, frozenset(_freeze(x) for x in value), True, f"read {value!r}")
        raise self._unsupported(f)


def _enqueue(s: tuple[Any, ...], v: Any) -> Any:
    return s + (v,)


def _dequeue(s: tuple[Any, ...], v: Any) -> Any:
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
    may have taken everything (a drain cut off halfway is not modelled)."""

    name = "fifo-queue"

    def __init__(self, initial: Any = None) -> None:
        super().__init__(tuple(_freeze(x) for x in (initial or ())))

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        if f == "enqueue":
            return None if status == "fail" else Action(_enqueue, _freeze(value), False,
                                                        f"enqueue {value!r}")
        if f == "dequeue":
            if status == "fail":
                return Action(_empty, None, True, "dequeue (empty)")
            if status != "ok":
                return Action(_dequeue_any, None, False, "dequeue (unknown)")
            return Action(_dequeue, _freeze(value), False, f"dequeue {value!r}")
        if f == "drain":
            if status != "ok":
                return Action(_clear, None, False, "drain (unknown)")
            return Action(_drain, tuple(_freeze(x) for x in value or ()), False,
                          f"drain {value!r}")
        raise self._unsupported(f)


def _append(s: str, v: str) -> str:
    return s + v


class KV(Model):
    """Porcupine's kv: get/put/append of strings per key, initial "" (partitioned by key)."""

    name = "kv"

    def __init__(self, initial: Any = None) -> None:
        super().__init__("" if initial is None else initial)

    def partition_key(self, f: str, key: Any) -> Any:
        return key

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        if status == "fail":
            return None
        v = "" if value is None else value
        if f == "get":
            return None if status != "ok" else Action(_read, v, True, f"get {key}={v!r}")
        if f == "put":
            return Action(_write, v, False, f"put {key}={v!r}")
        if f == "append":
            return Action(_append, v, False, f"append {key}+={v!r}")
        raise self._unsupported(f)


# The unpartitioned kv keeps one string per key in a tuple indexed by the key's number (keys are
# numbered as first seen; a shorter tuple means the later keys still hold "").
def _kv_get(s: tuple[str, ...], iv: tuple[int, str]) -> Any:
    i, v = iv
    return s if (s[i] if i < len(s) else "") == v else ILLEGAL


def _kv_put(s: tuple[str, ...], iv: tuple[int, str]) -> Any:
    i, v = iv
    if i < len(s):
        return s[:i] + (v,) + s[i + 1:]
    return s + ("",) * (i - len(s)) + (v,)


def _kv_append(s: tuple[str, ...], iv: tuple[int, str]) -> Any:
    i, v = iv
    if i < len(s):
        return s[:i] + (s[i] + v,) + s[i + 1:]
    return s + ("",) * (i - len(s)) + (v,)


class KVSingle(KV):
    """kv checked as ONE partition (a state-explosion benchmark; same verdicts as `kv`)."""

    name = "kv-single"

    def __init__(self, initial: Any = None) -> None:
        super().__init__(initial)
        self._key_numbers: dict[Any, int] = {}

    def init(self) -> Any:
        return ()

    def partition_key(self, f: str, key: Any) -> Any:
        return None

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        a = super().action(f, key, value, status, actor)
        if a is None:
            return None
        i = self._key_numbers.setdefault(key, len(self._key_numbers))
        fn = {_read: _kv_get, _write: _kv_put, _append: _kv_append}[a.fn]
        return Action(fn, (i, a.arg), a.read_only, a.text)

    def describe_state(self, state: Any) -> str:
        names = list(self._key_numbers)
        return repr({names[i]: v for i, v in enumerate(state)})


def _txn(s: tuple[Any, ...], mops: tuple[tuple[str, Any, Any], ...]) -> Any:
    d = dict(s)
    for f, k, v in mops:
        if f == "read":
            if v is not None and d.get(k) != v:
                return ILLEGAL
        else:
            d[k] = v
    return tuple(sorted(d.items()))


class MultiRegister(Model):
    """Knossos' multi-register: `txn` [[read k v] [write k v] ...] applied atomically; nil reads
    are unknown. Initial state a dict (default {"x": 0, "y": 0})."""

    name = "multi-register"

    def __init__(self, initial: Any = None) -> None:
        init = {"x": 0, "y": 0} if initial is None else initial
        super().__init__(tuple(sorted((k, _freeze(v)) for k, v in init.items())))

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        if status == "fail":
            return None
        if f != "txn":
            raise self._unsupported(f)
        mops = tuple((m[0], m[1], _freeze(m[2])) for m in value)
        ro = all(m[0] == "read" for m in mops)
        if ro and status != "ok":
            return None
        return Action(_txn, mops, ro, f"txn {value!r}")


MODELS: dict[str, Callable[[Any], Model]] = {
    "register": Register,
    "cas-register": CasRegister,
    "etcd-cas-register": lambda init: CasRegister(init, name="etcd-cas-register",
                                                  nil_read_unknown=False, fail_asserts_cas=True),
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
