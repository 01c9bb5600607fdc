"""An interrupted command of many runs (gate, matrix, scenario run, replay, shrink) ends with a
last line like `test`'s (issue 41): how many runs finished and where their folders are, each run
the interrupt cut short and what its folder holds, and for a matrix its record
(`matrix-runs.json`, written) and the command that resumes it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from stored_folder import make_run

from zkjepsen.cli import interrupted_message
from zkjepsen.run import fanout
from zkjepsen.run.outcome import (
    Phase,
    RunResult,
    Teardown,
    TerminatedRun,
    note_many,
    stopped,
    stopped_by,
)
from zkjepsen.run.spec import TestSpec


@pytest.fixture(autouse=True)
def signals_restored():
    """An interrupted command ignores further signals on its way out (cli.exit_interrupted):
    give the next tests their handlers back."""
    import signal

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def finished_run(spec, root: Path, name: str) -> RunResult:
    folder = make_run(root, name)
    return RunResult(spec, folder, True, {"valid": True}, {})


def cut_folder(root: Path) -> Path:
    folder = make_run(root, "cut")
    for name in ("results.json", "schedule.json"):
        (folder / name).unlink()
    return folder


def test_the_one_slot_fan_out_says_what_finished_and_what_was_cut(tmp_path, monkeypatch):
    cut = cut_folder(tmp_path)
    calls = []

    def run_test(spec, store_root, **kw):
        calls.append(spec)
        if len(calls) == 1:
            return finished_run(spec, tmp_path, "first")
        raise stopped(KeyboardInterrupt(), Teardown("zkj-2", cut, [], phase=Phase.MAIN))

    monkeypatch.setattr(fanout, "run_test", run_test)
    jobs = [fanout.Job(TestSpec(seed=i)) for i in range(3)]
    with pytest.raises(KeyboardInterrupt) as info:
        fanout.run_jobs(jobs, fanout.Engine(), 1)
    msg = interrupted_message(info.value)
    assert msg.startswith(f"zkjepsen: interrupted; 1 run finished (folders: {tmp_path / 'first'})")
    assert f"a run cut short during the main phase: its folder {cut} has test.json" in msg
    assert f"`zkjepsen analyze {cut}` writes results.json" in msg
    assert "everything those runs started was removed" in msg
    assert len(calls) == 2, "nothing started after the interrupt"


def test_earlier_batches_are_added_and_nothing_is_said_twice(tmp_path):
    a, b = make_run(tmp_path, "a"), make_run(tmp_path, "b")
    e = note_many(KeyboardInterrupt(), [a], [])
    assert isinstance(e, KeyboardInterrupt)  # its typed twin: caught where a Ctrl-C is
    assert note_many(e, [a, b, Path("")], [Teardown("zkj-9", Path(""), [], Phase.SETUP)]) is e
    carried = stopped_by(e)
    assert carried is not None and carried.many is not None
    assert carried.many.finished == [a, b] and carried.many.cut == []
    assert interrupted_message(e, "received SIGTERM") == (
        f"zkjepsen: received SIGTERM; 2 runs finished (folders: {a}, {b})."
    )


def test_a_run_cut_that_left_something_behind_says_so(tmp_path):
    td = Teardown("zkj-3", cut_folder(tmp_path), ["1 container"], Phase.RECOVERY)
    e = note_many(KeyboardInterrupt(), [], [td])
    msg = interrupted_message(e)
    assert "0 runs finished" in msg and "run zkj-3 left 1 container behind" in msg


def test_a_worker_stopped_by_its_parent_writes_where_its_folder_is(tmp_path, monkeypatch):

    cut = cut_folder(tmp_path)

    def run_test(*a, **k):
        raise TerminatedRun("received signal 15", Teardown("zkj-4", cut, [], phase=Phase.MAIN))

    monkeypatch.setattr(fanout, "run_test", run_test)
    monkeypatch.setattr(fanout, "_watch_parent", lambda parent: None)
    job = {
        "spec": TestSpec().to_json(),
        "schedule": None,
        "engine": "default",
        "store_root": None,
        "result": str(tmp_path / "result-0.json"),
        "parent": __import__("os").getppid(),  # never orphaned: the result file is written
        "pdeathsig": False,
    }
    (tmp_path / "job-0.json").write_text(json.dumps(job))
    fanout.worker_main(["x", str(tmp_path / "job-0.json")])
    td = fanout._cut_teardown(tmp_path / "result-0.json")
    assert (td.run_id, td.store_dir, td.phase) == ("zkj-4", cut, "main phase")


def test_the_pool_collects_how_each_stopped_run_ended(tmp_path):
    cut = cut_folder(tmp_path)
    pool = fanout.Pool([fanout.Engine()], None)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    result = pool.tmp / "result-0.json"
    td = {"run_id": "zkj-5", "store_dir": str(cut), "left": [], "phase": "recovery"}
    result.write_text(json.dumps({"ok": False, "teardown": td}))
    pool.running[proc] = (0, fanout.Job(TestSpec()), fanout.Engine(), result)
    try:
        got = pool.stop_all()
    finally:
        shutil.rmtree(pool.tmp, ignore_errors=True)  # run() removes it; this test never runs
    assert proc.returncode is not None and not pool.running
    assert [(t.run_id, t.store_dir, t.phase) for t in got] == [("zkj-5", cut, "recovery")]


def test_an_interrupted_matrix_writes_its_record_and_says_how_to_resume(tmp_path, monkeypatch):
    from zkjepsen.cli import main, matrix
    from zkjepsen.run import many

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(matrix, "placement", lambda *a: (None, None))

    def run_jobs(jobs, engine, parallel, store_root, on_start, on_done, **kw):
        on_start(0, jobs[0], fanout.Engine())
        on_done(0, fanout.Outcome(jobs[0], "default", finished_run(jobs[0].spec, tmp_path, "m1")))
        raise KeyboardInterrupt

    monkeypatch.setattr(many, "run_jobs", run_jobs)
    store = tmp_path / "store"
    argv = ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--runs", "2"]
    with pytest.raises(SystemExit) as e:
        main([*argv, "--store", str(store), "--out", str(tmp_path / "m.md")])
    assert e.value.code == 130
    record = json.loads((store / "matrix-runs.json").read_text())
    assert len(record["runs"]) == 1


def test_an_interrupted_matrix_line(tmp_path, monkeypatch, capsys):
    from zkjepsen.cli import main, matrix
    from zkjepsen.run import many

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(matrix, "placement", lambda *a: (None, None))

    def run_jobs(*a, **kw):
        raise KeyboardInterrupt  # before any run finished: the record is written all the same

    monkeypatch.setattr(many, "run_jobs", run_jobs)
    store = tmp_path / "store"
    with pytest.raises(SystemExit) as e:
        main(["matrix", "--recipes", "kazoo", "--nemeses", "none", "--store", str(store)])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert e.value.code == 130
    assert f"{store / 'matrix-runs.json'}" in last and "--resume" in last, last
    assert (store / "matrix-runs.json").exists()
