"""`gate --hunt BUDGET` and the hunt's command surface, their pure parts: what is left of the
budget for the hunt after the certifying scenarios, the gate's verdict with the hunt's, and bad
input (254, one sentence, nothing created): a budget that is no time, an empty menu naming
every fault dropped and why. What a real gate's hunt finds is the integration test's to say."""

from __future__ import annotations

import pytest

from zkjepsen.cli import main
from zkjepsen.run import hunt as h
from zkjepsen.run.gate import GateRow, hunt_left, verdict


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent")  # nothing may reach an engine
    return tmp_path


def run_cli(args: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        main(args)
    return e.value.code, capsys.readouterr().err


def row(valid):
    return GateRow("client-pause", valid, "", None)


def test_the_hunt_gets_what_the_scenarios_left_of_the_budget():
    assert hunt_left(600.0, 150.0, [row(True), row(True)]) == (450.0, "")
    left, why = hunt_left(120.0, 150.0, [row(True)])
    assert left == 0 and "took 150s of the 120s budget" in why
    left, why = hunt_left(600.0, 10.0, [row(True), row(False)])
    assert left == 0 and "found a violation" in why  # the gate's answer is known already


@pytest.mark.parametrize(
    ("valids", "hunted", "overall"),
    [
        ([True, True], None, True),
        ([True, True], True, True),
        ([True, True], False, False),  # the hunt found what the scenarios did not
        ([True, True], "unknown", "unknown"),  # asked to hunt, no run could tell
        ([False, True], True, False),
        ([True, "unknown"], None, "unknown"),
    ],
)
def test_the_gates_verdict_is_the_worst_of_its_scenarios_and_its_hunt(valids, hunted, overall):
    assert verdict([row(v) for v in valids], hunted) == overall


def one_line_254(code: int, err: str, here) -> None:
    assert code == 254, err
    lines = [x for x in err.strip().splitlines() if x]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert not (here / "store").exists() and not any(here.iterdir()), list(here.iterdir())


@pytest.mark.parametrize("budget", ["0", "-1m", "soon", "nan", "inf", ""])
def test_a_gate_hunt_budget_that_is_no_time_is_refused_first(budget, here, capsys):
    code, err = run_cli(["gate", "--recipe", "kazoo", "--hunt", budget], capsys)
    one_line_254(code, err, here)
    assert "--hunt" in err


@pytest.mark.parametrize("option", ["--budget", "--shrink-budget"])
@pytest.mark.parametrize("budget", ["0", "-5s", "later", "inf"])
def test_a_hunt_budget_that_is_no_time_is_refused_first(option, budget, here, capsys):
    code, err = run_cli(["hunt", "--recipe", "kazoo", option, budget], capsys)
    one_line_254(code, err, here)
    assert "budget" in err


@pytest.mark.parametrize("command", [["hunt"], ["gate", "--hunt", "5m"]])
def test_an_empty_menu_is_refused_naming_every_fault_dropped(command, here, capsys, monkeypatch):
    def refuse_all(spec, names=None):
        return {n: f"{n} cannot hit this lock (a test says so)" for n in h.KINDS}

    monkeypatch.setattr(h, "refusals", refuse_all)
    code, err = run_cli([*command, "--recipe", "kazoo"], capsys)
    one_line_254(code, err, here)
    assert "nothing to hunt with" in err and "kill-leader: kill-leader cannot hit" in err


def test_a_hunt_junit_file_where_none_can_be_written_is_refused_first(here, capsys):
    code, err = run_cli(["hunt", "--junit-xml", "/proc/zkj-nowhere/h.xml"], capsys)
    one_line_254(code, err, here)
    assert "--junit-xml" in err


def test_parallel_with_a_cluster_is_refused_first(here, capsys):
    args = ["hunt", "--recipe", "kazoo", "--parallel", "2", "--cluster", "tcp://127.0.0.1:1"]
    code, err = run_cli(args, capsys)
    one_line_254(code, err, here)
    assert "--cluster" in err


def test_an_interrupted_hunt_names_its_folder_and_hunt_jsonl_in_the_last_line(
    tmp_path, monkeypatch
):
    from zkjepsen.cli import interrupted_message
    from zkjepsen.cli.hunt import run_hunt
    from zkjepsen.run.outcome import Interrupted

    def cut(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(h, "hunt", cut)
    with pytest.raises(KeyboardInterrupt) as e:
        run_hunt(None, None, 60.0, "guided", 1, tmp_path, 1, None, None)
    assert isinstance(e.value, Interrupted)
    text = interrupted_message(e.value)
    assert f"the hunt's folder {tmp_path} keeps every run so far" in text
    assert str(tmp_path / "hunt.jsonl") in text and len(text.splitlines()) == 1
