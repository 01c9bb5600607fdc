"""Every client accounted for (issue 48): a run's verdict covers every client its spec started.
A client whose file is missing, empty, not a regular file of the run's folder (a link to
/etc/passwd), cut short, or whose records stop making sense (an `ok` with no `invoke`, a record
lost or added, another client's record, no end), or that never initialized, makes the run UNKNOWN
naming it, never VALID and never the verdict of records that are not what ran: in `analyze` of an
interrupted run (its clients' files), and after a run (run/accounting.py `merged`, the history
the runner writes, and `check_run`, its verdict) - the same step. One case per class here;
test_client_files_properties.py draws corruptions of every kind.

And a `--recipe module:Name` that is no lock recipe (`os:system`) is refused up front.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from client_files import (
    BYTE_CLASSES,
    OVERLAP,
    RECORD_CLASSES,
    TURNS,
    client_file,
    edit,
    make_interrupted,
)
from hostile import DEAD_ENGINE, KINDS, make_kind, refusal_wrong, run_bounded, snapshot

from zkjepsen.client.main import next_process
from zkjepsen.client.recorder import Recorder
from zkjepsen.errors import BadInput
from zkjepsen.history import History, Op
from zkjepsen.history.jsonl import Seal, checked_history
from zkjepsen.recipes import validate_recipe
from zkjepsen.run.accounting import account, merged, read_client, with_clients
from zkjepsen.run.analysis import check_run
from zkjepsen.run.stored import StoredRun
from zkjepsen.store import RunDir

BASES = {"valid": (TURNS, 0), "invalid": (OVERLAP, 1)}


@pytest.fixture
def ws(tmp_path, monkeypatch):
    from zkjepsen import store

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", DEAD_ENGINE)
    for name in ("DOCKER_CONTEXT", "ZKJEPSEN_STORE", "GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(store, "DEFAULT_ROOT", Path("store"))
    return tmp_path


def unaccounted(code, out: str, err: str, client: int) -> None:
    """`analyze` said UNKNOWN (exit 2), its part `clients` naming `client`."""
    said = out + err
    line = next((x for x in said.splitlines() if x.strip().startswith("clients:")), "")
    assert code == 2 and "UNKNOWN" in line and f"client {client}:" in line, (code, said)


def corrupt(run: Path, client: int, what: str) -> None:
    path = client_file(run, client)
    if what in RECORD_CLASSES:
        edit(path, RECORD_CLASSES[what])
    elif what in BYTE_CLASSES:
        path.write_text(BYTE_CLASSES[what](path.read_text()))
    elif what == "missing":
        path.unlink()
    else:
        make_kind(path, what, outside=Path("/etc/passwd"))


CLASSES = ["missing", *KINDS, *RECORD_CLASSES, *BYTE_CLASSES]


def test_the_uncorrupted_runs_are_judged_on_their_records(ws):
    """Without this, an UNKNOWN below could be the base's own."""
    for name, (holds, code) in BASES.items():
        run = make_interrupted(ws, holds, name)
        got, out, err = run_bounded(["analyze", str(run)])
        assert got == code and "clients:" not in out + err, (name, got, out + err)


@pytest.mark.parametrize("what", CLASSES)
@pytest.mark.parametrize("base", sorted(BASES))
def test_a_client_file_that_does_not_account_for_its_client_makes_analyze_unknown(ws, base, what):
    run = make_interrupted(ws, BASES[base][0])
    client = 1 if what in ("sparse", "deep") else 2  # either client, either base
    corrupt(run, client, what)
    before = snapshot(ws, skip=run)
    code, out, err = run_bounded(["analyze", str(run)])
    unaccounted(code, out, err, client)
    assert snapshot(ws, skip=run) == before


@pytest.mark.parametrize("what", ["missing", "outside", "garbage line", *RECORD_CLASSES])
def test_after_a_run_the_history_says_why_and_analyze_reproduces_it(ws, what):
    """What the runner does after the teardown: merge the files (run/accounting.py), write
    history.jsonl, judge it; `analyze` of the finished run reads history.jsonl alone."""
    run = make_interrupted(ws, OVERLAP)
    corrupt(run, 2, what)
    records = merged(RunDir(run), 2)
    marks = [r for r in records if r["f"] == "unaccounted"]
    assert [m["client"] for m in marks] == [2], records
    history = checked_history(records)
    stored = StoredRun.load(run)
    result = check_run(history, stored.spec)
    assert result.valid == "unknown" and "client 2:" in result.parts["clients"].reason
    history.to_jsonl(run / "history.jsonl")
    for c in (0, 1, 2):  # the finished run's verdict comes from its history alone
        if os.path.lexists(client_file(run, c)):
            client_file(run, c).unlink()
    code, out, err = run_bounded(["analyze", str(run)])
    unaccounted(code, out, err, 2)


def test_the_checkers_findings_stay_as_evidence_of_an_unknown_run(ws):
    run = make_interrupted(ws, OVERLAP)
    corrupt(run, 2, "no end")
    result = check_run(StoredRun.load(run).history(), StoredRun.load(run).spec)
    assert result.valid == "unknown"
    assert result.parts["lock"].valid is False and result.parts["lock"].violations


def test_a_client_the_history_never_mentions_is_named():
    """A client that never wrote a record (its container never started, its file never
    merged) is as unaccounted as one whose file is bad; so is a client the spec never had."""
    ops = [Op(0, 5, 0, "event", "client-end", None, Seal().value(), 0)]
    part = account(2, [])
    assert part is not None and "client 1:" in part.reason and "client 2:" in part.reason
    checked = with_clients(check_run_stub(), History(ops), 2)
    assert checked.valid == "unknown" and "client 1:" in checked.parts["clients"].reason
    three = [*ops, Op(1, 6, 3, "event", "session", None, {}, 3)]
    assert "client 3:" in with_clients(check_run_stub(), History(three), 2).parts["clients"].reason


def check_run_stub():
    from zkjepsen.checker import Result

    return Result(True)


# ---- the recorder's side: what a client writes accounts for it --------------------------------
def test_a_recorders_file_accounts_for_its_client_and_a_restart_after_a_cut_line_too(tmp_path):
    run = RunDir(tmp_path)
    path = run.client_history(1)
    path.parent.mkdir(parents=True)
    rec = Recorder(str(path), 0, 1, 2)
    rec.op("event", "session", None, {"session_id": "0x1"})
    rec.op("invoke", "acquire", "/l", None)
    rec.finish()
    assert read_client(run, 1, path).problem is None
    rec = Recorder(str(path), 0, 1, 2)  # a second life, killed mid-write: a line cut short
    rec.process = next_process(path, 1, 2)  # as client/main.py: a new process id
    rec.op("invoke", "release", "/l", None)
    rec.close()
    with open(path, "a") as fh:
        fh.write('{"time": 9, "proce')
    assert "cut short" in str(read_client(run, 1, path).problem)
    rec = Recorder(str(path), 0, 1, 2)  # a third: the cut line goes, the count goes on
    rec.process = next_process(path, 1, 2)
    rec.op("event", "session", None, {"session_id": "0x2"})
    rec.finish()
    assert read_client(run, 1, path).problem is None
    assert '{"time": 9,' not in path.read_text()


def test_a_client_that_never_initialized_is_named_so(tmp_path):
    """The escaped child's case: the program never answered init, the recorder recorded its
    client-errors and ended."""
    run = RunDir(tmp_path)
    path = run.client_history(2)
    path.parent.mkdir(parents=True)
    rec = Recorder(str(path), 0, 2, 2)
    rec.op("event", "client-error", None, "init was never answered within 20 s")
    rec.finish()
    assert "never initialized" in str(read_client(run, 2, path).problem)


# ---- callables that are not lock recipes --------------------------------------------------------
@pytest.mark.parametrize("recipe", ["os:system", "json:dumps", "threading:Lock", "builtins:print"])
def test_a_callable_that_is_no_lock_recipe_is_refused_up_front(ws, recipe):
    before = snapshot(ws)
    code, _, err = run_bounded(["test", "--recipe", recipe, "--time-limit", "5"])
    assert refusal_wrong(code, err, snapshot(ws) - before) is None, (code, err)
    assert "not a lock recipe" in err and recipe in err


def test_a_lock_recipe_class_passes():
    validate_recipe("zkjepsen.recipes.kazoo_lock:KazooLock")
    with pytest.raises(BadInput, match="no acquire"):
        validate_recipe("zkjepsen.run.spec:TestSpec")
