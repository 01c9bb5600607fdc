"""Evidence handed back to the tool is checked as hard as what it makes (issue 41): a stored
run's test.json, history, schedule.json and results.json, and every file it opens; each wrong
case one sentence and exit 254 (255: no engine), before anything acts on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile import cpu_bounded
from stored_folder import jsonl, lock_records, make_run, stored_spec
from test_bad_input import assert_refused, run_cli

from zkjepsen.run.stored_checks import STORED_SPEC_FIELDS

BOUND_S = 60  # CPU seconds (hostile.cpu_bounded): a refusal takes well under one


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent")  # nothing may reach an engine
    return tmp_path


def write_spec(run: Path, doc) -> None:
    (run / "test.json").write_text(json.dumps(doc))


# ---- test.json: every field that changes what would run, never a silent default -------------
@pytest.mark.parametrize("field", STORED_SPEC_FIELDS)
def test_a_stored_spec_missing_a_field_is_refused_naming_file_and_field(field, here, capsys):
    run = make_run(here)
    doc = stored_spec()
    del doc[field]
    write_spec(run, doc)
    code, err = run_cli(["replay", str(run)], capsys)
    assert_refused(code, err, here, "test.json", repr(field))


@pytest.mark.parametrize("cmd", ["analyze", "replay", "shrink"])
def test_an_empty_stored_spec_is_refused_not_filled_with_defaults(cmd, here, capsys):
    run = make_run(here)
    write_spec(run, {})
    code, err = run_cli([cmd, str(run)], capsys)
    assert_refused(code, err, here, f"{run / 'test.json'}", "'recipe'")


@pytest.mark.parametrize("field", ["recipe", "clients", "backend"])
def test_a_recorded_value_stored_as_null_is_refused(field, here, capsys):
    """null would mean today's default (for the recipe: kazoo), not what the run had."""
    run = make_run(here)
    write_spec(run, {**stored_spec(), field: None})
    code, err = run_cli(["replay", str(run)], capsys)
    assert_refused(code, err, here, f"'{field}'", "null")


@pytest.mark.parametrize("field", ["version", "tick_ms", "client_suite"])
def test_a_stored_service_table_missing_a_field_is_refused(field, here, capsys):
    run = make_run(here)
    doc = stored_spec()
    del doc["service"][field]
    write_spec(run, doc)
    code, err = run_cli(["analyze", str(run)], capsys)
    assert_refused(code, err, here, "test.json", f"service.{field}")


@pytest.mark.parametrize("field", ["version", "tick_ms"])
def test_a_stored_service_setting_left_to_its_default_is_refused(field, here, capsys):
    run = make_run(here)
    doc = stored_spec()
    doc["service"][field] = None
    write_spec(run, doc)
    code, err = run_cli(["replay", str(run)], capsys)
    assert_refused(code, err, here, "test.json", f"service.{field}", "null")


def test_a_run_stored_before_services_owned_their_settings_still_loads(here):
    """Its flat keys (`zk_version`, `tick_ms`, ...) are read into `service` (run/spec.py's one
    compat function); a missing one is refused like any field."""
    from zkjepsen.errors import BadInput
    from zkjepsen.run.stored import StoredRun

    run = make_run(here)
    doc = {k: v for k, v in stored_spec().items() if k != "service"}
    old = {**doc, "zk_version": "3.4", "tick_ms": 500, "client_suite": None}
    write_spec(run, {**old, "etcd_version": None})
    assert StoredRun.load(run).spec.service.version == "3.4"
    write_spec(run, {k: v for k, v in old.items() if k != "zk_version"})
    with pytest.raises(BadInput, match="'zk_version'"):
        StoredRun.load(run)


def test_a_stored_spec_value_out_of_range_names_the_file(here, capsys):
    run = make_run(here)
    write_spec(run, {**stored_spec(), "nodes": 50})
    code, err = run_cli(["analyze", str(run)], capsys)
    assert_refused(code, err, here, "test.json", "nodes")


def test_a_replay_runs_exactly_the_recorded_spec_and_says_so(here, monkeypatch):
    from zkjepsen.cli.reproduce import recorded_spec_line
    from zkjepsen.reproduce import replay as replay_mod
    from zkjepsen.run.stored import StoredRun

    run = StoredRun.load(make_run(here), need_results=True, need_schedule=True)
    seen = []
    monkeypatch.setattr(replay_mod, "run_jobs", lambda jobs, *a, **k: seen.extend(jobs) or [])
    replay_mod.replay(run, 2)
    recorded = stored_spec()
    assert len(seen) == 2
    # Its faults are the schedule's (none here): the replay is named after what it runs.
    same = [k for k in (*STORED_SPEC_FIELDS, "service") if k != "nemesis"]
    for job in seen:
        got = job.spec.to_json()
        assert {k: got[k] for k in same} == {k: recorded[k] for k in same}
        assert got["nemesis"] == ["none"] and job.schedule == {"faults": []}
    line = recorded_spec_line(run)
    assert "recorded spec" in line and "3 servers, 5 clients" in line and "seed 7" in line


# ---- the history: indexes and values ------------------------------------------------------------
def corrupt(records: list[dict], k: int, **change) -> list[dict]:
    out = [dict(r) for r in records]
    out[k].update(change)
    return out


def first_grant(records: list[dict]) -> int:
    return next(k for k, r in enumerate(records) if r["f"] == "acquire" and r["type"] == "ok")


RECORDS = lock_records()
BAD_HISTORIES = {
    "negative index": (corrupt(RECORDS, 3, index=-1), "negative"),
    "duplicate index": (corrupt(RECORDS, 3, index=2), "strictly increasing"),
    "index going back": (corrupt(RECORDS, 5, index=1), "strictly increasing"),
    "ok acquire granting a string": (
        corrupt(RECORDS, first_grant(RECORDS), value="tok"),
        "whole-number token",
    ),
    "token that is not a number": (
        corrupt(RECORDS, first_grant(RECORDS), value={"token": "tok"}),
        "whole-number token",
    ),
    "index not a number": (corrupt(RECORDS, 3, index="abc"), "index"),
}


@pytest.mark.parametrize("case", sorted(BAD_HISTORIES))
@pytest.mark.parametrize("cmd", ["analyze", "replay"])
def test_a_history_with_impossible_records_is_refused_not_judged(case, cmd, here, capsys):
    records, words = BAD_HISTORIES[case]
    run = make_run(here)
    (run / "history.jsonl").write_text(jsonl(records))
    code, err = run_cli([cmd, str(run)], capsys)
    assert_refused(code, err, here, "history.jsonl", "line", words)
    assert not (run / "timeline.html").exists(), "nothing judged, nothing written"


def test_a_client_file_with_a_bad_record_is_refused_when_merged(here, capsys):
    """An interrupted run is analyzed from its clients' own files: evidence too."""
    run = make_run(here)
    (run / "history.jsonl").unlink()
    (run / "clients" / "c1").mkdir(parents=True)
    records = [r for r in RECORDS if r["client"] == 1]
    records[1] = {**records[1], "value": "tok"}
    (run / "clients" / "c1" / "client-1.jsonl").write_text(jsonl(records))
    code, err = run_cli(["analyze", str(run)], capsys)
    assert_refused(code, err, here, "whole-number token")


def test_a_clean_history_is_judged(here, capsys):
    run = make_run(here)
    code, err = run_cli(["analyze", str(run)], capsys)
    assert code in (0, 2), err  # valid, or unknown for what it did not exercise


# ---- schedule.json and results.json -------------------------------------------------------------
@pytest.mark.parametrize("cmd", ["replay", "shrink"])
def test_a_missing_schedule_is_refused_not_replayed_as_no_faults(cmd, here, capsys):
    run = make_run(here)
    (run / "schedule.json").unlink()
    code, err = run_cli([cmd, str(run)], capsys)
    assert_refused(code, err, here, "schedule.json", "no fault schedule")


@pytest.mark.parametrize(
    "name,text,words",
    [
        ("schedule.json", "{}", ["no field 'faults'", "a list of fault tables"]),
        ("schedule.json", '{"faults": null}', ["field 'faults' is null"]),
        ("results.json", '{"valid": "maybe"}', ["valid"]),
        ("results.json", "[]", ["results"]),
    ],
)
def test_a_schedule_or_results_of_the_wrong_shape_is_refused(name, text, words, here, capsys):
    run = make_run(here)
    (run / name).write_text(text)
    code, err = run_cli(["replay", str(run)], capsys)
    assert_refused(code, err, here, *words)


# ---- files opened safely: regular files only, no hang, no internal error ------------------------
def cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """The command in a process of its own, bounded: a hang is a failure, not a stuck suite."""
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent"}
    return subprocess.run(
        [sys.executable, "-m", "zkjepsen.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        **cpu_bounded(BOUND_S),
    )


def assert_refused_proc(p: subprocess.CompletedProcess, *words: str) -> None:
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert p.returncode == 254 and len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    for w in words:
        assert w in p.stderr, p.stderr


@pytest.mark.parametrize("name", ["history.jsonl", "test.json", "results.json", "schedule.json"])
def test_a_named_pipe_in_a_run_folder_is_refused_not_read(name, tmp_path):
    run = make_run(tmp_path)
    (run / name).unlink()
    os.mkfifo(run / name)
    cmd = "replay" if name == "schedule.json" else "analyze"
    assert_refused_proc(cli([cmd, str(run)], tmp_path), name, "named pipe")


def test_a_device_as_history_is_refused(tmp_path):
    run = make_run(tmp_path)
    (run / "history.jsonl").unlink()
    (run / "history.jsonl").symlink_to("/dev/zero")
    assert_refused_proc(cli(["analyze", str(run)], tmp_path), "character device")


def test_a_run_folder_that_is_a_symlink_loop_is_refused(tmp_path):
    (tmp_path / "loop").symlink_to("loop")
    for cmd in ("analyze", "replay", "shrink"):
        assert_refused_proc(cli([cmd, "loop"], tmp_path), "symbolic link loop")


def test_a_file_in_a_run_folder_that_is_a_symlink_loop_is_refused(tmp_path):
    run = make_run(tmp_path)
    (run / "results.json").unlink()
    (run / "results.json").symlink_to("results.json")
    assert_refused_proc(cli(["analyze", str(run)], tmp_path), "symbolic link loop")


def test_check_of_a_named_pipe_is_refused_within_its_time_limit(tmp_path):
    os.mkfifo(tmp_path / "h.jsonl")
    p = cli(["check", "h.jsonl", "--model", "mutex", "--time-limit", "3"], tmp_path)
    assert_refused_proc(p, "named pipe")


def test_a_config_that_is_a_named_pipe_is_refused(tmp_path):
    os.mkfifo(tmp_path / "c.toml")
    assert_refused_proc(cli(["test", "--config", "c.toml"], tmp_path), "named pipe")


def test_the_check_time_limit_covers_what_the_search_does_not():
    """A read blocked in the kernel (here a sleep) is cut at the limit plus its grace."""
    from zkjepsen.cli.check import OutOfTime, time_limit_guard

    with pytest.raises(OutOfTime), time_limit_guard(0.05):
        time.sleep(BOUND_S)  # raising at all is the proof: slept out, it would not
    with time_limit_guard(30):  # and a block that ends in time is left alone, the timer gone
        pass
    import signal

    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
