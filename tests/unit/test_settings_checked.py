"""Every setting is checked before anything is created, in every entry (issue 41): a recipe and a
client command are exclusive, a fault target comes from a declared set, timeouts are more than
0, numeric parameters have upper bounds that say why, the gate takes its own workloads, a
config's engine is used or refused, and no engine is 255 for gate and matrix as for test."""

from __future__ import annotations

import pytest
from test_bad_input import assert_refused, run_cli

from zkjepsen.errors import BadInput
from zkjepsen.run.spec import TestSpec, read_spec

DEAD = "unix:///nonexistent/zkjepsen-settings-test.sock"


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", DEAD)
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    return tmp_path


# ---- a recipe and a client command --------------------------------------------------------------
@pytest.mark.parametrize("recipe", ["kazoo", "curator", "exec:/bin/true"])
def test_a_recipe_and_a_client_command_are_never_both_taken(recipe, here, capsys):
    code, err = run_cli(["test", "--recipe", recipe, "--client-cmd", "true"], capsys)
    assert_refused(code, err, here, recipe, "not both")
    with pytest.raises(BadInput, match="not both"):
        TestSpec(recipe=recipe, client_cmd="true")


def test_a_client_command_alone_is_the_exec_recipe_and_no_command_is_kazoo():
    assert TestSpec(client_cmd="true").recipe == "exec"
    assert TestSpec().recipe == "kazoo"
    assert read_spec(TestSpec(client_cmd="true").to_json()).recipe == "exec"


def test_a_config_naming_the_default_recipe_with_a_client_command_is_refused(here, capsys):
    (here / "c.toml").write_text('recipe = "kazoo"\nclient_cmd = "true"\n')
    code, err = run_cli(["test", "--config", "c.toml"], capsys)
    assert_refused(code, err, here, "not both")


# ---- fault targets from a declared set ----------------------------------------------------------
@pytest.mark.parametrize("target", ["moon", "", "client:", "n0", "leader,moon", "Holder"])
def test_a_fault_target_outside_the_declared_set_is_refused(target):
    with pytest.raises(BadInput, match="fault_target"):
        TestSpec(nemesis=["pause-client"], fault_target=target)


@pytest.mark.parametrize("target", ["random", "holder", "leader", "all", "client:2", "n1,n3"])
def test_a_declared_fault_target_is_taken(target):
    assert TestSpec(nemesis=["pause-client"], fault_target=target).fault_target == target


def test_a_config_fault_target_is_checked(here, capsys):
    (here / "c.toml").write_text('fault_target = "moon"\n')
    code, err = run_cli(["test", "--config", "c.toml"], capsys)
    assert_refused(code, err, here, "moon")


# ---- parameters: timeouts > 0, upper bounds that say why ---------------------------------------
@pytest.mark.parametrize(
    "param,words",
    [
        ("request_timeout_s=0", ["more than 0"]),
        ("check_time_s=0", ["more than 0"]),
        ("pass_timeout_s=0", ["more than 0"]),
        ("hold_s=1e300", ["at most", "a day"]),
        ("think_s=100000", ["at most"]),
        ("read_frac=1.5", ["at most 1", "fraction"]),
        ("writes=1000000", ["at most 1000"]),
    ],
)
def test_parameters_have_bounds_that_say_why(param, words, here, capsys):
    code, err = run_cli(["test", "--param", param], capsys)
    assert_refused(code, err, here, param.split("=")[0], *words)


def test_every_numeric_parameter_declares_an_upper_bound_and_why():
    from zkjepsen.workloads.params import KNOWN

    unbounded = [
        name
        for name, p in KNOWN.items()
        if p.kind in (int, float) and (p.maximum is None or not p.why_max)
    ]
    assert not unbounded, unbounded


# ---- the gate's workloads -----------------------------------------------------------------------
@pytest.mark.parametrize("workload", ["counter", "queue", "register"])
def test_the_gate_takes_only_its_workloads(workload, here, capsys):
    code, err = run_cli(["gate", "--workload", workload], capsys)
    assert_refused(code, err, here, workload, "lock or election")


# ---- engines: used or refused, and none is 255 everywhere --------------------------------------
def test_a_config_engine_is_used_not_ignored(here, capsys):
    """The run goes to the config's engine: the error names it, not the environment's."""
    other = "unix:///nonexistent/the-configs-own-engine.sock"
    (here / "c.toml").write_text(f'engine = "{other}"\n')
    code, err = run_cli(["test", "--config", "c.toml"], capsys)
    assert code == 255 and other in err and DEAD not in err, err
    assert not (here / "store").exists()


@pytest.mark.parametrize("engine", ["ftp://x", "", "unix://"])
def test_a_config_engine_that_is_no_engine_is_refused(engine, here, capsys):
    (here / "c.toml").write_text(f'engine = "{engine}"\n')
    code, err = run_cli(["test", "--config", "c.toml"], capsys)
    assert_refused(code, err, here, "engine")


@pytest.mark.parametrize(
    "args",
    [
        ["gate", "--recipe", "kazoo", "--time-limit", "5s"],
        ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--time-limit", "5"],
        ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--parallel", "2"],
    ],
)
def test_no_engine_is_255_for_gate_and_matrix_too(args, here, capsys):
    code, err = run_cli(args, capsys)
    assert code == 255, err
    assert "cannot reach" in err.strip().splitlines()[-1], err
    runs = list((here / "store").glob("*/*/test.json")) if (here / "store").exists() else []
    assert not runs, "no run was started"
