"""THE opener: every file a command is handed or reads back goes through here.

A run folder, a history, a matrix's `matrix-runs.json` or a config comes from the user (or from a
copy of someone else's run): a named pipe where a file should be would block `open()` for ever, a
device (`/dev/zero`, or a link to it) would be read without end, a symlink loop makes `pathlib`
raise its own RuntimeError, a sparse 10 GB file would be read whole, and a document nested ten
thousand levels deep makes the parser (or any code that walks what it returns) raise
RecursionError. So:

- the path is looked at first (`stat`, following links, which turns a loop into ELOOP), opened
  without blocking, and looked at again through the open descriptor (the file may have been
  swapped in between): anything but a regular file is one sentence, exit 254;
- `within`: where it matters (a run folder's own files), a link that leads out of the folder is
  refused too (a client's history that is a link to /etc/passwd is not that client's history);
- a whole-file read is bounded (`limit`, checked on the size and again on what is read);
- JSON and TOML are parsed nested at most MAX_DEPTH levels (a record: each line of a JSON Lines
  history, `line_depth_ok`; a config), a document twice that (it may quote records: a verdict's
  evidence), whatever reads them afterwards.

tests/unit/test_one_opener.py keeps it the only way: a read of a file anywhere else in the
commands' rooms fails there, unless listed with its reason.
`zkjepsen check` uses this on its fast start-up path: it imports only what `check` loads anyway
(json, re); a TOML config is read by store/config.py, through this.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from typing import IO, Any

from zkjepsen.errors import BadInput

MIB = 1 << 20
# A JSON table the tool wrote (test.json, results.json, a matrix's record of every run with its
# verdict): far below this. A history is streamed, never read whole, and has no such bound.
MAX_DOCUMENT = 256 * MIB
MAX_CONFIG = 4 * MIB  # a TOML config: a few settings
# How deeply a record (a history's line, a config) may nest: deeper than anything zkjepsen
# writes and far from Python's recursion limit, so code walking a value never meets it.
MAX_DEPTH = 64
# A document the tool writes may quote records (a verdict's evidence quotes ops, a matrix's
# record holds verdicts): a record's depth again for the document around it.
MAX_DOCUMENT_DEPTH = 2 * MAX_DEPTH

KINDS = {
    stat.S_IFIFO: "a named pipe",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def _kind(mode: int) -> str:
    return KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _why(e: OSError) -> str:
    if e.errno == errno.ELOOP:
        return "a symbolic link loop"
    return e.strerror or type(e).__name__


def _not_regular(path: str | os.PathLike[str], what: str, mode: int) -> BadInput:
    return BadInput(
        f"{what} {os.fspath(path)!r} is {_kind(mode)}, not a regular file; "
        "give a file written by zkjepsen"
    )


def check_path(
    path: str | os.PathLike[str], what: str, within: str | os.PathLike[str] | None = None
) -> os.stat_result:
    """Refuse `path` unless it is (a link to) a regular file, inside `within` when given."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise BadInput(f"cannot read {what} {os.fspath(path)!r}: {_why(e)}") from None
    except ValueError as e:  # an embedded NUL byte
        raise BadInput(f"cannot read {what} {os.fspath(path)!r}: {e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, what, st.st_mode)
    if within is not None:
        real, top = os.path.realpath(path), os.path.realpath(within)
        if os.path.commonpath([real, top]) != top:
            raise BadInput(
                f"{what} {os.fspath(path)!r} leads out of {os.fspath(within)} (to {real}); "
                "a run's files are its own: give a folder written by zkjepsen"
            )
    return st


def _too_big(path: str | os.PathLike[str], what: str, limit: int) -> BadInput:
    return BadInput(
        f"{what} {os.fspath(path)!r} is larger than {limit // MIB} MiB, more than zkjepsen "
        "ever writes there; give a file written by zkjepsen"
    )


def open_regular(
    path: str | os.PathLike[str],
    what: str,
    text: bool = False,
    within: str | os.PathLike[str] | None = None,
    limit: int | None = None,
) -> IO[Any]:
    """`path` opened for reading (binary, or UTF-8 text), only if it is a regular file (of at
    most `limit` bytes, and inside `within`, when given)."""
    check_path(path, what, within)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise BadInput(f"cannot read {what} {os.fspath(path)!r}: {_why(e)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped for something else since the stat
            raise _not_regular(path, what, st.st_mode)
        if limit is not None and st.st_size > limit:
            raise _too_big(path, what, limit)
        os.set_blocking(fd, True)
        if text:
            return open(fd, encoding="utf-8", closefd=True)  # noqa: SIM115 - the caller closes
        return open(fd, "rb", closefd=True)  # noqa: SIM115 - the caller closes
    except BaseException:
        os.close(fd)
        raise


def read_bytes(
    path: str | os.PathLike[str],
    what: str,
    limit: int = MAX_DOCUMENT,
    within: str | os.PathLike[str] | None = None,
) -> bytes:
    """The whole of a regular file, at most `limit` bytes (BadInput for anything else; a file
    that grew past the limit since it was looked at is refused too)."""
    with open_regular(path, what, within=within, limit=limit) as fh:
        try:
            data = fh.read(limit + 1)
        except OSError as e:
            raise BadInput(f"cannot read {what} {os.fspath(path)!r}: {_why(e)}") from None
    if len(data) > limit:
        raise _too_big(path, what, limit)
    return data


def read_text(
    path: str | os.PathLike[str],
    what: str,
    limit: int = MAX_DOCUMENT,
    within: str | os.PathLike[str] | None = None,
) -> str:
    """The whole of a regular file as UTF-8 text (BadInput for anything else)."""
    data = read_bytes(path, what, limit, within)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{what} {os.fspath(path)!r} is not UTF-8 text ({e.reason})") from None


def read_tail(path: str | os.PathLike[str], what: str, size: int = 1 << 16) -> str:
    """The last `size` bytes of a regular file as text (a log's end, for a message: a byte
    that is not UTF-8 shows as a replacement); '' when it cannot be read."""
    try:
        with open_regular(path, what) as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - size))
            return fh.read(size).decode("utf-8", errors="replace")
    except (OSError, BadInput):
        return ""


# ---- nesting ------------------------------------------------------------------------------
def depth(value: Any, bound: int = MAX_DOCUMENT_DEPTH) -> int:
    """How deeply `value` nests lists and tables (a scalar: 0, `[1]`: 1), without recursion
    (past `bound` the walk stops: more than `bound` is all it says)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            items: Any = v.values()
        elif isinstance(v, list):
            items = v
        else:
            continue
        deepest = max(deepest, d)
        if d <= bound:  # past the bound the answer is known: no need to walk further
            stack.extend((x, d + 1) for x in items if isinstance(x, (dict, list)))
    return deepest


def line_depth_ok(data: bytes) -> bool:
    """True when no line of `data` can nest deeper than MAX_DEPTH: none has more than that many
    `[` and `{` (strings included, so a False is a maybe: the line is then parsed and its
    `depth` taken). One pass in C over the bytes, for a history's every block."""
    openers = data.translate(None, _NOT_OPENERS)
    return re.search(b"[^\n]{%d}" % (MAX_DEPTH + 1), openers) is None


_NOT_OPENERS = bytes(b for b in range(256) if b not in b"[{\n")


def too_deep(where: str, bound: int = MAX_DEPTH) -> BadInput:
    return BadInput(
        f"{where} nests deeper than {bound} levels, far more than zkjepsen ever writes; "
        "give a file written by zkjepsen"
    )


def parse_json(text: str | bytes, where: str, bound: int = MAX_DEPTH) -> Any:
    """JSON nested at most `bound` levels (a record's MAX_DEPTH, or a document's). ValueError
    (json's own, with its position) for text that is not JSON; BadInput naming `where` for one
    nested deeper."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        doc = json.loads(text)
    except RecursionError:
        raise too_deep(where, bound) from None
    if depth(doc, bound) > bound:
        raise too_deep(where, bound)
    return doc


def read_json(
    path: str | os.PathLike[str],
    what: str,
    fix: str = "give a file written by zkjepsen",
    limit: int = MAX_DOCUMENT,
    within: str | os.PathLike[str] | None = None,
) -> Any:
    """A JSON document read through the opener: a regular file, bounded, nested at most
    MAX_DOCUMENT_DEPTH levels; anything else is one sentence naming the file (`fix`: what to
    give instead)."""
    text = read_text(path, what, limit, within)
    try:
        return parse_json(text, f"{what} {os.fspath(path)!r}", MAX_DOCUMENT_DEPTH)
    except ValueError as e:
        why = _reason(e)
        raise BadInput(f"{os.fspath(path)} is not a readable {what} ({why}); {fix}") from None


def _reason(e: ValueError) -> str:
    msg, line = getattr(e, "msg", None), getattr(e, "lineno", None)
    return f"{msg} at line {line}" if msg and line else type(e).__name__
