"""The linearizability engine, one file to read: `check(history, model) -> Result`.

    from zkjepsen.checker.linear import check, make_model
    result = check(history, make_model("cas-register"), time_limit=60)
    result.valid            # True, False or "unknown"
    result.violations       # on False: the op that cannot follow the longest linearizable prefix
    result.details          # decided_by (sweep / read-from / search), partitions, ops, and on
                            # "unknown" the undecided partitions and why (the ambiguous ops)
    result.outcome          # on False: the refuted partition's search outcome (the evidence)

`Linearizable(model)` is the same check as a `checker.Checker` (compose, the registry). The
models are `MODELS` by name (`make_model`), each a `Model`. Everything else in this package is
the engine's inside (docs/checker.md): the sweep (sweep.py, compiled as _fastsweep.c), the
read-from path (readfrom*.py, overwritten.py), the search (wgl.py), the grouping into
partitions (partitions.py, compiled as _fastgroup.c) and the choice of the op to blame
(blame.py), raced by engine.py.
"""

from __future__ import annotations

from zkjepsen.checker import Result
from zkjepsen.checker.linear.engine import BIG, Linearizable, check_partitions, prepare
from zkjepsen.checker.linear.models import ILLEGAL, MODELS, Model, make_model
from zkjepsen.checker.linear.wgl import LinOp, Outcome
from zkjepsen.history import History

__all__ = [
    "BIG",
    "ILLEGAL",
    "MODELS",
    "LinOp",
    "Linearizable",
    "Model",
    "Outcome",
    "check",
    "check_partitions",
    "make_model",
    "prepare",
]


def check(
    history: History,
    model: Model,
    time_limit: float | None = 60.0,
    memory_limit: int | None = 2 << 30,
) -> Result:
    """Is `history` linearizable with respect to `model`? Within `time_limit` seconds and
    `memory_limit` bytes of the process's RSS (None: no limit), else "unknown" saying why."""
    return Linearizable(model, time_limit, memory_limit).check(history)
