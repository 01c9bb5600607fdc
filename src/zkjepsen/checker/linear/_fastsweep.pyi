# Types of the compiled sweep (_fastsweep.c) for the type checker; the pure-Python
# reference is sweep.py's py_decide.
from typing import Any

def setup(
    illegal: object,
    read_value: Any,
    write_value: Any,
    append_str: Any,
    cas_value: Any,
    read_not: Any,
    max_pending: int,
    steps: int,
    steps_per_op: int,
    probe: int,
    /,
) -> None: ...
def decide(ops: list[Any], init: Any, deadline: float | None, /) -> Any: ...
def search_valid(
    ops: list[Any],
    init: Any,
    budget: int,
    deadline: float | None,
    dominate: bool = ...,
    pinned_call: type | None = ...,
    max_bytes: int | None = ...,
    /,
) -> Any: ...
