"""Readers for external history formats, so histories from other tools can be checked.

Every reader returns a `History` of `Op` records in FILE ORDER: `index` is the position in the
file and `time` is that same position (these formats order events by their position; the source's
own `:time`, when present, is kept in `extra["source_time"]` but not trusted for ordering, as
Knossos does). Keywords become plain strings without the colon (`:cas` -> "cas"), EDN vectors and
lists become lists, `nil` becomes None, process `:nemesis` becomes "nemesis". How an op's outcome
is interpreted (`fail` = did not happen, or asserted "did not apply" for porcupine's etcd model;
`info` = unknown) is the model's business, not the reader's: see checker/linear/models.py.

Formats (`--format`):
- `jsonl`: our own format, streamed (history/stream.py).
- `jepsen-log`: lines of a Jepsen log, `... jepsen.util - <process> <:type> <:f> <value>`, tab or
  space separated (porcupine's etcd data). Other log lines are skipped, junk lines are bad input
  (see read_jepsen_log). The value is EDN (`nil`, `3`, `[1 4]`, `:timed-out`).
- `porcupine-kv` and `edn`: EDN, either one vector/list of op maps or a bare sequence of op maps
  (porcupine's kv data is one map per line). `;` comments, commas, `#_` discards and tags are
  handled. Op map keys `:process :type :f :key :value :index :time`; others go to `extra`.
- `json`: a JSON array of op objects with string values (elle-cli's Knossos histories).
- `auto`: by content: a first form `[{"`... is json, `{"` jsonl, `jepsen.util` jepsen-log,
  anything else EDN.
"""

from __future__ import annotations

import bisect
import json
import os
import re
from typing import Any

from zkjepsen.errors import BadInput
from zkjepsen.history import History, Op
from zkjepsen.history.stream import StreamedHistory, paused_gc
from zkjepsen.store.regular import MAX_DEPTH, check_path, open_regular, parse_json

try:  # the compiled reader of usual lines (_fastlog.c), built with the package given a C compiler
    from zkjepsen.history._fastlog import scan as _scan_log
except ImportError:  # pragma: no cover - the regular expression reads the same
    _scan_log = None  # type: ignore[assignment]  # None: not built

FORMATS = ("auto", "jsonl", "jepsen-log", "porcupine-kv", "edn", "json")

# One token per match, leading whitespace/commas/comments absorbed; groups by number:
# 1 string, 2 opener, 3 closer, 4 discard (#_), 5 atom (symbol, keyword, number, tag).
_TOKEN = re.compile(
    r"""
  (?:[\s,]+|;[^\n]*)*
  (?:("(?:[^"\\]|\\.)*")
   |(\#\{|[\[\({])
   |([\])}])
   |(\#_)
   |([^\s,;"\[\](){}]+))
""",
    re.VERBOSE,
)
_TRAILER = re.compile(r"(?:[\s,]+|;[^\n]*)*\Z")
_INT = re.compile(r"[-+]?\d+N?")
_FLOAT = re.compile(r"[-+]?\d+(\.\d*)?([eE][-+]?\d+)?M?")
_CLOSERS = {"[": "]", "(": ")", "{": "}", "#{": "}"}


class _Map(list):
    """Key/value list of an EDN map under construction (dict built at the close)."""


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _atom(tok: str) -> Any:
    if tok == "nil":
        return None
    if tok == "true":
        return True
    if tok == "false":
        return False
    if tok[0] == ":":
        return tok[1:]
    if _INT.fullmatch(tok):
        return int(tok.rstrip("N"))
    if _FLOAT.fullmatch(tok):
        return float(tok.rstrip("M"))
    return tok  # a symbol: keep its name


def parse_edn(
    text: str, source: str = "EDN", first_line: int = 1, offsets: dict[int, int] | None = None
) -> list[Any]:
    """Parse a sequence of EDN forms into Python values (keywords as plain strings).
    With `offsets`, record each map's start offset under id(map) (for error messages)."""
    base = first_line - 1
    forms: list[Any] = []
    cur = forms  # the collection the next complete form goes into
    stack: list[tuple[str, list[Any], int, list[Any]]] = []  # (opener, items, offset, parent)
    discard = 0  # pending `#_` markers: the next complete form is dropped
    atoms: dict[str, Any] = {}  # tokens repeat a lot (keywords, small ints): convert once
    pos = 0
    for m in _TOKEN.finditer(text):
        if m.start() != pos:
            break
        pos = m.end()
        g = m.lastindex
        if g == 5:
            tok = m.group(5)
            if tok[0] == "#":
                continue  # a tag such as #inst: the tagged form follows and stands for itself
            v = atoms.get(tok, _atoms_miss)
            if v is _atoms_miss:
                v = atoms[tok] = _atom(tok)
        elif g == 2:
            tok = m.group(2)
            if len(stack) >= MAX_DEPTH:  # the parse itself does not recurse; what reads it may
                line = _line_of(text, m.start(2)) + base
                raise BadInput(f"{source} line {line}: nests deeper than {MAX_DEPTH} levels")
            items: list[Any] = _Map() if tok == "{" else []
            stack.append((tok, items, m.start(2), cur))
            cur = items
            continue
        elif g == 3:
            tok = m.group(3)
            if not stack or _CLOSERS[stack[-1][0]] != tok:
                raise BadInput(
                    f"{source} line {_line_of(text, m.start(3)) + base}: unexpected {tok!r}"
                )
            opener, items, where, cur = stack.pop()
            if opener == "{":
                if len(items) % 2:
                    raise BadInput(
                        f"{source} line {_line_of(text, where) + base}: map with an "
                        "odd number of forms"
                    )
                v = {_hashable(items[i]): items[i + 1] for i in range(0, len(items), 2)}
                if offsets is not None:
                    offsets[id(v)] = where
            else:
                v = items
        elif g == 1:
            tok = m.group(1)
            try:
                v = json.loads(tok)
            except json.JSONDecodeError:
                v = tok[1:-1]
        else:
            discard += 1
            continue
        if discard:
            discard -= 1
            continue
        cur.append(v)
    if not _TRAILER.match(text, pos):
        raise BadInput(
            f"{source} line {_line_of(text, pos) + base}: cannot parse "
            f"{text[pos : pos + 20].strip()!r}"
        )
    if stack:
        raise BadInput(
            f"{source} line {_line_of(text, stack[-1][2]) + base}: {stack[-1][0]!r} is never closed"
        )
    return forms


_atoms_miss = object()


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


_OP_FIELDS = {"process", "type", "f", "key", "value", "index", "time"}


def _op_from_map(m: Any, pos: int, line: int, source: str) -> Op:
    where = f"{source} line {line} (op {pos + 1})" if line else f"{source} op {pos + 1}"
    if not isinstance(m, dict):
        raise BadInput(f"{where}: expected a map, got {type(m).__name__}")
    for k in ("process", "type", "f"):
        if k not in m:
            raise BadInput(f"{where}: missing :{k}")
    t = m["type"]
    if t not in ("invoke", "ok", "fail", "info"):
        raise BadInput(f"{where}: unknown :type {t!r}")
    p = m["process"]
    if not isinstance(p, (int, str)) or isinstance(p, bool):
        raise BadInput(f"{where}: bad :process {p!r}")
    extra = {str(k): v for k, v in m.items() if k not in _OP_FIELDS}
    if "time" in m:
        extra["source_time"] = m["time"]
    if "index" in m:
        extra["source_index"] = m["index"]
    f = m["f"]
    return Op(
        pos,
        pos,
        p,
        t,
        f if isinstance(f, str) else str(f),
        m.get("key"),
        m.get("value"),
        None,
        extra,
    )


def _ops_from_forms(forms: list[Any], source: str, lines: list[int] | None = None) -> History:
    if len(forms) == 1 and isinstance(forms[0], list):
        forms = forms[0]
    ln = lines if lines is not None else [0] * len(forms)
    ops = [_op_from_map(m, i, ln[i], source) for i, m in enumerate(forms)]
    return History(ops, ln if lines is not None else list(range(1, len(ops) + 1)))


def read_edn(text: str, source: str = "EDN") -> History:
    """Knossos EDN: a vector/list of op maps, or a bare sequence of op maps, in history order.

    Maps keep their fields (`:error`, ...) in `extra`; `:time`/`:index` go to `source_time` /
    `source_index` and `index`/`time` become the file position. Nemesis ops are kept (process
    "nemesis"). No Knossos preprocessing happens here: replacing an invoke's value by its
    completion's, dropping failed ops and treating unmatched invokes as crashed is what the
    linearizability checker's `prepare` and the models do.
    """
    offsets: dict[int, int] = {}
    forms = parse_edn(text, source, offsets=offsets)
    ops = forms[0] if len(forms) == 1 and isinstance(forms[0], list) else forms
    newlines = [m.start() for m in re.finditer("\n", text)]
    lines = [
        bisect.bisect_left(newlines, offsets.get(id(m), -1)) + 1 if id(m) in offsets else 0
        for m in ops
    ]
    return _ops_from_forms([ops], source, lines)


def read_porcupine_kv(text: str, source: str = "porcupine-kv") -> History:
    """Porcupine kv: one EDN op map per line (`{:process 9, :type :invoke, :f :append, :key "0",
    :value "x 9 0 y"}`). `:get` invokes carry nil and their `:ok` the string read; `:put` and
    `:append` carry their argument on both. Blank lines are skipped; errors name the line."""
    forms, lines = [], []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            parsed = parse_edn(line, source, n)
            forms.extend(parsed)
            lines.extend([n] * len(parsed))
    return _ops_from_forms(forms, source, lines)


_JEPSEN_LINE = re.compile(r"jepsen\.util - (\S+)\s+:(\w+)\s+:([\w-]+)\s*(.*)$")


# Lines a real Jepsen log holds besides the history: another logger's line (it starts with a
# timestamp or a level), an exception's header, a stack trace's indented continuation.
_OTHER_LOG_LINE = re.compile(
    r"\d|(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b|Caused by: |[\w$.]+(?:Exception|Error)\b"
)


# A Jepsen log's usual line (`INFO  jepsen.util - 3\t:ok\t:cas\t[1 4]`: a number, a pair of
# numbers, nil or :timed-out) in one regular expression run over the whole text, or any other
# line whole (the last group), which read_jepsen_log then reads as it reads every line. The
# usual line holds no 'j' before `jepsen.util - ` and no character str.splitlines splits on,
# so it is one line of text.splitlines() and _JEPSEN_LINE reads the same fields from it.
_SEP = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_NUM = "-?(?:0|[1-9][0-9]*)"
_USUAL_LINE = re.compile(
    rf"^(?:[^\tj{_SEP}]*jepsen\.util - ([0-9]+)\t:(invoke|ok|fail|info)\t:([\w-]+)\t"
    rf"(?:({_NUM})|\[({_NUM}) ({_NUM})\]|nil|(:timed-out))(?=\n|\Z)|([^\n]*))\n?",
    re.M,
)


def read_jepsen_log(text: str, source: str = "jepsen-log", fast: bool = True) -> History:
    """Jepsen log lines `jepsen.util - <process> :<type> :<f> <edn value>`.

    Porcupine's etcd data: `:invoke :read nil` / `:ok :read 3` (nil read = key absent),
    `:write 3`, `:cas [1 4]` (`:ok` applied, `:fail` did not apply), `:fail :read :timed-out`
    (a read with unknown result), `:info :write :timed-out` (indeterminate: the op may take
    effect at any time after its invoke; its process is retired). The value of a `:timed-out`
    completion is the string "timed-out"; the invoke keeps the op's real argument.

    Other log lines (another logger's, an exception and its stack trace) and blank lines are
    skipped; any other line is junk and bad input, and so is a non-empty file without a single
    history line: a file that is not a Jepsen log must not pass as an empty, valid history.
    The usual lines are read by the compiled reader when it is built (`fast`; the same ops).
    """
    ops: list[Op] = []
    lines: list[int] = []
    values: dict[str, Any] = {}  # raw EDN -> value: a log repeats a handful of values
    scanned = fast and _scan_log is not None and _scan_log(text, 0, 0, ops, lines, Op)
    if scanned:  # the compiled reader stops at each unusual line, read here as below
        pos, n = scanned
        while pos < len(text):
            end = text.find("\n", pos) % (len(text) + 1)  # -1: the text's end
            n = _other_lines(text[pos:end], n, source, ops, lines, values)
            scanned = _scan_log(text, min(end + 1, len(text)), n, ops, lines, Op)
            assert scanned  # (None only for a text not one byte per character: not this one)
            pos, n = scanned
    else:
        _read_by_regex(text, source, ops, lines, values)
    if not ops and text.strip():
        raise BadInput(f"{source}: no 'jepsen.util - <process> :<type> :<f> <value>' line")
    return History(ops, lines)


def _read_by_regex(
    text: str, source: str, ops: list[Op], lines: list[int], values: dict[str, Any]
) -> None:
    """read_jepsen_log's lines without the compiled reader: one regular expression."""
    n = 0
    append, new = ops.append, Op
    names: dict[str, str] = {}  # each type and f once, not once per op
    for proc, typ, f, num, a, b, out, other in _USUAL_LINE.findall(text):
        if typ:
            n += 1
            value = int(num) if num else [int(a), int(b)] if a else "timed-out" if out else None
            pos = len(ops)
            typ, f = names.setdefault(typ, typ), names.setdefault(f, f)
            append(new(pos, pos, int(proc), typ, f, None, value))
            lines.append(n)
            continue
        n = _other_lines(other, n, source, ops, lines, values)


def _other_lines(
    other: str, n: int, source: str, ops: list[Op], lines: list[int], values: dict[str, Any]
) -> int:
    """A chunk of a Jepsen log up to a newline that is not a usual line, `n` lines before it
    (it may hold more than one line for str.splitlines): the lines read so far after it."""
    split = other.splitlines() or [""]
    for k, line in enumerate(split):
        _other_line(line, n + 1 + k, source, ops, lines, values)
    return n + len(split)


def _other_line(
    line: str, n: int, source: str, ops: list[Op], lines: list[int], values: dict[str, Any]
) -> None:
    """One line of a Jepsen log that is not a usual one (read_jepsen_log)."""
    if "jepsen.util - " not in line:
        if line.strip() and not line[0].isspace() and not _OTHER_LOG_LINE.match(line):
            raise BadInput(f"{source} line {n}: not a Jepsen log line: {line[:60]!r}")
        return
    m = _JEPSEN_LINE.search(line)
    if m is None:
        raise BadInput(f"{source} line {n}: not a '<process> :<type> :<f> <value>' record")
    proc, typ, f, raw = m.groups()
    if typ not in ("invoke", "ok", "fail", "info"):
        raise BadInput(f"{source} line {n}: unknown type :{typ}")
    if proc.lstrip("-").isdigit():
        process: int | str = int(proc)
    else:
        process = proc.lstrip(":")
    value = values.get(raw, _atoms_miss)
    if value is _atoms_miss:
        vals = parse_edn(raw, source, n) if raw.strip() else [None]
        value = vals[0] if len(vals) == 1 else vals
        if value is None or isinstance(value, (int, str)):
            values[raw] = value  # only immutable values are shared between ops
    pos = len(ops)
    ops.append(Op(pos, pos, process, typ, f, None, value))
    lines.append(n)


def read_json_array(text: str, source: str = "json") -> History:
    """A JSON array of op objects with string values (elle-cli's Knossos twins):
    `{"type": "invoke", "f": "cas", "value": [3, 4], "process": 1}`; same semantics as EDN."""
    try:
        data = parse_json(text, source, MAX_DEPTH + 1)  # a list of records, each as a line
    except json.JSONDecodeError as e:
        raise BadInput(f"{source} line {e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(data, list):
        raise BadInput(f"{source}: expected a JSON array of operations")
    return _ops_from_forms([data], source)


def detect_format(text: str) -> str:
    head = text.lstrip()[:200]
    if head.startswith("[") and head[1:].lstrip().startswith(('{"', "]")):
        return "json"
    if head.startswith('{"'):
        return "jsonl"
    if "jepsen.util - " in text[:5000]:
        return "jepsen-log"
    return "edn"


def _streamed(path: str | os.PathLike[str]) -> History:
    """A JSONL history read as it is iterated (history/stream.py): a million-record file is
    checked in one pass without holding its records."""

    check_path(path, "history")  # a missing file is bad input now, not at the first read
    return StreamedHistory(path)


def read_history(path: str | os.PathLike[str], fmt: str = "auto") -> History:
    """Read a history in any supported format; BadInput (with a line number) when malformed.
    JSONL is streamed (read while checked); the other formats are read whole."""
    if fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    if fmt == "jsonl":
        return _streamed(path)
    try:
        with open_regular(path, "history", text=True) as fh:
            text = fh.read(1 << 16)
            if fmt == "auto":
                fmt = detect_format(text)
                if fmt == "jsonl":
                    return _streamed(path)
            text += fh.read()
    except OSError as e:
        raise BadInput(f"cannot read history {str(path)!r}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise BadInput(f"history {str(path)!r} is not UTF-8 text ({e.reason})") from None
    src = os.path.basename(path)
    with paused_gc():  # a million ops and no cycles (reading 1M ops: half the CPU without it)
        if fmt == "jepsen-log":
            return read_jepsen_log(text, src)
        if fmt == "porcupine-kv":
            return read_porcupine_kv(text, src)
        if fmt == "json":
            return read_json_array(text, src)
        return read_edn(text, src)
