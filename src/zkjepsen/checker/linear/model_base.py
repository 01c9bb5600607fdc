"""The model protocol shared by every model module: ILLEGAL, Action, Model, and the
transitions several models share. See models.py for the conventions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from zkjepsen.errors import BadInput


class _Illegal:
    def __repr__(self) -> str:
        return "ILLEGAL"


ILLEGAL: Any = _Illegal()


class Action(NamedTuple):
    """`label` is the op's text, or (format, *values) formatted only when `text` is asked for:
    a check builds one Action per op and reads the text of a few, in a counterexample."""

    fn: Callable[[Any, Any], Any]
    arg: Any
    read_only: bool
    label: Any

    @property
    def text(self) -> str:
        label = self.label
        return label if label.__class__ is str else label[0].format(*label[1:])


def freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, freeze(x)) for k, x in v.items()))
    return v


# Transition functions: module-level so identical actions compare equal (see the crashed-op rule).
def read_value(s: Any, v: Any) -> Any:
    return s if s == v else ILLEGAL


def read_not(s: Any, v: Any) -> Any:
    return s if s != v else ILLEGAL


def write_value(s: Any, v: Any) -> Any:
    return v


def cas_value(s: Any, ov: tuple[Any, Any]) -> Any:
    return ov[1] if s == ov[0] else ILLEGAL


class Model:
    """Base: subclasses set `name` and implement `action`. Partitioned by `key` by default."""

    name = "model"

    def __init__(self, initial: Any = None) -> None:
        self.initial = initial

    def init(self) -> Any:
        return self.initial

    def step(self, state: Any, action: Action) -> tuple[bool, Any]:
        ns = action.fn(state, action.arg)
        return (ns is not ILLEGAL, ns)

    def partition_key(self, f: str, key: Any) -> Any:
        """Objects with different keys are independent (P-compositionality): each key is
        checked as its own history. Ops without a key form one partition."""
        return key

    def action(self, f: str, key: Any, value: Any, status: str, actor: Any) -> Action | None:
        raise NotImplementedError

    def action_table(self) -> tuple[Any, dict[str, tuple[Any, bool, str]]] | None:
        """None, or (stand-in for a None value, {f: (transition, read_only, label format)})
        for a model whose `action` is exactly this rule (the compiled builder then makes the
        Actions without calling it): a failed op is dropped, so is a read-only op that did not
        complete ok, and any other op is Action(transition, v, read_only, (format, key, v)),
        v its value or the stand-in. An f not in the table goes to `action`."""
        return None

    def reduce(self, ops: list[Any]) -> list[Any]:
        """Drop crashed ops whose effect no op could ever observe, where that is sound for the
        model (each override argues why). `ops` are the search's LinOps of one partition."""
        return ops

    def lookahead(self) -> Any:
        """None, or (extending transitions, the read transition, reachable(state, value)) for
        a model whose state some transitions only ever extend (kv's append): the search then
        drops a configuration as soon as the read it must place next can never be legal
        (see wgl.search). `reachable(s, v)`: could extending s ever give v?"""
        return None

    def partition(self, op: Any) -> Any:
        """The design's name for it: the partition an op (with `f` and `key`) belongs to."""
        return self.partition_key(op.f, op.key)

    def describe(self, action: Action) -> str:
        return action.text

    def describe_state(self, state: Any) -> str:
        return repr(state)

    def _unsupported(self, f: str) -> BadInput:
        return BadInput(f"model {self.name!r} has no operation {f!r}")
