"""The history: one record per observed event, as JSON Lines (docs/architecture.md, "The history").

A record (`Op`) carries `index`, `time` (ns since test start, CLOCK_MONOTONIC), `process` (an int,
or "nemesis"), `type` (invoke/ok/fail/info/event), `f`, and optionally `key`, `value` and `client`
(the logical client: a process whose op ended `info` never invokes again and gets a new process
id, but keeps its client number). Any other field (`error`, `node`, ...) is kept in `extra` and
written back unchanged.

Pairing rule: each `invoke` is completed by the next `ok`/`fail`/`info` of the same process; an
invoke with no completion is treated like one completed by `info` (outcome unknown). Ops of process
"nemesis" and `event` records are never paired.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from zkjepsen.errors import BadInput
from zkjepsen.store.regular import MAX_DEPTH, open_regular, parse_json

TYPES = frozenset({"invoke", "ok", "fail", "info", "event"})
NEMESIS = "nemesis"
_KNOWN = ("index", "time", "process", "type", "f", "key", "value", "client")


class Op:
    """One history record. `extra` holds any field this class does not name.

    A plain class with slots rather than a dataclass: `dataclasses` imports `inspect`, a
    tenth of `zkjepsen check`'s start-up."""

    __slots__ = ("index", "time", "process", "type", "f", "key", "value", "client", "extra")

    def __init__(
        self,
        index: int,
        time: int,
        process: int | str,
        type: str,
        f: str,  # noqa: A002
        key: Any = None,
        value: Any = None,
        client: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.index = index
        self.time = time
        self.process = process
        self.type = type
        self.f = f
        self.key = key
        self.value = value
        self.client = client
        self.extra = {} if extra is None else extra

    def _fields(self) -> tuple[Any, ...]:
        return (
            self.index,
            self.time,
            self.process,
            self.type,
            self.f,
            self.key,
            self.value,
            self.client,
            self.extra,
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment] # mutable, as the dataclass was

    def __repr__(self) -> str:
        names = self.__slots__
        return f"Op({', '.join(f'{n}={v!r}' for n, v in zip(names, self._fields(), strict=True))})"

    @property
    def actor(self) -> int | str:
        """Who to name in a report: the logical client when recorded, else the process."""
        return self.process if self.client is None else self.client

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "index": self.index,
            "time": self.time,
            "process": self.process,
            "type": self.type,
            "f": self.f,
        }
        if self.key is not None:
            d["key"] = self.key
        if self.value is not None:
            d["value"] = self.value
        if self.client is not None:
            d["client"] = self.client
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Op:
        extra = {k: v for k, v in d.items() if k not in _KNOWN}
        return cls(
            d["index"],
            d["time"],
            d["process"],
            d["type"],
            d["f"],
            d.get("key"),
            d.get("value"),
            d.get("client"),
            extra,
        )


class Call(NamedTuple):
    """An invocation and its completion (None: never completed, i.e. unknown outcome)."""

    invoke: Op
    complete: Op | None

    @property
    def status(self) -> str:
        """ "ok", "fail" or "info" (a missing completion counts as "info")."""
        return "info" if self.complete is None else self.complete.type

    @property
    def end(self) -> int | None:
        """Completion time, or None when the outcome is unknown (it may take effect any time)."""
        c = self.complete
        return None if c is None or c.type == "info" else c.time


class FaultWindow(NamedTuple):
    fault_id: Any
    f: str
    targets: Any
    start: int
    end: int | None


def fast_record(d: Any) -> Op | None:
    """The common case in one go: a well-formed record. None: let check_record say why not."""
    try:
        i, t, p, typ, f = d["index"], d["time"], d["process"], d["type"], d["f"]
    except (KeyError, TypeError):
        return None
    if (
        type(i) is not int
        or type(t) is not int
        or t < 0
        or type(typ) is not str
        or typ not in TYPES
        or type(f) is not str
        or not (type(p) is int or type(p) is str)
    ):
        return None
    c = d.get("client")
    if c is not None and type(c) is not int:
        return None
    known = 5 + ("key" in d) + ("value" in d) + ("client" in d)
    extra = {k: v for k, v in d.items() if k not in _KNOWN} if len(d) > known else {}
    return Op(i, t, p, typ, f, d.get("key"), d.get("value"), c, extra)


def check_record(d: Any, line: int) -> Op:
    """Validate one decoded record; raise BadInput naming the line and the reason."""
    if not isinstance(d, dict):
        raise BadInput(f"history line {line}: expected a JSON object, got {type(d).__name__}")
    for name in ("index", "time", "process", "type", "f"):
        if name not in d:
            raise BadInput(f"history line {line}: missing field {name!r}")
    if not isinstance(d["index"], int) or isinstance(d["index"], bool):
        raise BadInput(f"history line {line}: 'index' must be an integer")
    if not isinstance(d["time"], int) or isinstance(d["time"], bool) or d["time"] < 0:
        raise BadInput(f"history line {line}: 'time' must be a non-negative integer (ns)")
    p = d["process"]
    if not (isinstance(p, str) or (isinstance(p, int) and not isinstance(p, bool))):
        raise BadInput(f"history line {line}: 'process' must be an integer or a name")
    if not isinstance(d["type"], str) or d["type"] not in TYPES:
        raise BadInput(
            f"history line {line}: unknown type {d['type']!r} "
            f"(expected one of {', '.join(sorted(TYPES))})"
        )
    if not isinstance(d["f"], str):
        raise BadInput(f"history line {line}: 'f' must be a string")
    c = d.get("client")
    if c is not None and (not isinstance(c, int) or isinstance(c, bool)):
        raise BadInput(f"history line {line}: 'client' must be an integer")
    return Op.from_dict(d)


class History:
    """An ordered list of ops plus the pairing of invocations and completions."""

    def __init__(self, ops: Iterable[Op], lines: list[int] | None = None) -> None:
        self.ops: list[Op] = list(ops)
        # Source line of each op (1-based), so structural errors can name a line.
        self.lines = lines if lines is not None else list(range(1, len(self.ops) + 1))

    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def calls(self, validate: bool = True) -> list[Call]:
        """Pair every client invoke with its completion, in invocation order.

        With `validate`, a completion without a pending invoke or a second invoke while one is
        pending raises BadInput naming the line; otherwise such records are skipped.
        """
        new = tuple.__new__
        return [new(Call, pair) for pair in zip(*self.pairs(validate), strict=True)]

    def pairs(self, validate: bool = True) -> tuple[list[Op], list[Op | None]]:
        """`calls` as two lists, the invokes and their completions (None: never completed),
        for a caller that keeps few of them and builds a Call only for those."""
        # Completions are filled in by position and the Calls built at the end in one go:
        # this runs once per check over every record, and NamedTuple construction through its
        # Python-level __new__ was most of its time.
        pending: dict[Any, int] = {}
        invokes: list[Op] = []
        completions: list[Op | None] = []
        for i, op in enumerate(self.ops):
            t = op.type
            p = op.process
            if t == "event" or p == NEMESIS:
                continue
            if t == "invoke":
                if p in pending:
                    if validate:
                        raise BadInput(
                            f"history line {self.lines[i]}: process {p!r} "
                            "invokes again before its previous op completed"
                        )
                    continue
                pending[p] = len(invokes)
                invokes.append(op)
                completions.append(None)
            else:
                j = pending.pop(p, None)
                if j is None:
                    if validate:
                        raise BadInput(
                            f"history line {self.lines[i]}: {t} of process "
                            f"{p!r} without a pending invoke"
                        )
                    continue
                completions[j] = op
        return invokes, completions

    def validate(self) -> None:
        """Raise BadInput for structural errors: a completion without an invoke, a second invoke
        while one is pending, or an invoke by a process retired by an `info` completion."""
        pending: set[Any] = set()
        retired: set[Any] = set()
        for op, line in zip(self.ops, self.lines, strict=True):
            t = op.type
            p = op.process
            if t == "event" or p == NEMESIS:
                continue
            if t == "invoke":
                if p in pending:
                    raise BadInput(
                        f"history line {line}: process {p!r} invokes again before "
                        "its previous op completed"
                    )
                if p in retired:
                    raise BadInput(
                        f"history line {line}: process {p!r} invokes again after an "
                        "op with unknown outcome (info); it needs a new process id"
                    )
                pending.add(p)
            else:
                if p not in pending:
                    raise BadInput(
                        f"history line {line}: {t} of process {p!r} without a pending invoke"
                    )
                pending.discard(p)
                if t == "info":
                    retired.add(p)

    def to_jsonl(self, path: str | os.PathLike[str]) -> None:
        """Write the whole history atomically (temp file + rename: never half-written)."""
        tmp = f"{os.fspath(path)}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            for op in self.ops:
                fh.write(json.dumps(op.to_dict(), separators=(",", ":")) + "\n")
        os.replace(tmp, path)


# The C scanner without json.loads' per-call wrapper (an attribute typeshed does not declare).
_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def parse_jsonl_lines(lines: Iterable[str]) -> History:
    """Parse JSON Lines text; blank lines are skipped; errors name the 1-based line."""
    ops: list[Op] = []
    nums: list[int] = []
    for n, text in enumerate(lines, 1):
        text = text.strip()
        if not text:
            continue
        if text.count("[") + text.count("{") > MAX_DEPTH:  # maybe nested too deep: parse it
            try:  # safely first (BadInput if it is)
                parse_json(text, f"history line {n}")
            except ValueError:
                pass  # not JSON: said below
        try:
            d, end = _scan(text, 0)
            if end != len(text):
                raise ValueError("extra data")
        except (StopIteration, ValueError):
            try:  # json.loads says precisely what is wrong
                json.loads(text)
                reason = "more than one JSON value on the line"
            except json.JSONDecodeError as e:
                reason = f"{e.msg} at column {e.colno}"
            raise BadInput(f"history line {n}: not valid JSON ({reason})") from None
        op = fast_record(d)
        ops.append(op if op is not None else check_record(d, n))
        nums.append(n)
    return History(ops, nums)


def read_jsonl(path: str | os.PathLike[str]) -> History:
    """Read and validate a JSONL history file (BadInput on any malformed line)."""
    try:
        with open_regular(path, "history", text=True) as fh:
            h = parse_jsonl_lines(fh)
    except OSError as e:
        raise BadInput(f"cannot read history {str(path)!r}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise BadInput(f"history {str(path)!r} is not UTF-8 text ({e.reason})") from None
    h.validate()
    return h


class HistoryWriter:
    """Append-only JSONL writer: each record is flushed as soon as it is written, so a crash
    leaves every completed line on disk. Indices are assigned here when the caller gives none."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._next = 0

    def write(self, op: Op | dict[str, Any]) -> None:
        d = op.to_dict() if isinstance(op, Op) else dict(op)
        if d.get("index") is None:
            d["index"] = self._next
        self._next = max(self._next, d["index"] + 1)
        self._fh.write(json.dumps(d, separators=(",", ":")) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fault_windows(history: History | Iterable[Op]) -> list[FaultWindow]:
    """Faults as (fault_id, f, targets, start_ns, end_ns or None if never ended).

    A nemesis op with value {"fault_id", "phase": "start"|"end", "targets"} opens/closes a
    window; a nemesis `info` without that structure (e.g. Knossos-style :start/:stop ops) is
    an instantaneous window at its time.
    """
    open_: dict[Any, FaultWindow] = {}
    out: list[FaultWindow] = []
    for op in history:
        if op.process != NEMESIS or op.type == "invoke":
            continue
        v = op.value if isinstance(op.value, dict) else None
        if v is None or "phase" not in v:
            out.append(FaultWindow(None, op.f, op.value, op.time, op.time))
            continue
        fid = v.get("fault_id")
        if v["phase"] == "start":
            open_[fid] = FaultWindow(fid, op.f, v.get("targets"), op.time, None)
        elif fid in open_:
            w = open_.pop(fid)
            out.append(w._replace(end=op.time))
    out.extend(open_.values())
    out.sort(key=lambda w: w.start)
    return out


def faults_during(windows: list[FaultWindow], start: int, end: int | None) -> list[dict[str, Any]]:
    """The faults whose window intersects [start, end] (end None = until the end of the test)."""
    hi = float("inf") if end is None else end
    return [w._asdict() for w in windows if w.start <= hi and (w.end is None or w.end >= start)]
