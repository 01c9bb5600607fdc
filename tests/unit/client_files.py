"""A stored run's clients' own files, as their recorders write them (client/recorder.py), made
without Docker: the runner's own session (client 0) and each client with its `session`, its lock
ops and its `client-end`. A folder with these and no history.jsonl is an interrupted run, which
`analyze` merges as the runner does (run/accounting.py). test_every_client_accounted.py and
test_client_files_properties.py corrupt one file at a time."""

from __future__ import annotations

import json
from pathlib import Path

from stored_folder import stored_spec

from zkjepsen.history.jsonl import Seal

MS = 1_000_000
LOCK = "/zkjepsen/lock"
# (client, acquired at ms, released at ms): two clients taking turns, or overlapping once
TURNS = [(1, 100, 200), (2, 300, 400), (1, 500, 600), (2, 700, 800)]
OVERLAP = [(1, 100, 200), (2, 300, 400), (1, 500, 700), (2, 600, 800)]


def _op(client: int, ms: int, type_: str, f: str, value=None) -> dict:
    rec = {"time": ms * MS, "process": client, "type": type_, "f": f, "client": client}
    rec["key"] = LOCK
    if type_ in ("invoke", "ok"):
        rec["value"] = value
    return rec


def client_records(client: int, holds: list[tuple[int, int, int]]) -> list[dict]:
    """Client `client`'s file: its session, an acquire and a release for each of its holds
    (tokens in grant order), and its end counting the records before it."""
    recs: list[dict] = [
        {
            "time": client * MS,
            "process": client,
            "type": "event",
            "f": "session",
            "client": client,
            "value": {"session_id": f"0x{client}", "timeout_ms": 10_000},
        }
    ]
    order = sorted(start for _, start, _ in holds)
    for c, start, end in holds:
        if c != client:
            continue
        token = 100 + order.index(start)
        grant = {"token": token, "seq": token, "node": f"lock-{token:010d}"}
        recs += [
            _op(client, start - 10, "invoke", "acquire"),
            _op(client, start, "ok", "acquire", grant),
            _op(client, end, "invoke", "release"),
            _op(client, end + 1, "ok", "release"),
        ]
    return [*recs, end_record(client, recs[-1]["time"] + MS, recs)]


def end_record(client: int, time: int, before: list[dict]) -> dict:
    """Its `client-end`, sealing the records `before` it as the recorder does."""
    seal = Seal()
    for r in before:
        seal.add(r)
    return {
        "time": time,
        "process": client,
        "type": "event",
        "f": "client-end",
        "client": client,
        "value": seal.value(),
    }


def lines(records: list[dict]) -> str:
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)


def make_interrupted(root: Path, holds: list[tuple[int, int, int]], name: str = "run") -> Path:
    """A 2-client lock run without faults or writes (lock, liveness and exercised judge it)
    whose runner stopped before it merged its history: test.json, schedule.json and each
    client's own file (client 0's holds only its end)."""
    run = root / name
    run.mkdir(parents=True)
    spec = stored_spec(clients=2, nemesis=["none"], params={"writes": 0})
    (run / "test.json").write_text(json.dumps(spec, indent=2))
    (run / "schedule.json").write_text(json.dumps({"faults": []}))
    for c in (0, 1, 2):
        d = run / "clients" / f"c{c}"
        d.mkdir(parents=True)
        recs = [end_record(0, 900 * MS, [])] if c == 0 else client_records(c, holds)
        (d / f"client-{c}.jsonl").write_text(lines(recs))
    return run


def client_file(run: Path, client: int) -> Path:
    return run / "clients" / f"c{client}" / f"client-{client}.jsonl"


# ---- what a file can be instead of a client's history -----------------------------------------
def _records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _first(recs: list[dict], type_: str, f: str) -> int:
    return next(k for k, r in enumerate(recs) if r["type"] == type_ and r["f"] == f)


def _recount(recs: list[dict]) -> list[dict]:
    """The records with their end sealing them again: only what the change itself breaks."""
    body = [r for r in recs if r["f"] != "client-end"]
    return [*body, end_record(body[0]["client"], recs[-1]["time"], body)]


def edit(path: Path, change) -> None:
    path.write_text(lines(change(_records(path))))


def _drop(k: int):
    return lambda recs: recs[:k] + recs[k + 1 :]


# One of each class a client's file can stop accounting for its client by (the property test
# draws from more): the change to its records, or its bytes.
RECORD_CLASSES = {
    "ok with no invoke": lambda rs: _recount(_drop(_first(rs, "invoke", "acquire"))(rs)),
    "an invoke twice": lambda rs: _recount(rs[:2] + rs[1:]),
    "a record lost": lambda rs: _drop(_first(rs, "ok", "acquire"))(rs),
    "a record changed": lambda rs: [*rs[:2], {**rs[2], "type": "fail", "value": None}, *rs[3:]],
    "a record added": lambda rs: rs[:1] + rs[:1] + rs[1:],
    "another client's record": lambda rs: [*rs[:2], {**rs[2], "client": 9}, *rs[3:]],
    "never initialized": lambda rs: _recount(rs[1:]),
    "no end": lambda rs: rs[:-1],
    "ended early": lambda rs: _recount(rs[:3]) + rs[3:-1],
}
BYTE_CLASSES = {
    "empty": lambda text: "",
    "garbage line": lambda text: text.replace("\n", "\ngarbage\n", 2),
    "cut mid-record": lambda text: text[: mid_line(text)],
    "cut at a line": lambda text: "".join(text.splitlines(keepends=True)[:3]),
    "blank": lambda text: "\n\n",
}


def mid_line(text: str) -> int:
    """A byte near the middle of `text` that is inside a line, not at a line's start."""
    at = len(text) // 2
    while text[at - 1] == "\n":
        at += 1
    return at
