"""Live JSON Lines: ONE appender every writer uses (clients, the nemesis, the host's own session)
and ONE tailer every live reader uses (the display, the holder tracker, the start barrier), and
the merge of per-source files into one history.

Stdlib only (and the package's own opener, store/regular.py): this module runs inside the client
containers too.

Why one write(2) per record with O_APPEND: a SIGKILL or a `docker pause` can stop a writer at
any instant; a record is then either wholly on disk or not at all, except that the very last line
of a killed writer may be cut, which the tailer and the merge skip.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from zkjepsen.errors import BadInput
from zkjepsen.history import History, check_record
from zkjepsen.store.regular import MAX_DEPTH, open_regular, parse_json


class Appender:
    """Appends one compact JSON object per line, thread-safe, one write(2) each."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


class Tailer:
    """Follows one JSONL file that others append to: each `poll()` parses only the bytes added
    since the last one and returns the complete new records (a half-written last line waits)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.offset = 0
        self._partial = b""

    def poll(self) -> list[dict[str, Any]]:
        data = _read_live(self.path, self.offset)
        self.offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        return list(_records(lines))


class DirTailer:
    """A Tailer per file that `find()` lists (files may appear at any time), plus `extra`.

    `find` comes from the run layout (`RunDir.client_histories`), so readers never spell out
    where the clients' files are."""

    def __init__(self, find: Callable[[], Iterable[Path]], extra: Iterable[Path] = ()) -> None:
        self.find = find
        self.tailers: dict[Path, Tailer] = {Path(p): Tailer(p) for p in extra}

    def poll(self) -> dict[Path, list[dict[str, Any]]]:
        for p in self.find():
            self.tailers.setdefault(Path(p), Tailer(p))
        return {p: t.poll() for p, t in self.tailers.items()}


def client_of(path: Path) -> int | None:
    """`client-3.jsonl` -> 3."""
    try:
        return int(path.stem.split("-", 1)[1])
    except (IndexError, ValueError):
        return None


def _read_live(path: str | os.PathLike[str], offset: int = 0) -> bytes:
    """What a live file holds from `offset` on, read through the one opener: a file that is not
    there (yet), or is anything but a regular file (a named pipe put in its place would block a
    plain open for ever), holds nothing."""
    try:
        with open_regular(path, "client history") as fh:
            fh.seek(offset)
            return fh.read()
    except (OSError, BadInput):
        return b""


def _records(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if not line.strip():
            continue
        try:
            if line.count(b"[") + line.count(b"{") > MAX_DEPTH:
                rec = parse_json(line, "a client's record")  # nested too deep: BadInput
            else:
                rec = json.loads(line)
        except (ValueError, BadInput):
            continue  # the line a SIGKILL cut short (or no record zkjepsen writes)
        if isinstance(rec, dict):
            yield rec


def read_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every complete record of one live file (a cut last line is skipped)."""
    return list(_records(_read_live(path).split(b"\n")))


def merge_records(paths: Iterable[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """Merge every source's records into one list ordered by time, with fresh indices.

    A client killed mid-write may leave a truncated last line: it is dropped (the op it would
    have recorded stays incomplete, which the checkers read as "unknown")."""
    records: list[dict[str, Any]] = []
    for path in paths:
        records.extend(r for r in read_records(path) if isinstance(r.get("time"), int))
    records.sort(key=lambda r: r["time"])  # stable: per-file order survives equal times
    for i, r in enumerate(records):
        r["index"] = i
    return records


def merge_files(paths: Iterable[str | os.PathLike[str]]):
    """The merged history of several live files, as a validated `History`."""

    # Each record checked as a history line is (a client's file is evidence handed back too);
    # its number is its place in the merged order.
    h = History([check_record(r, n) for n, r in enumerate(merge_records(paths), 1)])
    h.validate()
    return h
