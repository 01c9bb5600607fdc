"""Property (issue 48): `analyze` of an interrupted run (no history.jsonl: its clients' own files)
with one client's file corrupted answers exit 254 with one sentence and nothing created, or
UNKNOWN naming that client (its part `clients`), or the verdict of the uncorrupted run where the
corruption does not matter; never VALID where the uncorrupted run was not (its base is INVALID
as often as VALID), never INVALID where it was VALID, never 255, never a hang past BOUND_S.

The bases (tests/unit/client_files.py): a 2-client lock run, once taking turns (VALID) and once
overlapping (INVALID), with the runner's own file (client 0). Hypothesis picks the client and the
corruption: the file as another kind (missing, a named pipe, a directory, a link loop, /dev/zero,
a dangling link, bytes that are not UTF-8, 300 MB sparse, nested 2,560 levels, a link to
/etc/passwd), cut at any byte, a line replaced by junk, dropped, repeated or swapped with the
next, a field of a record given another value (its client, process, type, f, time, the end's
count), and, to show what does not matter, blank lines and a record's keys reordered.

The counts are printed; ZKJEPSEN_CLIENT_FILES_EXAMPLES (default 200) and
ZKJEPSEN_CLIENT_FILES_SEED explore further.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from client_files import OVERLAP, TURNS, client_file, make_interrupted
from hostile import KINDS, Tally, examples, make_kind, refusal_wrong, run_bounded, seeded, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = examples("ZKJEPSEN_CLIENT_FILES_EXAMPLES", 200)
SEEDED = os.environ.get("ZKJEPSEN_CLIENT_FILES_SEED")
BASES = {"valid": (TURNS, 0), "invalid": (OVERLAP, 1)}  # holds, and the verdict's exit code
JUNK = ["garbage", "[1, 2]", '"x"', "3", "{", "{} {}", "null", '{"time": 1}', "\x00\x01"]
FIELDS: dict[str, list[Any]] = {
    "client": [0, 1, 2, 3, -1, "2", None, 1.0],
    "process": [0, 3, 99, -2, "1", None, True, 1.5],
    "type": ["ok", "invoke", "info", "fail", "event", "begin", None, 3],
    "f": ["acquire", "release", "session", "client-end", "read", "", None, 7],
    "time": [0, -1, 10**18, 1.5, "5", None, True],
    "value": [None, {}, {"records": -1}, {"records": 10**6}, {"records": "3"}, 1, "x"],
}
# What to corrupt: the client's own file (0: the runner's), as a kind of file, its bytes or a
# record; `same`: a change that does not matter (the verdict must be the uncorrupted one's).


@dataclass(frozen=True)
class Corruption:
    client: int
    kind: str  # what the tally counts it under
    what: str
    arg: Any = None
    same: bool = False

    def __repr__(self) -> str:
        return f"client {self.client}: {self.what}" + (f" {self.arg!r}" if self.arg else "")


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def apply(c: Corruption, run: Path) -> None:
    path = client_file(run, c.client)
    if c.kind == "kind":
        if c.what == "missing":
            path.unlink()
        else:
            make_kind(path, c.what, outside=Path("/etc/passwd"))
        return
    text = path.read_text()
    lines = _lines(path)
    k = c.arg[0] % len(lines) if isinstance(c.arg, tuple) else 0
    if c.what == "cut":
        path.write_text(text[: c.arg % max(1, len(text))])
    elif c.what == "junk":
        lines[k] = c.arg[1] + "\n"
    elif c.what == "dropped":
        del lines[k]
    elif c.what == "repeated":
        lines.insert(k, lines[k])
    elif c.what == "swapped" and len(lines) > 1:
        k = min(k, len(lines) - 2)
        lines[k], lines[k + 1] = lines[k + 1], lines[k]
    elif c.what == "field":
        rec = json.loads(lines[k])
        rec[c.arg[1]] = c.arg[2]
        lines[k] = json.dumps(rec) + "\n"
    elif c.what == "blank lines":
        lines.insert(k, "\n  \n")
    elif c.what == "keys reordered":
        rec = json.loads(lines[k])
        lines[k] = json.dumps(dict(reversed(list(rec.items()))), indent=None) + "\n"
    if c.what != "cut":
        path.write_text("".join(lines))


def corruptions() -> st.SearchStrategy[Corruption]:
    client = st.sampled_from([1, 2, 2, 0])
    line = st.integers(0, 40)
    kinds = st.tuples(client, st.sampled_from(["missing", *KINDS])).map(
        lambda a: Corruption(a[0], "kind", a[1])
    )
    cut = st.tuples(client, st.integers(0, 4000)).map(
        lambda a: Corruption(a[0], "cut", "cut", a[1])
    )
    junk = st.tuples(client, line, st.sampled_from(JUNK)).map(
        lambda a: Corruption(a[0], "line", "junk", (a[1], a[2]))
    )
    moved = st.tuples(client, st.sampled_from(["dropped", "repeated", "swapped"]), line).map(
        lambda a: Corruption(a[0], "line", a[1], (a[2],))
    )
    field = st.tuples(client, line, st.sampled_from(sorted(FIELDS))).flatmap(
        lambda a: st.sampled_from(FIELDS[a[2]]).map(
            lambda v, a=a: Corruption(a[0], "field", "field", (a[1], a[2], v))
        )
    )
    same = st.tuples(client, st.sampled_from(["blank lines", "keys reordered"]), line).map(
        lambda a: Corruption(a[0], "no matter", a[1], (a[2],), same=True)
    )
    return st.one_of(kinds, cut, junk, moved, field, same)


def judge(
    c: Corruption, base_code: int, got: tuple[int | str, str, str], made: set[str]
) -> str | None:
    code, out, err = got
    said = out + err
    if not isinstance(code, int) or code == 254:
        return refusal_wrong(code, err, made)
    if "Traceback" in said or code not in (0, 1, 2):
        return f"exit {code}: {said[-300:]}"
    if made:
        return f"created outside the run's folder: {sorted(made)[:5]}"
    named = next((x for x in said.splitlines() if x.strip().startswith("clients:")), "")
    who = (f"client {c.client}:", f"client {c.client} (")  # 0: "(the runner's own session):"
    if code == 2 and any(w in named for w in who) and not c.same:
        return None
    if code == base_code:
        return None if c.same or not named else f"the same verdict, yet {named.strip()}"
    return f"exit {code} (the uncorrupted run: {base_code}): {named.strip() or said[-200:]}"


@pytest.fixture
def bases(tmp_path_factory) -> Path:
    """The two interrupted runs, with the files a finished `analyze` would otherwise write
    (the reports, as placeholders, and results.json with the run's verdict), so each example
    judges and renders nothing else."""
    root = tmp_path_factory.mktemp("client-files")
    for name, (holds, code) in BASES.items():
        run = make_interrupted(root, holds, name)
        valid = {0: True, 1: False}[code]
        (run / "results.json").write_text(json.dumps({"valid": valid}))
        for report in ("timeline.html", "latency.png", "rate.png"):
            (run / report).write_text("")
    return root


def test_the_bases_are_judged_as_they_are(bases, monkeypatch):
    monkeypatch.chdir(bases)
    for name, (_, code) in BASES.items():
        got = run_bounded(["analyze", str(bases / name)])
        assert got[0] == code and "clients:" not in got[1] + got[2], (name, got)


def test_corrupted_client_files_never_give_a_verdict_the_run_did_not_earn(
    bases, tmp_path, monkeypatch, request
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/zkjepsen-client-files.sock")
    tally = Tally()
    count = iter(range(10**9))

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=SEEDED is None,
        suppress_health_check=list(HealthCheck),
    )
    @given(corruptions(), st.sampled_from(sorted(BASES)))
    def one(c: Corruption, base: str) -> None:
        ws = tmp_path / f"w{next(count)}"
        run = ws / base
        shutil.copytree(bases / base, run, symlinks=True)
        apply(c, run)
        before = snapshot(ws, skip=run)
        got = run_bounded(["analyze", str(run)])
        why = judge(c, BASES[base][1], got, snapshot(ws, skip=run) - before)
        tally.add(f"{base} {c.kind}", f"{base} run, {c!r}", why)
        shutil.rmtree(ws, ignore_errors=True)

    seeded(one, "ZKJEPSEN_CLIENT_FILES_SEED")()
    summary = tally.report(request, "corrupted client files")
    tally.assert_none_wrong(summary)
    assert sum(tally.tried.values()) >= EXAMPLES // 2
