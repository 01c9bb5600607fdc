"""Checkers: `check(history) -> Result`, and `compose` to run several as one.

A verdict is True (valid), False (a violation was found) or "unknown" (the checker could not
decide: a budget ran out, or it crashed). `compose` merges with priority False > unknown > True,
and an exception inside a checker becomes `unknown` with the error, never a crash of the run.
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from zkjepsen.history import History

Verdict = bool | Literal["unknown"]


def _jsonable(v: Any) -> Any:
    """Make details JSON-serialisable: tuples/sets become lists, odd keys strings,
    infinities strings (JSON has no inf)."""
    if isinstance(v, dict):
        return {k if isinstance(k, str) else str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted((_jsonable(x) for x in v), key=repr)
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    if hasattr(v, "to_json"):
        return v.to_json()
    if hasattr(v, "_asdict"):
        return _jsonable(v._asdict())
    return repr(v)


@dataclass
class Result:
    valid: Verdict
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """{"valid": ..., **details}, JSON-serialisable (what the runner writes to results.json)."""
        return {"valid": self.valid, **_jsonable(self.details)}


@runtime_checkable
class Checker(Protocol):
    def check(self, history: History) -> Result: ...


class Noop:
    """The default checker: says nothing, so it is valid."""

    def check(self, history: History) -> Result:
        return Result(True, {})


def merge_valid(verdicts: list[Verdict]) -> Verdict:
    """False beats unknown beats True; no verdicts is True."""
    if any(v is False for v in verdicts):
        return False
    if any(v == "unknown" for v in verdicts):
        return "unknown"
    return True


def safe_check(checker: Checker, history: History) -> Result:
    """Run a checker; an exception becomes `unknown` with the error (never a crash)."""
    try:
        r = checker.check(history)
    except Exception as e:  # noqa: BLE001 - a buggy checker must not take the run down
        return Result("unknown", {"error": f"{type(e).__name__}: {e}",
                                  "traceback": traceback.format_exc(limit=5)})
    if not isinstance(r, Result):
        return Result("unknown", {"error": f"checker returned {type(r).__name__}, not Result"})
    return r


class Compose:
    """Several named checkers as one; details hold each one's result under its name."""

    def __init__(self, checkers: Mapping[str, Checker]) -> None:
        self.checkers = dict(checkers)

    def check(self, history: History) -> Result:
        results = {name: safe_check(c, history) for name, c in self.checkers.items()}
        return Result(merge_valid([r.valid for r in results.values()]),
                      {name: r.to_json() for name, r in results.items()})


def compose(checkers: Mapping[str, Checker]) -> Compose:
    return Compose(checkers)


__all__ = ["Checker", "Compose", "Noop", "Result", "Verdict", "compose", "merge_valid",
           "safe_check"]
