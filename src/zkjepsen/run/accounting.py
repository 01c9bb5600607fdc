"""Every client accounted for: a run's verdict covers every client its spec started.

Each client writes its own history file (client/recorder.py): a `session` event once it is
initialized (its program answered `init`, or its in-process session started), its ops, and, when
its recorder ends, a `client-end` event sealing the records before it (their count and the
sum of their digests: history/jsonl.py `Seal`). The runner's own
session (client 0: setup and final reads) writes one too. A client
- that never initialized (its program never answered `init`: say its child escaped into a
  session of its own and kept the pipe open, so nothing was ever seen to end),
- whose file is missing, empty, not a regular file, unreadable, or leads out of the run's
  folder (a link to /etc/passwd is not that client's history),
- or whose records stop making sense (a line that is no record, another client's record, an
  `ok` with no `invoke`, an invoke while one is pending, a file cut short or with records
  changed, lost or added: its end does not seal what is before it, or it has no end),
was not tested the way a verdict would say. Whatever the checkers found in the rest, the run is
UNKNOWN, naming it (the part `clients`; the checkers' own parts stay as evidence): a corrupted
file of a stored run must never make it VALID, nor INVALID on records that are not what ran.

One step decides it, `account`: the spec's client count and what each client's file yielded.
The runner merges the files through `merged` (each client's records up to where they stop
making sense, and for a client not accounted for an `unaccounted` event saying why), so the
stored history.jsonl carries the finding; `with_clients` then accounts for the clients from the
history (`yields_of`). `analyze` does the same, from history.jsonl or, for an interrupted run,
from the clients' files merged the same way.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from zkjepsen.checker import Result
from zkjepsen.client.recorder import END
from zkjepsen.errors import BadInput
from zkjepsen.history import NEMESIS, TYPES, History, Op
from zkjepsen.history.jsonl import Seal, client_of, merge_lists, read_records
from zkjepsen.store import RunDir
from zkjepsen.store.regular import open_regular, parse_json

UNACCOUNTED = "unaccounted"  # the runner's event for a client whose file did not account for it
# Longer than any record a recorder writes (a program's answer is at most 1 MiB, and a record
# quotes it once): a longer line is read no further.
MAX_RECORD = 4 << 20
_MISSING = object()


@dataclass
class Yield:
    """What one client's file yielded: its records up to where they stop making sense, and why
    they do not account for the client (None: they do)."""

    client: int
    records: list[dict[str, Any]] = field(default_factory=list)
    problem: str | None = None


class Sense:
    """Whether one client's records, fed in the order it wrote them, make sense."""

    def __init__(self, client: int) -> None:
        self.client = client
        self.seal = Seal()  # the records so far: its end seals those before it
        self.pending: dict[int, tuple[int, str]] = {}  # process -> its invoke's (time, f)
        self.retired: set[int] = set()  # processes whose op ended info: they never invoke again
        self.session = False
        self.ended = False

    def feed(self, rec: dict[str, Any]) -> str | None:
        """None, or why this record makes no sense here."""
        time, process, type_, f = (rec.get(k, _MISSING) for k in ("time", "process", "type", "f"))
        for name, v in (("time", time), ("process", process), ("type", type_), ("f", f)):
            if v is _MISSING:
                return f"has no {name!r}"
        if rec.get("client") != self.client:
            return f"is a record of client {rec.get('client')!r}, not of client {self.client}"
        if type(time) is not int or time < 0 or type(process) is not int:
            return "has a time or process that is not a whole number"
        if type(f) is not str or type(type_) is not str or type_ not in TYPES:
            return f"has type {type_!r} and f {f!r}, which no record has"
        why = self._op(time, process, type_, f, rec.get("value"))
        self.seal.add(rec)
        return why

    def _op(self, time: int, process: int, type_: str, f: str, value: Any) -> str | None:
        self.ended = False
        if type_ == "event":
            self.session = self.session or f == "session"
            if f == END:
                said = value if isinstance(value, dict) else {}
                if said != self.seal.value():
                    return (
                        f"ends sealing {said.get('records')!r} records before it, which are not "
                        f"the {self.seal.records} there (one was changed, lost or added)"
                    )
                self.ended = True
            return None
        if type_ == "invoke":
            if process in self.pending or process in self.retired:
                return f"is an invoke by process {process}, whose last op " + (
                    "is still pending" if process in self.pending else "ended info"
                )
            self.pending[process] = (time, f)
            return None
        invoked = self.pending.pop(process, None)
        if invoked is None or invoked[1] != f or invoked[0] > time:
            return f"is an {type_} {f} of process {process} that completes no invoke of it"
        if type_ == "info":
            self.retired.add(process)
        return None

    def end(self) -> str | None:
        """Once every record was fed: why they do not account for the client (None: they do)."""
        if self.seal.records == 0:
            return "its history is empty"
        if not self.session and self.client != 0:
            return "it never initialized (no session in its history: it never answered init)"
        if not self.ended:
            return (
                "its history stops before its end (cut short, or the client was killed and "
                "never restarted)"
            )
        return None


# ---- a client's own file -------------------------------------------------------------------
def _lines(fh: IO[bytes]) -> Iterator[bytes]:
    while line := fh.readline(MAX_RECORD + 1):
        yield line


def _record(raw: bytes) -> dict[str, Any] | str:
    """A line as a record, or why it is none."""
    if len(raw) > MAX_RECORD:
        return f"is longer than {MAX_RECORD >> 20} MiB, longer than any record"
    if not raw.endswith(b"\n"):
        return "is cut short (the file ends inside it)"
    try:
        rec = parse_json(raw, "a client's record")
    except (ValueError, BadInput):
        rec = None
    return rec if isinstance(rec, dict) else "is not a record (a JSON object)"


def read_client(run_dir: RunDir, client: int, path: Path) -> Yield:
    """What client `client`'s file at `path` yields: read through the one opener (a regular
    file inside the run's folder), a line at a time, up to the first that makes no sense."""
    shown = os.path.relpath(path, run_dir.path)
    if not os.path.lexists(path):
        return Yield(client, [], f"its history file {shown} is missing")
    try:
        fh = open_regular(path, "its history file", within=run_dir.path)
    except BadInput as e:
        return Yield(client, [], str(e).split("; ")[0])
    sense, records = Sense(client), list[dict[str, Any]]()
    try:
        with fh:
            for k, raw in enumerate(_lines(fh), 1):
                if not raw.strip():
                    continue
                rec = _record(raw)
                why = rec if isinstance(rec, str) else sense.feed(rec)
                if why is not None or isinstance(rec, str):
                    return Yield(client, records, f"line {k} of its history {why}")
                records.append(rec)
    except OSError as e:
        return Yield(client, records, f"its history file {shown} cannot be read ({e.strerror})")
    return Yield(client, records, sense.end())


def client_files(run_dir: RunDir, nclients: int) -> dict[int, Path]:
    """Client number -> its file: 0 (the runner's own) to `nclients`, each where the run keeps
    it (or, in a run stored before per-client folders, in `clients/`), and any other client's
    file the folder has."""
    found = {n: p for p in run_dir.client_histories() if (n := client_of(p)) is not None}
    for n in range(nclients + 1):
        own = run_dir.client_history(n)
        found[n] = own if os.path.lexists(own) or n not in found else found[n]
    return found


def marks(yields: Iterable[Yield]) -> list[dict[str, Any]]:
    """An `unaccounted` event for each client its file does not account for, after its last
    record that made sense: the merged history carries why."""
    return [
        {
            "time": y.records[-1]["time"] if y.records else 0,
            "process": y.client,
            "type": "event",
            "f": UNACCOUNTED,
            "client": y.client,
            "value": y.problem,
        }
        for y in yields
        if y.problem is not None
    ]


def merged(run_dir: RunDir, nclients: int) -> list[dict[str, Any]]:
    """The run's records, merged by time: every client's that make sense (the runner's own
    too), an `unaccounted` event for each client not accounted for, and the nemesis's."""
    files = sorted(client_files(run_dir, nclients).items())
    yields = [read_client(run_dir, n, path) for n, path in files]
    nemesis = read_records(run_dir.nemesis_log) if os.path.lexists(run_dir.nemesis_log) else []
    return merge_lists([*(y.records for y in yields), marks(yields), nemesis])


def write_history(run_dir: RunDir, nclients: int) -> list[dict[str, Any]]:
    """What the runner does once the clients are gone: history.jsonl, `merged` (written
    atomically), whatever the run's end; returns its records."""
    records = merged(run_dir, nclients)
    History([Op.from_dict(r) for r in records]).to_jsonl(run_dir.history)
    return records


# ---- the accounting ------------------------------------------------------------------------
def yields_of(history: History) -> list[Yield]:
    """What each client's records in a merged history yield: an `unaccounted` event's why, or
    whether its records, in order, make sense."""
    senses: dict[int, Sense] = {}
    problems: dict[int, str] = {}
    for op, line in zip(history.ops, history.lines, strict=False):
        c = op.client
        if op.process == NEMESIS or type(c) is not int:
            continue
        if op.type == "event" and op.f == UNACCOUNTED:
            problems[c] = str(op.value)
            continue
        sense = senses.setdefault(c, Sense(c))
        if c not in problems and (why := sense.feed(op.to_dict())):
            problems[c] = f"its record on history line {line} {why}"
    return [
        Yield(c, [], problems[c] if c in problems else senses[c].end())
        for c in sorted({*senses, *problems})
    ]


def _who(n: int) -> str:
    return "client 0 (the runner's own session)" if n == 0 else f"client {n}"


def account(nclients: int, yields: Iterable[Yield]) -> Result | None:
    """The run's part `clients`: None when the records of every client the spec started (and
    of the runner's own session) account for it; else UNKNOWN, naming each that is not and why."""
    said = {y.client: y.problem for y in yields}
    problems = {
        n: said[n] if n in said else "the history has no record of it: it never started"
        for n in range(nclients + 1)
        if n not in said or said[n] is not None
    }
    for n in sorted(set(said) - set(range(nclients + 1))):
        problems[n] = f"the run started {nclients} clients, so it has no client {n}"
    if not problems:
        return None
    named = "; ".join(f"{_who(n)}: {why}" for n, why in sorted(problems.items()))
    return Result(
        "unknown",
        {
            "reason": f"the verdict does not cover every client: {named}",
            "unaccounted": {str(n): why for n, why in sorted(problems.items())},
            "clients": nclients,
        },
    )


def with_clients(checked: Result, history: History, nclients: int) -> Result:
    """`checked` with its part `clients` when not every client is accounted for: then the
    run is UNKNOWN whatever its checkers said (what they found stays in their parts)."""
    part = account(nclients, yields_of(history))
    if part is not None:
        checked.parts["clients"] = part
        checked.valid = "unknown"
    return checked
