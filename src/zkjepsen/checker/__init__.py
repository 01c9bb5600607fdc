"""Checkers: `check(history) -> Result`, and `compose` to run several as one.

A verdict is True (valid), False (a violation was found) or "unknown" (the checker could not
decide: a budget ran out, it crashed, or the history did not exercise what it checks - a run
that tested nothing is never valid). `compose` merges with priority False > unknown > True, and
an exception inside a checker becomes `unknown` with the error, never a crash of the run.

A Result carries its findings as typed `Violation`s: shrink, scenarios, the matrix, the timeline
and the CLI read those, never a checker's own detail keys. `to_json` keeps each checker's detail
keys (stored runs and reports written before violations were typed stay readable) and adds a
"violations" list; `from_json` reads either back.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterator, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

from zkjepsen.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID
from zkjepsen.history import NEMESIS, History

# A verdict as a Result and results.json hold it (true, false, "unknown"): the stored form.
Valid = bool | Literal["unknown"]


class Verdict(enum.Enum):
    """A verdict, spelled once: its word (the console, JUnit, the site: `word`), its stored
    form (`valid`, what results.json keeps) and the exit status a command ends with."""

    VALID = True
    INVALID = False
    UNKNOWN = "unknown"

    @classmethod
    def of(cls, valid: object) -> Verdict:
        """The verdict of a stored form; anything but true or false is unknown (a run that
        could not decide, or a value no checker wrote)."""
        if valid is True:
            return cls.VALID
        return cls.INVALID if valid is False else cls.UNKNOWN

    @property
    def word(self) -> str:
        return self.name

    @property
    def valid(self) -> Valid:
        value: Valid = self.value
        return value

    @property
    def exit_code(self) -> int:
        return {Verdict.VALID: EXIT_VALID, Verdict.INVALID: EXIT_INVALID}.get(self, EXIT_UNKNOWN)


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


def _time(t: Any) -> int | None:
    """A window end as stored: ns, or None for "until the end of the test" (inf, "inf")."""
    return t if isinstance(t, int) and not isinstance(t, bool) else None


class Violation:
    """One finding that breaks the property a checker checks.

    `kind` names what broke, per checker (lock: belief, effect; counter: lost, read-out-of-
    bounds; ...); `clients` who was involved; [`start`, `end`] the window in history ns (`end`
    None: to the end of the test); `faults` the nemesis fault windows active in it (dicts with
    fault_id, f, targets, start, end); `evidence` whatever else explains it (tokens, ops).

    Immutable, compared on every field, hashed on the first four. Plain classes here and in
    Result (not dataclasses): `dataclasses` imports `inspect`, which `zkjepsen check` should
    not pay for at every start.
    """

    __slots__ = ("kind", "clients", "start", "end", "faults", "evidence")
    kind: str
    clients: tuple[Any, ...]
    start: int | None
    end: int | None
    faults: tuple[dict[str, Any], ...]
    evidence: Mapping[str, Any]

    def __init__(
        self,
        kind: str,
        clients: tuple[Any, ...] = (),
        start: int | None = None,
        end: int | None = None,
        faults: tuple[dict[str, Any], ...] = (),
        evidence: Mapping[str, Any] | None = None,
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "kind", kind)
        setattr_(self, "clients", clients)
        setattr_(self, "start", start)
        setattr_(self, "end", end)
        setattr_(self, "faults", faults)
        setattr_(self, "evidence", {} if evidence is None else evidence)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a Violation is immutable")

    __delattr__ = __setattr__  # type: ignore[assignment]

    def _fields(self) -> tuple[Any, ...]:
        return (self.kind, self.clients, self.start, self.end, self.faults, self.evidence)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((self.kind, self.clients, self.start, self.end))

    def __repr__(self) -> str:
        return (
            "Violation("
            + ", ".join(f"{n}={v!r}" for n, v in zip(self.__slots__, self._fields(), strict=True))
            + ")"
        )

    @property
    def fault_ids(self) -> set[Any]:
        return {f.get("fault_id") for f in self.faults}

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "clients": _jsonable(list(self.clients)),
            "start": self.start,
            "end": self.end,
            "faults": _jsonable(list(self.faults)),
            "evidence": _jsonable(dict(self.evidence)),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Violation:
        return cls(
            str(d.get("kind")),
            tuple(d.get("clients") or ()),
            _time(d.get("start")),
            _time(d.get("end")),
            tuple(f for f in d.get("faults") or () if isinstance(f, dict)),
            dict(d.get("evidence") or {}),
        )


class Result:
    """A verdict, its findings, and the checker's details.

    A composed result (`Compose`) has `parts`: each checker's own Result by name. `outcome` is
    what a renderer needs beyond the JSON (linearizability: the refuted partition's search
    outcome, for the counterexample HTML); it is not serialised. `counts`: kind -> found, when
    more than listed.
    """

    _FIELDS = ("valid", "details", "violations", "parts", "outcome", "counts")

    def __init__(
        self,
        valid: Valid,
        details: dict[str, Any] | None = None,
        violations: list[Violation] | None = None,
        parts: dict[str, Result] | None = None,
        outcome: Any = None,
        counts: dict[str, int] | None = None,
    ) -> None:
        self.valid = valid
        self.details = {} if details is None else details
        self.violations = [] if violations is None else violations
        self.parts = {} if parts is None else parts
        self.outcome = outcome
        self.counts = {} if counts is None else counts

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            "Result("
            + ", ".join(f"{n}={v!r}" for n, v in zip(self._FIELDS, self._fields(), strict=True))
            + ")"
        )

    def count(self, kind: str) -> int:
        """How many violations of `kind` were found (a checker lists at most its cap)."""
        return max(self.counts.get(kind, 0), sum(v.kind == kind for v in self.violations))

    @property
    def reason(self) -> str:
        """Why the verdict is unknown (or the checker's own summary), "" when it says none."""
        return str(self.details.get("error") or self.details.get("reason") or "")

    def named_violations(self) -> Iterator[tuple[str, Violation]]:
        """(checker name, violation) over this result and every part ("" for this one)."""
        for v in self.violations:
            yield "", v
        for name, part in self.parts.items():
            for sub, v in part.named_violations():
                yield (f"{name}.{sub}" if sub else name), v

    def to_json(self) -> dict[str, Any]:
        """What the runner writes to results.json. A checker's: {"valid", **details,
        "violations": [...]}; a composed one: {"valid", **details, name: part.to_json(), ...}."""
        if self.parts:
            return {
                "valid": self.valid,
                **_jsonable(self.details),
                **{name: p.to_json() for name, p in self.parts.items()},
            }
        out = {
            "valid": self.valid,
            **_jsonable(self.details),
            "violations": [v.to_json() for v in self.violations],
        }
        if self.counts:
            out["violation_counts"] = dict(self.counts)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> Result:
        """Read back a results.json table (composed or one checker's), also one stored before
        violations were typed: their findings are rebuilt from the old detail keys."""
        d = dict(d or {})
        valid = d.pop("valid", "unknown")
        if valid not in (True, False):
            valid = "unknown"
        if "violations" in d:
            raw = d.pop("violations")
            vs = [Violation.from_json(x) for x in raw or () if isinstance(x, dict)]
            counts = d.pop("violation_counts", None)
            counts = (
                {str(k): n for k, n in (counts or {}).items() if isinstance(n, int)}
                if isinstance(counts, dict)
                else {}
            )
            return cls(valid, d, vs, counts=counts)
        parts = {k: v for k, v in d.items() if isinstance(v, dict) and "valid" in v}
        if parts:
            rest = {k: v for k, v in d.items() if k not in parts}
            return cls(valid, rest, [], {k: cls.from_json(v) for k, v in parts.items()})
        return cls(valid, d, *_legacy_violations(valid, d))


def as_result(results: Result | Mapping[str, Any] | None) -> Result:
    """A Result, whether given one or a results.json table (None: an unknown, empty one)."""
    return results if isinstance(results, Result) else Result.from_json(results)


LEGACY_KEYS = (
    ("belief_overlaps", "belief_overlap_count", "belief"),
    ("effect_overlaps", "effect_overlap_count", "effect"),
    ("backwards", "backwards_count", "backwards"),
)


def _legacy_violations(
    valid: Valid, d: Mapping[str, Any]
) -> tuple[list[Violation], dict[str, Any], None, dict[str, int]]:
    """Findings of a results.json written before violations were typed, from the keys the
    readers used to hand-type: lock overlaps, fencing going backwards, counter losses.
    Returns the rest of a Result's fields: (violations, parts, outcome, counts)."""
    out: list[Violation] = []
    counts: dict[str, int] = {}
    if valid is not False:
        return out, {}, None, counts
    for key, count_key, kind in LEGACY_KEYS:
        found = [x for x in d.get(key) or () if isinstance(x, dict)]
        for x in found:
            window = x.get("window")
            w = window if isinstance(window, list) else [None, None]
            out.append(
                Violation(
                    kind,
                    tuple(x.get("clients") or ()),
                    _time(x.get("start", w[0])),
                    _time(x.get("end", w[-1])),
                    tuple(f for f in x.get("faults") or () if isinstance(f, dict)),
                    x,
                )
            )
        n = d.get(count_key)
        if isinstance(n, int) and n > 0:
            counts[kind] = n
            if not found:  # counted, none reported
                out.append(Violation(kind, evidence={"count": n}))
    if isinstance(d.get("lost"), int) and d["lost"] > 0:
        out.append(Violation("lost", evidence={"lost": d["lost"]}))
    return out, {}, None, counts


def unknown(reason: str, **details: Any) -> Result:
    """The verdict of a checker whose history lacks what it needs (or that could not decide)."""
    return Result("unknown", {**details, "reason": reason})


@runtime_checkable
class Checker(Protocol):
    def check(self, history: History) -> Result: ...


def merge_valid(verdicts: list[Valid]) -> Valid:
    """False beats unknown beats True; no verdicts is unknown (nothing was judged: a run no
    checker looked at is not valid)."""
    if any(v is False for v in verdicts):
        return False
    if any(v == "unknown" for v in verdicts) or not verdicts:
        return "unknown"
    return True


def safe_check(checker: Checker, history: History) -> Result:
    """Run a checker; an exception becomes `unknown` with the error (never a crash)."""
    try:
        r = checker.check(history)
    except Exception as e:  # noqa: BLE001 - a buggy checker must not take the run down
        # here, not at the top: only a crashed checker needs it (it loads linecache, tokenize)
        import traceback

        return Result(
            "unknown",
            {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(limit=5)},
        )
    if not isinstance(r, Result):
        return Result("unknown", {"error": f"checker returned {type(r).__name__}, not Result"})
    return r


class Compose:
    """Several named checkers as one; the result's `parts` hold each one's result by name."""

    def __init__(self, checkers: Mapping[str, Checker]) -> None:
        self.checkers = dict(checkers)

    def check(self, history: History) -> Result:
        if not self.checkers:  # a workload with no checker (ping, raw): nothing is judged
            return unknown(NO_CHECKER)
        results = {name: safe_check(c, history) for name, c in self.checkers.items()}
        return Result(merge_valid([r.valid for r in results.values()]), parts=results)


NO_CHECKER = "no checker judged this history (the workload has none): nothing was tested"


def compose(checkers: Mapping[str, Checker]) -> Compose:
    return Compose(checkers)


__all__ = [
    "Checker",
    "Compose",
    "Result",
    "Valid",
    "Verdict",
    "Violation",
    "as_result",
    "compose",
    "merge_valid",
    "safe_check",
    "unknown",
]


class OnlineFindings:
    """What every online checker (`checker/online.py`, `online_counter.py`) shares: `known`, how
    far each source's records have been read (a finding is decided only once every source it
    depends on has passed it), the violations `found`, each handed out once by `confirmed`, and
    `finish`: nothing more will come from any source."""

    known: dict[Any, float]
    found: list[Violation]
    _reported: int = 0

    def _decide(self) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        """The end of the history: nothing more will come from any source."""
        for s in [*self.known, NEMESIS]:
            self.known[s] = math.inf
        self._decide()

    def confirmed(self) -> list[Violation]:
        """Violations decided since the last call."""
        self._decide()
        out = self.found[self._reported :]
        self._reported = len(self.found)
        return out
