"""Reading a JSONL history fast and in bounded memory.

The file is read in blocks of about 4 MiB. A block's lines are decoded by ONE `json.loads` call
on `[[line1],[line2],...]`: the C decoder then shares each key string across the block and the
per-line Python overhead goes. Each line sits in its own brackets, so the block only decodes as
one single-value list per line if every line holds exactly one JSON value; a block that does not
(a malformed line, two values on a line, a blank line) is decoded again line by line, which names
the first bad line exactly as before.

`StreamedHistory` is a History that does not hold its ops: iterating it reads the file again
(one pass: what the lock and fencing checkers need), and only code that needs the whole list
(`ops`, `calls`, `len`) makes it load, once. Structural errors (a completion without an invoke,
...) are found during the same pass, so a checker fed by the stream sees only valid records and
a bad line stops it with BadInput (exit 254) before any verdict is printed.
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import chain
from typing import Any

from zkjepsen.errors import BadInput
from zkjepsen.history import NEMESIS, TYPES, History, Op, check_record
from zkjepsen.store.regular import MAX_DEPTH, line_depth_ok, open_regular, parse_json

try:  # the compiled fast path (_fastjsonl.c), built with the package (setup.py) given a C compiler
    from zkjepsen.history._fastjsonl import scan as _scan
except ImportError:  # pragma: no cover - the pure-Python path below gives the same records
    _scan = None  # type: ignore[assignment]  # None: not built


BLOCK = 1 << 22
_KNOWN = frozenset(("index", "time", "process", "type", "f", "key", "value", "client"))


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a million short-lived or long-lived objects
    are made and no cycles: each full collection walks every live object, which made reading
    and checking long histories quadratic. Reference counting still frees everything."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class Structure:
    """Pairing rules checked record by record (History.validate's rules)."""

    def __init__(self) -> None:
        self.pending: set[Any] = set()
        self.retired: set[Any] = set()

    def feed(self, op: Op, line: int) -> None:
        t = op.type
        p = op.process
        if t == "event" or p == NEMESIS:
            return
        if t == "invoke":
            if p in self.pending:
                raise BadInput(
                    f"history line {line}: process {p!r} invokes again before "
                    "its previous op completed"
                )
            if p in self.retired:
                raise BadInput(
                    f"history line {line}: process {p!r} invokes again after an "
                    "op with unknown outcome (info); it needs a new process id"
                )
            self.pending.add(p)
        else:
            if p not in self.pending:
                raise BadInput(
                    f"history line {line}: {t} of process {p!r} without a pending invoke"
                )
            self.pending.discard(p)
            if t == "info":
                self.retired.add(p)


def _decode_lines(lines: list[bytes], first: int) -> tuple[list[Any], list[int]]:
    """Line by line, skipping blank lines; BadInput names the first line that is not exactly
    one JSON value."""
    values, nums = [], []
    for n, raw in enumerate(lines, first):
        text = raw.strip()
        if not text:
            continue
        try:
            values.append(json.loads(text))
        except json.JSONDecodeError as e:
            reason = (
                "more than one JSON value on the line"
                if e.msg == "Extra data"
                else f"{e.msg} at column {e.colno}"
            )
            raise BadInput(f"history line {n}: not valid JSON ({reason})") from None
        except UnicodeDecodeError as e:
            raise BadInput(f"history line {n}: not UTF-8 text ({e.reason})") from None
        nums.append(n)
    return values, nums


def _fast_loads() -> Callable[[bytes], Any]:
    """orjson's decoder, several times faster than json's (json stays the reference, see
    below). Imported on first use, not with the module: orjson imports dataclasses, datetime
    and uuid, a third of `zkjepsen check`'s start-up, and the compiled scanner (_fastjsonl.c)
    reads most files without it."""
    try:
        # here, not at the top: see the docstring (`zkjepsen check`'s start-up)
        from orjson import loads
    except ImportError:  # pragma: no cover - orjson is a dependency; json alone is still exact
        return json.loads
    return loads


# Digits as "0", anything else as ",": a run of 19 zeros is an integer orjson may not read exactly
# (past 64 bits it gives a float: 2**70 + 1 would read as 2**70), so such a block goes to json.
_DIGITS = bytes(ord("0") if 48 <= b <= 57 else ord(",") for b in range(256))
_LONG = b"0" * 19


def _decode_block(lines: list[bytes], first: int) -> tuple[list[Any], range | list[int]]:
    """The block's values and their line numbers. Fast path: one decoder call, accepted only
    when it yields exactly one value per line (a blank line gives `[]`, two values `[a, b]`,
    a value spread over lines changes the count); anything else goes line by line. Integers
    stay exact whatever their size (orjson only where none may pass 64 bits)."""
    block = b"[[" + b"],[".join(lines) + b"]]"
    loads = json.loads if _LONG in block.translate(_DIGITS) else _fast_loads()
    try:
        wrapped = loads(block)
        if len(wrapped) == len(lines):
            # unpacking `(v,)` raises ValueError on a line that gave no value or two
            return [v for (v,) in wrapped], range(first, first + len(lines))
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        pass  # orjson's error is a ValueError too
    # Line by line with json, which also decides what orjson refuses and json accepts
    # (NaN, integers beyond 64 bits, lone surrogate escapes): the reader accepts what it did.
    return _decode_lines(lines, first)


# A record as the checkers that read one pass use it: no Op, no extra fields.
# (index, time, process, type, f, key, value, client)
Record = tuple[int, int, Any, str, str, Any, Any, Any]


def iter_records(
    path: str | os.PathLike[str], fast: bool = True
) -> Iterator[tuple[list[Record], list[Any], Any, bool]]:
    """The file a block at a time: (records as `Record` tuples, what the records' other fields
    come from, their 1-based line numbers, whether that is their extras). Every record and the
    pairing are validated on the way (BadInput naming the line).

    With `fast` and the compiled scanner built, a block goes through it first: it yields each
    record's extra fields (a dict, or None) and never decides what is valid: it gives up on
    anything unusual (returning None), and the block is then read by the Python path below,
    which yields the decoded dicts and words any error."""
    scan = _scan if fast else None
    structure = Structure()
    pending, retired = structure.pending, structure.retired
    first = 1  # line number of the block's first line
    for chunk in _line_blocks(path):
        if scan is not None:
            done = scan(chunk, pending, retired)
            if done is not None:
                recs, extras, pending, retired = done
                structure.pending, structure.retired = pending, retired
                n = len(recs)
                yield recs, extras, range(first, first + n), True
                first += n
                continue
        lines = chunk.split(b"\n")
        lines.pop()  # what follows the last newline (nothing)
        if not line_depth_ok(chunk):
            refuse_deep_lines(lines, first)
        values, nums = _decode_block(lines, first)
        first += len(lines)
        yield _checked_records(values, nums, structure.feed, pending, retired), values, nums, False


def refuse_deep_lines(lines: list[bytes], first: int) -> None:
    """BadInput naming the first line nested deeper than MAX_DEPTH levels (a line with fewer
    `[` and `{` cannot be: only the others are parsed here, before any decoder recurses)."""
    for n, raw in enumerate(lines, first):
        if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:
            try:
                parse_json(raw, f"history line {n}")
            except ValueError:  # not JSON (or not UTF-8): the decoder words it
                pass


def _line_blocks(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """The file in blocks of whole lines (about BLOCK bytes, each ending with a newline; a last
    line without one gets it). Opened through the one opener: a regular file only."""
    rest = b""
    fh = open_regular(path, "history")
    with fh:
        while True:
            try:
                chunk = fh.read(BLOCK)
            except OSError as e:
                raise BadInput(f"cannot read history {str(path)!r}: {e.strerror}") from None
            if chunk:
                chunk = rest + chunk
                cut = chunk.rfind(b"\n") + 1
                chunk, rest = chunk[:cut], chunk[cut:]
                if not chunk:
                    continue  # a line longer than a block: read on
            elif rest:
                chunk, rest = rest + b"\n", b""  # the last line had no newline
            else:
                return
            yield chunk


def _checked_records(
    values: list[Any], nums: range | list[int], feed: Any, pending: set, retired: set
) -> list[Record]:
    """A decoded block's records as `Record` tuples, each validated and paired (`pending` and
    `retired`: the processes with an op in flight, and those an `info` ended; `feed`: the
    general check, which raises BadInput naming the line and the rule)."""
    recs: list[Record] = []
    append = recs.append
    # Validation and Structure.feed inlined: this loop runs once per record. Anything
    # unusual takes the general path, which also words the error.
    for d, n in zip(values, nums, strict=True):
        try:
            i, t, p, typ, f = d["index"], d["time"], d["process"], d["type"], d["f"]
            get = d.get
            r = (i, t, p, typ, f, get("key"), get("value"), get("client"))
        except (KeyError, TypeError, AttributeError):
            r = None
        if (
            r is None
            or type(i) is not int
            or type(t) is not int
            or t < 0
            or type(typ) is not str
            or typ not in TYPES
            or type(f) is not str
            or not (type(p) is int or type(p) is str)
            or not (r[7] is None or type(r[7]) is int)
        ):
            op = check_record(d, n)  # raises, naming the line and the field
            r = (op.index, op.time, op.process, op.type, op.f, op.key, op.value, op.client)
            p, typ = op.process, op.type
        if typ != "event" and p != NEMESIS:
            if typ == "invoke":
                if p in pending or p in retired:
                    feed(Op(*r), n)  # raises, naming the rule
                pending.add(p)
            else:
                if p not in pending:
                    feed(Op(*r), n)  # raises
                pending.discard(p)
                if typ == "info":
                    retired.add(p)
        append(r)
    return recs


def iter_blocks(path: str | os.PathLike[str]) -> Iterator[tuple[list[Op], list[int]]]:
    """The file's ops, a block at a time, with their 1-based line numbers (validated as
    `iter_records` does)."""
    for recs, values, nums, are_extras in iter_records(path):
        ops: list[Op] = []
        append = ops.append
        if are_extras:
            for r, extra in zip(recs, values, strict=True):
                append(Op(*r, {} if extra is None else extra))
        else:
            for r, d in zip(recs, values, strict=True):
                known = 5 + (r[5] is not None) + (r[6] is not None) + (r[7] is not None)
                extra = {x: y for x, y in d.items() if x not in _KNOWN} if len(d) > known else {}
                append(Op(*r, extra))
        yield ops, list(nums)


class StreamedHistory(History):
    """A JSONL history read on demand (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:  # noqa: D107 - no super: lazy
        self.path = path
        self._ops: list[Op] | None = None
        self._lines: list[int] | None = None

    def _load(self) -> tuple[list[Op], list[int]]:
        ops: list[Op] = []
        lines: list[int] = []
        with paused_gc():
            for block, nums in iter_blocks(self.path):
                ops += block
                lines += nums
        self._ops, self._lines = ops, lines
        return ops, lines

    # Read on first use; writeable as History's attributes are (assigning one replaces it).
    @property
    def ops(self) -> list[Op]:
        return self._ops if self._ops is not None else self._load()[0]

    @ops.setter
    def ops(self, value: list[Op]) -> None:
        self._ops = value

    @property
    def lines(self) -> list[int]:
        return self._lines if self._lines is not None else self._load()[1]

    @lines.setter
    def lines(self, value: list[int]) -> None:
        self._lines = value

    def __iter__(self) -> Iterator[Op]:
        if self._ops is not None:
            return iter(self._ops)
        return (op for block, _ in iter_blocks(self.path) for op in block)

    def records(self) -> Iterator[Record]:
        """The records as `Record` tuples, read in one pass (no Op built)."""
        if self._ops is not None:
            return as_records(self._ops)
        return chain.from_iterable(block[0] for block in iter_records(self.path))

    def validate(self) -> None:
        """Reading validates: loading is enough."""
        self.ops  # noqa: B018 - loading raises BadInput on the first bad line


def as_records(ops: Iterable[Op]) -> Iterator[Record]:
    """Ops as `Record` tuples (what a one-pass checker reads from a history in memory)."""
    for op in ops:
        yield (op.index, op.time, op.process, op.type, op.f, op.key, op.value, op.client)


def records(history: Iterable[Op]) -> Iterator[Record]:
    """A history's records as tuples: straight from the file for a streamed history."""
    if isinstance(history, StreamedHistory):
        return history.records()
    return as_records(history)


def read_jsonl_all(path: str | os.PathLike[str]) -> History:
    """The whole history in memory, validated (what `history.read_jsonl` returns)."""
    h = StreamedHistory(path)
    h.validate()
    return History(h.ops, h.lines)
