"""`zkjepsen hunt --config FILE.toml`: a `test` config's target settings (the command line
winning, both checked as `test` checks them), its schedule left to the hunt and said so; a bad
file refused as `test` refuses it, before anything is created."""

from __future__ import annotations

import pytest
from test_bad_input import assert_refused, here, run_cli  # noqa: F401 - `here` is a fixture

from zkjepsen.cli.hunt import hunt_base, with_hunt_config

PROGRAM = """
client_cmd = "python3 my_lock.py"
client_dir = "."
backend = "etcd"
clients = 5
session_timeout_s = 3
time_limit_s = 40
nemesis = "pause-client"
fault_trigger = "on-acquire"
[params]
resource = "fenced"
hold_s = 1.0
"""


def base_of(toml: str, cli: dict, tmp_path):
    tmp_path.chmod(0o755)  # the program's directory must be readable by the container's user
    path = tmp_path / "c.toml"
    path.write_text(toml)
    settings, unused = with_hunt_config(path, cli)
    settings = dict(settings)
    limit = float(settings.pop("time_limit_s", 15.0))
    params = dict(settings.pop("params", None) or {})
    return hunt_base(settings, limit, None, params, {}), unused


def test_the_config_gives_the_target_and_the_hunt_keeps_the_schedule(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base, unused = base_of(PROGRAM, {}, tmp_path)
    assert (base.client_cmd, base.backend, base.clients) == ("python3 my_lock.py", "etcd", 5)
    assert base.session_timeout_s == 3 and base.time_limit_s == 40
    assert base.params["resource"] == "fenced" and base.params["hold_s"] == 1.0
    assert base.params["acquire_timeout_s"] == 30.0  # the hunt's own default, under the file's
    assert unused == ["fault_trigger", "nemesis"]
    assert base.client_dir == str(tmp_path)  # absolute: the reproducer runs from anywhere


def test_the_command_line_wins_over_the_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli = {"clients": 3, "time_limit_s": 20.0, "params": {"hold_s": 2.0}}
    base, _ = base_of(PROGRAM, cli, tmp_path)
    assert base.clients == 3 and base.time_limit_s == 20.0
    assert base.params["hold_s"] == 2.0 and base.params["resource"] == "fenced"


def test_without_a_config_the_hunt_defaults_stand(tmp_path):
    settings, unused = with_hunt_config(None, {"recipe": "kazoo"})
    base = hunt_base(dict(settings), 15.0, None, {}, {})
    assert unused == [] and base.time_limit_s == 15.0 and base.session_timeout_s == 2.0


@pytest.mark.parametrize(
    "toml,words",
    [
        ('recipe = "kazoo"\nbogus = 1', ["bogus", "valid ones"]),
        ('recipe = "kazoo"\nclients = "x"', ["clients"]),
        ('recipe = "kazoo"\nparams = 3', ["params"]),
        ("recipe = ", ["c.toml"]),
    ],
)
def test_a_bad_config_is_refused_before_anything_is_created(toml, words, here, capsys):  # noqa: F811
    (here / "c.toml").write_text(toml)
    code, err = run_cli(["hunt", "--config", "c.toml"], capsys)
    assert_refused(code, err, here, *words)


def test_a_config_that_is_not_a_file_is_refused(here, capsys):  # noqa: F811
    import os

    os.mkfifo(here / "c.toml")
    code, err = run_cli(["hunt", "--recipe", "kazoo", "--config", "c.toml"], capsys)
    assert_refused(code, err, here)
