"""A stored file's schema, declared once and checked before any command acts on the file.

A file the tool wrote comes back to it (`merge`, `--resume`, `analyze`...) copied, hand-edited or
made up. Each such file declares what it holds as a tree of kinds (a table of fields, a list of
tables, a whole number in a range...); `check` walks a parsed document against it and refuses the
first thing that does not fit in one sentence naming the file and the field (exit 254), so that
no reader further on meets a string where it expects a number (a TypeError, reported as a bug) or
renders a value no run could have written (`valid: "maybe"`).

Rules that relate fields (a run listed twice, a seed the matrix never ran) are the file's own
code; they raise `Wrong` as the kinds do, so every refusal reads alike. A new record (a sweep's,
a hunt's) declares its `Table` here and calls `check` the same way: report/manifest.py is the
example.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zkjepsen.errors import BadInput


class Wrong(Exception):
    """A value that does not fit: where (`runs[3].seed`), what it is, what it should be."""

    def __init__(self, at: str, value: Any, expected: str, missing: bool = False) -> None:
        super().__init__(at, expected)
        self.at, self.value, self.expected, self.missing = at, value, expected, missing


def shown(value: Any) -> str:
    """A value as a sentence shows it: JSON, cut short."""
    try:
        text = json.dumps(value, default=str)
    except (ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _join(at: str, name: str | int) -> str:
    if isinstance(name, int):
        return f"{at}[{name}]"
    return f"{at}.{name}" if at else name


class Kind:
    """A kind of value; `expected` says it in a few words."""

    expected = "a value"

    def check(self, value: Any, at: str) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class Int(Kind):
    lo: int | None = None
    hi: int | None = None

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "a whole number" + _range(self.lo, self.hi)

    def check(self, value: Any, at: str) -> None:
        if type(value) is not int or not _within(value, self.lo, self.hi):
            raise Wrong(at, value, self.expected)


@dataclass(frozen=True)
class Num(Kind):
    """A finite number (a whole one too); `above`: strictly more than it."""

    lo: float | None = None
    hi: float | None = None
    above: float | None = None

    @property
    def expected(self) -> str:  # type: ignore[override]
        if self.above is not None:
            return f"a number above {self.above:g}" + _range(None, self.hi)
        return "a number" + _range(self.lo, self.hi)

    def check(self, value: Any, at: str) -> None:
        ok = type(value) in (int, float) and math.isfinite(value)
        ok = ok and _within(value, self.lo, self.hi)
        if not ok or (self.above is not None and value <= self.above):
            raise Wrong(at, value, self.expected)


@dataclass(frozen=True)
class Str(Kind):
    empty: bool = False
    choices: tuple[str, ...] = ()

    @property
    def expected(self) -> str:  # type: ignore[override]
        if self.choices:
            return "one of " + ", ".join(self.choices)
        return "a string" if self.empty else "a non-empty string"

    def check(self, value: Any, at: str) -> None:
        if type(value) is not str or (not self.empty and not value.strip()):
            raise Wrong(at, value, self.expected)
        if self.choices and value not in self.choices:
            raise Wrong(at, value, self.expected)


@dataclass(frozen=True)
class OneOf(Kind):
    """Exactly one of these JSON values (`true`, `false`, `"unknown"`): 1 is not `true`."""

    values: tuple[Any, ...]

    @property
    def expected(self) -> str:  # type: ignore[override]
        return " or ".join(json.dumps(v) for v in self.values)

    def check(self, value: Any, at: str) -> None:
        if not any(type(value) is type(v) and value == v for v in self.values):
            raise Wrong(at, value, self.expected)


@dataclass(frozen=True)
class Opt(Kind):
    """`kind`, or null."""

    kind: Kind

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"{self.kind.expected} or null"

    def check(self, value: Any, at: str) -> None:
        if value is not None:
            self.kind.check(value, at)


@dataclass(frozen=True)
class Scalar(Kind):
    """A string, a number or a boolean (a `--param` value)."""

    expected = "a string, a number or true/false"

    def check(self, value: Any, at: str) -> None:
        if type(value) not in (str, int, float, bool) or (
            type(value) is float and not math.isfinite(value)
        ):
            raise Wrong(at, value, self.expected)


@dataclass(frozen=True)
class Anything(Kind):
    """Any JSON value (checked by its own reader)."""

    def check(self, value: Any, at: str) -> None:
        return None


@dataclass(frozen=True)
class ListOf(Kind):
    item: Kind
    min: int = 0
    max: int | None = None
    unique: bool = False

    @property
    def expected(self) -> str:  # type: ignore[override]
        size = f" of at least {self.min}" if self.min else ""
        return f"a list{size} of {self.item.expected}s" + (", each once" if self.unique else "")

    def check(self, value: Any, at: str) -> None:
        if type(value) is not list or len(value) < self.min:
            raise Wrong(at, value, self.expected)
        if self.max is not None and len(value) > self.max:
            raise Wrong(at, value, self.expected + f", at most {self.max}")
        for i, item in enumerate(value):
            self.item.check(item, _join(at, i))
        if self.unique:
            seen: list[Any] = []
            for i, item in enumerate(value):
                if item in seen:
                    raise Wrong(_join(at, i), item, "a value not given before in the list")
                seen.append(item)


@dataclass(frozen=True)
class MapOf(Kind):
    """A table whose every key is a name and every value of one kind."""

    value: Kind

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"a table of {self.value.expected}s"

    def check(self, value: Any, at: str) -> None:
        if type(value) is not dict:
            raise Wrong(at, value, self.expected)
        for k, v in value.items():
            if not k.strip():
                raise Wrong(at, value, "a table whose keys are names")
            self.value.check(v, _join(at, k))


@dataclass(frozen=True)
class Field:
    kind: Kind
    required: bool = True


@dataclass(frozen=True)
class Table(Kind):
    """A table of named fields; `rest`: the kind of any other key (None: none allowed)."""

    fields: Mapping[str, Field | Kind]
    rest: Kind | None = None
    what: str = "a table"

    @property
    def expected(self) -> str:  # type: ignore[override]
        return self.what

    def check(self, value: Any, at: str) -> None:
        if type(value) is not dict:
            raise Wrong(at, value, self.expected)
        for name, spec in self.fields.items():
            f = spec if isinstance(spec, Field) else Field(spec)
            if name not in value:
                if f.required:
                    raise Wrong(_join(at, name), None, f.kind.expected, missing=True)
                continue
            f.kind.check(value[name], _join(at, name))
        for name, v in value.items():
            if name in self.fields:
                continue
            if self.rest is None:
                raise Wrong(_join(at, name), v, "no such field (zkjepsen writes none)")
            self.rest.check(v, _join(at, name))


def _within(v: float, lo: float | None, hi: float | None) -> bool:
    return (lo is None or v >= lo) and (hi is None or v <= hi)


def _range(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f" from {lo:g} to {hi:g}"
    if lo is not None:
        return f" of at least {lo:g}"
    return f" of at most {hi:g}" if hi is not None else ""


def refusal(path: str | os.PathLike[str], wrong: Wrong, fix: str) -> BadInput:
    """The one sentence for a value that does not fit, naming the file and the field."""
    where = os.fspath(path)
    if not wrong.at:
        return BadInput(f"{where} holds {shown(wrong.value)}, not {wrong.expected}; {fix}")
    if wrong.missing:
        return BadInput(f"{where} has no field {wrong.at!r} ({wrong.expected}); {fix}")
    return BadInput(
        f"{where}: field {wrong.at!r} is {shown(wrong.value)}, not {wrong.expected}; {fix}"
    )


def check(doc: Any, schema: Kind, path: str | os.PathLike[str], fix: str) -> None:
    """Refuse `doc` (read from `path`) in one sentence unless it fits `schema`."""
    try:
        schema.check(doc, "")
    except Wrong as w:
        raise refusal(path, w, fix) from None
