# Types of the compiled grouping (_fastgroup.c) for the type checker; partitions.py has the
# pure-Python paths that give the same ops.
from typing import Any

def setup(op_class: type, /) -> None: ...
def group(ops: list[Any], nemesis: Any, nemesis_ops: list[Any] | None, /) -> Any: ...
def build(
    calls: list[Any], action_of: Any, linop: type, call: type, action: type, table: Any, /
) -> Any: ...
def op_json(op: Any, state: Any, illegal: Any, /) -> dict[str, Any]: ...
def op_jsons(
    ops: list[Any], indices: list[int], states: list[Any], illegal: Any, /
) -> list[dict[str, Any]]: ...
def settle(
    groups: dict[Any, Any],
    action_of: Any,
    linop: type,
    call: type,
    action: type,
    table: Any,
    init: Any,
    decide: Any,
    deadline: float | None,
    first_ops: int,
    parts: dict[Any, Any],
    empty: set[Any],
    done: dict[Any, Any],
    paths: dict[Any, str],
    outcome: type,
    path: str,
    /,
) -> tuple[int, Any, Any]: ...
