"""Bad input is one sentence and exit 254, before anything is created (no store folder, no
`latest` link, no container: these run without a Docker engine, so validation must come first)."""

from __future__ import annotations

import json
import os

import pytest
from stored_folder import stored_spec

from zkjepsen.cli import main


def run_cli(args: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        main(args)
    err = capsys.readouterr().err
    return e.value.code, err


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent")  # nothing may reach an engine
    return tmp_path


def assert_refused(code: int, err: str, here, *words: str) -> None:
    assert code == 254, err
    lines = [x for x in err.strip().splitlines() if x]
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, err
    assert not (here / "store").exists(), "bad input must not create the store"


@pytest.mark.parametrize(
    "args,words",
    [
        (["--time-limit", "nan"], ["finite"]),
        (["--time-limit", "inf"], ["finite"]),
        (["--time-limit", "0"], ["time limit"]),
        (["--interval", "soon"], ["--interval"]),
        (["--fault-trigger", "released"], ["fault_trigger", "acquired, acquired-each, time"]),
        (["--session-timeout", "-3"], ["session timeout"]),
        (["--param", "resource=bogus"], ["resource", "fenced"]),
        (["--param", "hold_s=fast"], ["hold_s"]),
        (["--param", "nosuch=1"], ["unknown parameter"]),
        (["--image", "Not A Valid::Ref"], ["image reference"]),
        (["--recipe", "nosuch"], ["unknown recipe"]),
        (["--recipe", "nosuch_pkg.mod:Lock"], ["cannot import"]),
        (["--nemesis", "pause-everything"], ["unknown nemesis"]),
        (["--nemesis", "partition-redlock"], ["does not apply to backend zookeeper"]),
        (["--recipe", "redlock", "--nemesis", "kill-leader"], ["no leader"]),
        (["--nemesis", "member-replace", "--zk-version", "3.4"], ["3.4 has no dynamic reconf"]),
        (["--recipe", "redis-setnx", "--nemesis", "member-add"], ["membership cannot change"]),
        (["--workload", "nosuch"], ["unknown workload"]),
        (["--recipe", "exec"], ["--client-cmd"]),
        (["--recipe", "blog", "--client-cmd", "true"], ["not both"]),
        (["--client-cmd", "true", "--workload", "queue"], ["serves the lock", "not queue"]),
        (["--client-cmd", "true", "--client-dir", "nowhere"], ["not a directory"]),
        (["--recipe", "exec:./nosuch"], ["not an executable file"]),
        (["--client-cmd", "true", "--client-mode", "in-process"], ["cannot run in-process"]),
    ],
)
def test_test_command_refuses_bad_options(args, words, here, capsys):
    code, err = run_cli(["test", "--nodes", "3", *args], capsys)
    assert_refused(code, err, here, *words)


@pytest.mark.parametrize(
    "args,words",
    [
        (["hunt", "--budget", "0"], ["budget"]),
        (["hunt", "--budget", "-2m"], ["budget"]),
        (["hunt", "--budget", "a while"], ["--budget", "not a duration"]),
        (["hunt", "--budget", "inf"], ["--budget", "finite"]),
        (["hunt", "--shrink-budget", "0"], ["--shrink-budget"]),
        (["hunt", "--shrink-budget", "soon"], ["--shrink-budget"]),
        # a menu empty after applicability: each fault dropped, and why
        (["hunt", "--faults", "partition-redlock"], ["nothing to hunt with", "Redlock's 5"]),
        (["hunt", "--faults", "pause-everything"], ["unknown fault"]),
        (["hunt", "--junit-xml", "/proc/zkj-nowhere/h.xml"], ["--junit-xml"]),
        (["hunt", "--parallel", "2", "--cluster", "tcp://127.0.0.1:1"], ["--cluster"]),
        (["gate", "--hunt", "0"], ["--hunt"]),
        (["gate", "--hunt", "later"], ["--hunt"]),
        (["gate", "--hunt", "5m", "--workload", "counter"], ["lock or election"]),
    ],
)
def test_hunt_and_gate_hunt_refuse_bad_options(args, words, here, capsys):
    code, err = run_cli([*args[:1], "--recipe", "kazoo", *args[1:]], capsys)
    assert_refused(code, err, here, *words)


@pytest.mark.parametrize(
    "config,words",
    [
        ('clients = "x"', ["clients"]),
        ("nodes = 3.5", ["nodes"]),
        ("nodes = true", ["nodes"]),
        ("nodes = 0", ["nodes"]),
        ("time_limit_s = nan", ["finite"]),
        ('nemesis = "pause-client"\nparams = 3', ["params"]),
        ("seed = 1.5", ["seed"]),
        ("pin_clients = 2", ["pin_clients"]),
        ('name = "../escape"', ["name"]),
        ("bogus = 1", ["unknown test setting"]),
        ("nodes = [", ["config"]),
    ],
)
def test_config_values_are_typed(config, words, here, capsys):
    (here / "t.toml").write_text(config + "\n")
    code, err = run_cli(["test", "--config", "t.toml"], capsys)
    assert_refused(code, err, here, *words)


@pytest.mark.parametrize(
    "source,words",
    [
        ("def broken(:\n", ["SyntaxError"]),
        ("raise RuntimeError('boom at import')\n", ["RuntimeError", "boom at import"]),
        ("class Lock:\n    def release(self): pass\n", ["no acquire()", "holding()"]),
    ],
)
def test_user_recipes_are_checked_on_the_host(source, words, here, capsys, monkeypatch):
    pkg = here / "userlocks"
    pkg.mkdir()
    (pkg / "bad.py").write_text(source)  # no __init__.py: a namespace package
    monkeypatch.syspath_prepend(str(here))
    code, err = run_cli(["test", "--nodes", "3", "--recipe", "userlocks.bad:Lock"], capsys)
    assert_refused(code, err, here, *words)


def test_store_path_that_is_a_file(here, capsys):
    (here / "afile").write_text("x")
    code, err = run_cli(["test", "--nodes", "3", "--store", "afile/sub"], capsys)
    assert_refused(code, err, here, "store path", "is a file")


SPEC = stored_spec(clients=2)


def run_dir(here, **files) -> str:
    d = here / "run"
    d.mkdir()
    (d / "test.json").write_text(json.dumps(SPEC))
    (d / "results.json").write_text(json.dumps({"valid": False, "lock": {"valid": False}}))
    for name, text in {"schedule_json": '{"faults": []}', **files}.items():
        (d / name.replace("_", ".", 1)).write_text(text)
    return str(d)


@pytest.mark.parametrize(
    "files,cmd,words",
    [
        ({"schedule_json": "garbage"}, "replay", ["schedule.json"]),
        ({"schedule_json": '{"faults": [{"f": "x"}]}'}, "replay", ["'faults[0].start_ns'"]),
        ({"schedule_json": '{"faults": 3}'}, "shrink", ["schedule"]),
        ({"test_json": "[1, 2]"}, "analyze", ["test spec"]),
        ({"test_json": json.dumps({**SPEC, "nodes": "many"})}, "analyze", ["nodes"]),
        ({"test_json": "{}"}, "analyze", ["test.json", "recipe"]),
        ({"test_json": json.dumps({**SPEC, "clients": None})}, "analyze", ["clients", "null"]),
        ({"results_json": "{not json"}, "replay", ["results.json"]),
    ],
)
def test_stored_run_files_are_checked(files, cmd, words, here, capsys):
    d = run_dir(here, **files)
    before = sorted(os.listdir(d))
    code, err = run_cli([cmd, d], capsys)
    assert_refused(code, err, here, *words)
    assert sorted(os.listdir(d)) == before, "nothing written into the run"


def test_scenario_with_a_recipe_it_does_not_name(here, capsys):
    code, err = run_cli(["scenario", "run", "client-pause", "--recipe", "nosuch"], capsys)
    assert_refused(code, err, here, "nosuch")
