"""Live JSON Lines: ONE appender every writer uses (clients, the nemesis, the host's own session),
the tailer of one file that the run's live history (history/live.py) follows each file with,
and the merge of per-source files into one history.

Stdlib only (and the package's own opener, store/regular.py): this module runs inside the client
containers too.

Why one write(2) per record with O_APPEND: a SIGKILL or a `docker pause` can stop a writer at
any instant; a record is then either wholly on disk or not at all, except that the very last line
of a killed writer may be cut, which the tailer and the merge skip.
"""

from __future__ import annotations

import hashlib
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

    def write(self, record: dict[str, Any]) -> bytes:
        """Append `record`; returns the line written."""
        line = (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)
        return line

    def close(self, last: Callable[[], dict[str, Any]] | None = None) -> None:
        """Close the file; `last` makes the line written just before, under the same lock, so
        no other thread's record can follow it (a client's end: client/recorder.py)."""
        with self._lock:
            if self._fd >= 0:
                if last is not None:
                    line = json.dumps(last(), separators=(",", ":"), default=str) + "\n"
                    os.write(self._fd, line.encode())
                os.close(self._fd)
                self._fd = -1


SEAL_MOD = 1 << 128


def digest(record: dict[str, Any]) -> int:
    """One record's share of its file's seal: a hash of the record as every reader decodes it
    (its fields but `index`, which the merge gives, and those that are null, which a merged
    history leaves out), whatever the order of its keys."""
    kept = {k: v for k, v in record.items() if k != "index" and v is not None}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:16], "big")


class Seal:
    """What a client's file holds so far, as its end states it (client/recorder.py) and a
    reader checks it (run/accounting.py): how many records, and the sum of their digests, so
    that a record changed, lost or added shows, in whatever order the records come (the merge
    orders them by time: two threads' records may swap)."""

    def __init__(self) -> None:
        self.records = 0
        self.sum = 0

    def add(self, record: dict[str, Any]) -> None:
        self.records += 1
        self.sum = (self.sum + digest(record)) % SEAL_MOD

    def value(self) -> dict[str, Any]:
        return {"records": self.records, "digest": f"{self.sum:032x}"}


def mend(path: str | os.PathLike[str]) -> Seal:
    """Before a writer appends to a file an earlier writer may have left (a client restarted
    after a SIGKILL): drop a last line that was cut short (the kernel may stop a write at a
    page boundary when the writer is killed), so the next record starts a line of its own
    instead of gluing onto half a record; returns the seal of the records it then holds. Only
    for a file with no other writer at the time."""
    seal = Seal()
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return seal
    with open(fd, "r+b", closefd=True) as fh:
        data = fh.read()
        keep = data.rfind(b"\n") + 1
        if keep < len(data):
            fh.truncate(keep)
    for rec in _records(data[:keep].split(b"\n")):
        seal.add(rec)
    return seal


class Tailer:
    """Follows one JSONL file that others append to: each `poll()` parses only the bytes added
    since the last one and returns the complete new records (a half-written last line waits).

    WHY it reads from the end of the last COMPLETE line, and checks that line is still there:
    a file may get shorter under it. A client restarted after a SIGKILL first cuts off the
    half line its killed life left (`mend`), then appends, so by the next poll the file may be
    longer than what was read and still not hold the bytes that were read: a byte offset past
    the half line would skip the head of the new record and glue the half line onto the rest.
    So the half line is never kept, only re-read (it is one short line) until its newline
    comes; and a file cut below what was read (nothing zkjepsen writes does that) is matched
    line by line against what was read, and followed on from where it first differs."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.offset = 0  # the end of the last complete line read
        self.resyncs = 0  # times the file was found cut below `offset`
        self._last = b""  # that line, newline included: the mark the file still holds it
        self._lines: list[int] = []  # hash() of every complete line read, in the file's order

    def poll(self) -> list[dict[str, Any]]:
        data = _read_live(self.path, self.offset - len(self._last))
        if data.startswith(self._last):
            data = data[len(self._last) :]
        else:
            data = self._resync()
        end = data.rfind(b"\n") + 1
        lines = data[:end].split(b"\n")[:-1]
        if lines:
            self._lines.extend(hash(line) for line in lines)
            self._last = lines[-1] + b"\n"
        self.offset += end
        return list(_records(lines))

    def _resync(self) -> bytes:
        """The file no longer holds what was read up to `offset`: keep the lines read that it
        still starts with, go back to their end, and return the rest (new content)."""
        whole = _read_live(self.path)
        if not whole:
            return b""  # cut to nothing, gone, or unreadable this once: read nothing yet
        self.resyncs += 1
        pos, kept, last = 0, 0, b""
        for seen in self._lines:
            nl = whole.find(b"\n", pos)
            if nl < 0 or hash(whole[pos:nl]) != seen:
                break
            last, pos, kept = whole[pos : nl + 1], nl + 1, kept + 1
        del self._lines[kept:]
        self.offset, self._last = pos, last
        return whole[pos:]


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
    return merge_lists(read_records(path) for path in paths)


def merge_lists(sources: Iterable[Iterable[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Several sources' records (each in the order it wrote them) as one list ordered by time,
    with fresh indices."""
    records: list[dict[str, Any]] = []
    for source in sources:
        records.extend(r for r in source if isinstance(r.get("time"), int))
    records.sort(key=lambda r: r["time"])  # stable: per-file order survives equal times
    for i, r in enumerate(records):
        r["index"] = i
    return records


def merge_files(paths: Iterable[str | os.PathLike[str]]):
    """The merged history of several live files, as a validated `History`."""
    return checked_history(merge_records(paths))


def checked_history(records: list[dict[str, Any]]) -> History:
    """Merged records as a validated `History`: each checked as a history line is (a client's
    file is evidence handed back too), its number its place in the merged order."""
    h = History([check_record(r, n) for n, r in enumerate(records, 1)])
    h.validate()
    return h
