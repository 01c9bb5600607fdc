"""Models over keyed and composite state: porcupine's kv (partitioned or as one partition)
and Knossos' multi-register. Same conventions as models.py (which re-exports these)."""

from __future__ import annotations

from typing import Any

from zkjepsen.checker.linear.model_base import (
    ILLEGAL,
    Action,
    Model,
    freeze,
    read_value,
    write_value,
)

_new = tuple.__new__  # an Action without NamedTuple's Python-level __new__ (one per op)


def append_str(s: str, v: str) -> str:
    return s + v


_KV_TABLE = {
    "get": (read_value, True, "get {}={!r}"),
    "put": (write_value, False, "put {}={!r}"),
    "append": (append_str, False, "append {}+={!r}"),
}


class KV(Model):
    """Porcupine's kv: get/put/append of strings per key, initial "" (partitioned by key)."""

    name = "kv"

    def __init__(self, initial: Any = None) -> None:
        super().__init__("" if initial is None else initial)

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        if status == "fail":
            return None
        row = _KV_TABLE.get(f) if f.__class__ is str else None
        if row is None:
            raise self._unsupported(f)
        fn, read_only, label = row
        if read_only and status != "ok":
            return None
        v = "" if value is None else value
        return _new(Action, (fn, v, read_only, (label, key, v)))

    def action_table(self) -> Any:
        """`action` is exactly the table rule (see Model.action_table); a subclass that
        changes `action` has no table."""
        return ("", _KV_TABLE) if type(self).action is KV.action else None

    def lookahead(self) -> Any:
        """An append only extends the string, so a get of v can follow appends to s only if v
        starts with s (a put pending before that get turns the check off)."""
        if not isinstance(self.initial, str):
            return None
        return (frozenset((append_str,)), read_value, _extends_to)


def _extends_to(s: str, v: Any) -> bool:
    return isinstance(v, str) and v.startswith(s)


# The unpartitioned kv keeps one string per key in a tuple indexed by the key's number (keys are
# numbered as first seen; a shorter tuple means the later keys still hold "").
def _kv_get(s: tuple[str, ...], iv: tuple[int, str]) -> Any:
    i, v = iv
    return s if (s[i] if i < len(s) else "") == v else ILLEGAL


def _kv_put(s: tuple[str, ...], iv: tuple[int, str]) -> Any:
    i, v = iv
    if i < len(s):
        return s[:i] + (v,) + s[i + 1 :]
    return s + ("",) * (i - len(s)) + (v,)


def _kv_append(s: tuple[str, ...], iv: tuple[int, str]) -> Any:
    i, v = iv
    if i < len(s):
        return s[:i] + (s[i] + v,) + s[i + 1 :]
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

    def lookahead(self) -> Any:
        return None  # one tuple of strings: appends extend one key, not the state

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        a = super().action(f, key, value, status, actor)
        if a is None:
            return None
        i = self._key_numbers.setdefault(key, len(self._key_numbers))
        ports: dict[Any, Any] = {read_value: _kv_get, write_value: _kv_put, append_str: _kv_append}
        fn = ports[a.fn]
        return Action(fn, (i, a.arg), a.read_only, a.label)

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
        super().__init__(tuple(sorted((k, freeze(v)) for k, v in init.items())))

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        if status == "fail":
            return None
        if f != "txn":
            raise self._unsupported(f)
        mops = tuple((m[0], m[1], freeze(m[2])) for m in value)
        ro = all(m[0] == "read" for m in mops)
        if ro and status != "ok":
            return None
        return Action(_txn, mops, ro, f"txn {value!r}")
