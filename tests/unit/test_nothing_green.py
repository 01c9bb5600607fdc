"""Issue 23, "nothing that tested nothing is green": inputs that used to end in a quiet VALID or a
meaningless verdict are refused (254, one sentence, nothing created), and a shrink that never
reproduced is not a success. No Docker engine: every refusal must come before one is needed."""

from __future__ import annotations

import json
import os

import pytest
from stored_folder import stored_spec
from test_bad_input import assert_refused, run_cli

from zkjepsen.errors import BadInput
from zkjepsen.run.spec import TestSpec


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent")  # nothing may reach an engine
    return tmp_path


# --- an empty fault list is a bad argument, not `none` ---


@pytest.mark.parametrize("nemesis", ["", " ", ",", "pause-client,", "pause-client,,kill-leader"])
def test_test_refuses_an_empty_fault_name(nemesis, here, capsys):
    code, err = run_cli(["test", "--nodes", "3", "--nemesis", nemesis], capsys)
    assert_refused(code, err, here, "empty fault name", "none")


@pytest.mark.parametrize(
    "config", ['nemesis = ""', "nemesis = []", 'nemesis = ["kill-leader", ""]']
)
def test_a_config_with_an_empty_fault_list_is_refused(config, here, capsys):
    (here / "t.toml").write_text(config + "\n")
    code, err = run_cli(["test", "--config", "t.toml"], capsys)
    assert_refused(code, err, here, "empty fault name")


@pytest.mark.parametrize("nemeses", ["", ",", "pause-client+"])
def test_matrix_refuses_an_empty_fault_name(nemeses, here, capsys):
    code, err = run_cli(
        ["matrix", "--recipes", "kazoo", "--nemeses", nemeses, "--out", "m.md"], capsys
    )
    assert_refused(code, err, here)
    assert not (here / "m.md").exists()


def test_the_spec_the_pytest_plugin_builds_refuses_it_too():
    # zkjepsen_run(nemesis=[]) builds TestSpec(**settings): the same check, before any run
    with pytest.raises(BadInput, match="empty fault name"):
        TestSpec(nemesis=[])
    assert TestSpec().nemesis == ["none"]  # not given: no faults, as before
    assert TestSpec(nemesis=" pause-client , kill-leader").nemesis == [
        "pause-client",
        "kill-leader",
    ]


# --- stored verdicts are validated before they are compared ---


def run_dir(here, results: dict) -> str:
    d = here / "run"
    d.mkdir()
    spec = stored_spec(clients=2)
    (d / "test.json").write_text(json.dumps(spec))
    (d / "history.jsonl").write_text("")
    (d / "results.json").write_text(json.dumps(results))
    return str(d)


@pytest.mark.parametrize(
    "results,field",
    [
        ({"valid": "maybe"}, "'valid' is \"maybe\""),
        ({"valid": 1}, "'valid' is 1"),
        ({"valid": None}, "'valid' is null"),
        ({"lock": {"valid": True}}, "no field 'valid'"),
        ({"valid": True, "lock": {"valid": "yes"}}, "'lock.valid' is \"yes\""),
    ],
)
def test_analyze_refuses_a_stored_verdict_that_is_not_one(results, field, here, capsys):
    d = run_dir(here, results)
    before = sorted(os.listdir(d))
    code, err = run_cli(["analyze", d], capsys)
    assert_refused(code, err, here, "results.json", field)
    assert sorted(os.listdir(d)) == before


# --- shrink: a kind it cannot search for is refused; a shrink that found nothing fails ---


def shrink_dir(here, valid) -> str:
    """A stored lock run with two faults: VALID, or INVALID with a belief overlap."""
    lock = {"valid": valid, "belief_overlap_count": 0 if valid else 1}
    if not valid:
        lock["belief_overlaps"] = [{"clients": [1, 2], "start": 9 * 10**9, "end": 10**10}]
    d = run_dir(here, {"valid": valid, "lock": lock})
    fault = {"f": "pause-client", "target": "holder", "targets": ["c1"], "params": {}}
    faults = [
        {**fault, "fault_id": i, "start_ns": i * 10**10, "end_ns": i * 10**10 + 4 * 10**9}
        for i in (1, 2)
    ]
    (here / "run" / "schedule.json").write_text(json.dumps({"faults": faults}))
    return d


def no_replays(monkeypatch) -> list:
    """Replays that never reproduce anything (each a VALID run); the list counts them."""
    from types import SimpleNamespace

    import zkjepsen.cli.reproduce as cli
    import zkjepsen.reproduce.shrink as shrink_mod

    done: list = []

    def replay(run, runs, **kw):
        done.extend(range(runs))
        return [SimpleNamespace(results={"valid": True}, store_dir="r") for _ in range(runs)]

    monkeypatch.setattr(shrink_mod, "replay", replay)
    monkeypatch.setattr(cli, "prepare", lambda engines, image: [None])
    return done


@pytest.mark.parametrize(
    "valid,args,words",
    [
        (True, ["--kind", "bogus:nothing"], ["bogus:nothing", "lock:belief"]),
        (False, ["--kind", "lock:nothing"], ["lock:nothing", "not a violation"]),
        (True, ["--kind", "lock:belief"], ["did not record", "--kind-not-in-run"]),
        (False, ["--kind", "lock:effect"], ["did not record", "lock:belief"]),
        (True, [], ["recorded no violation"]),
    ],
)
def test_shrink_refuses_kinds_before_any_replay(valid, args, words, here, capsys, monkeypatch):
    replays = no_replays(monkeypatch)
    d = shrink_dir(here, valid)
    code, err = run_cli(["shrink", d, *args], capsys)
    assert_refused(code, err, here, *words)
    assert replays == [] and not (here / "run" / "minimal").exists()


@pytest.mark.parametrize("valid,args", [(False, []), (True, ["--kind-not-in-run"])])
def test_a_shrink_that_never_reproduced_fails_and_writes_no_reproducer(
    valid, args, here, capsys, monkeypatch
):
    replays = no_replays(monkeypatch)
    d = shrink_dir(here, valid)
    code, err = run_cli(["shrink", d, "--kind", "lock:belief", *args], capsys)
    assert code == 2, err
    assert "recurred in none of 3 replays" in err and "no reproducer written" in err
    assert replays, "the search ran"
    assert not (here / "run" / "minimal").exists()
