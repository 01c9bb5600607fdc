"""The README's CI-gate example, run by pytest inside pytest: it fails on a broken lock (naming
the violations and the evidence) and passes on kazoo's Lock without faults."""

from __future__ import annotations

import json
import os
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

GATE = """
import pytest

@pytest.mark.zkjepsen_faults(max_faults=1)
def test_gate(zkjepsen_run):
    result = zkjepsen_run(recipe="{recipe}", workload="lock", nemesis={nemesis},
                          nodes=3, clients=3, time_limit_s=8, session_timeout_s=3.0,
                          recovery_s=3.0, interval_s=1.0, fault_duration_s=1.0)
    print("STORE", result.store_dir)
    {check}
"""


def run_gate(
    pytester, monkeypatch, recipe: str, nemesis: list[str], check: str = "result.assert_valid()"
):
    # `subjects` is importable in the inner run like a user's package
    monkeypatch.setenv("PYTHONPATH", f"{TESTS}:{os.environ.get('PYTHONPATH', '')}")
    pytester.makepyfile(test_gate=GATE.format(recipe=recipe, nemesis=nemesis, check=check))
    store = pytester.path / "store"
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--zk-store={store}", timeout=300
    ), store


def test_gate_fails_on_a_lock_that_excludes_nobody(pytester, zk_image, monkeypatch):
    result, _ = run_gate(pytester, monkeypatch, "subjects.nolock:NoLock", ["none"])
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*zkjepsen verdict INVALID*",
            "*belief overlaps; first: clients*",
            "*evidence: *timeline.html*",
        ]
    )


def test_gate_passes_on_kazoo_without_faults(pytester, zk_image, monkeypatch):
    result, _ = run_gate(pytester, monkeypatch, "kazoo", ["none"])
    result.assert_outcomes(passed=1)


def test_fault_budget_marker_caps_the_schedule(pytester, zk_image, monkeypatch):
    # 1 s faults every ~1 s for 8 s would be several faults; the marker allows one.
    result, store = run_gate(pytester, monkeypatch, "kazoo", ["partition-one"], check="pass")
    result.assert_outcomes(passed=1)
    (schedule,) = store.glob("*/latest/schedule.json")
    assert len(json.loads(schedule.read_text())["faults"]) == 1


CMD_GATE = """
def test_gate(zkjepsen_run):
    result = zkjepsen_run(client_cmd="python3 python_driver.py", client_dir="{templates}",
                          workload="lock", nemesis=["none"], nodes=3, clients=3,
                          time_limit_s=8, session_timeout_s=3.0, recovery_s=3.0)
    result.assert_valid()
"""


def test_gate_runs_a_users_program_given_by_client_cmd(pytester, zk_image, monkeypatch):
    """The plugin takes `client_cmd` / `client_dir` as the CLI does: the Python template,
    mounted read-only, is the lock under test (not kazoo in-process)."""
    templates = TESTS.parent / "docs" / "templates"
    pytester.makepyfile(test_gate=CMD_GATE.format(templates=templates))
    store = pytester.path / "store"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--zk-store={store}", timeout=300
    )
    result.assert_outcomes(passed=1)
    (spec,) = store.glob("*/latest/test.json")
    doc = json.loads(spec.read_text())
    assert (doc["recipe"], doc["client_cmd"]) == ("exec", "python3 python_driver.py")
    (client,) = store.glob("*/latest/clients/control/c1/spec-c1.json")
    client_doc = json.loads(client.read_text())
    assert client_doc["command"] == ["/bin/sh", "-c", "python3 python_driver.py"]
    assert client_doc["program_mount"] == str(templates)


GEN_GATE = """
from zkjepsen.nemesis.generator import fault, lanes, on, sleep, steps
from zkjepsen.nemesis.triggers import on_acquire


def test_gate(zkjepsen_run):
    gen = lanes(
        steps(sleep(2), on(on_acquire(retries=10), fault("pause-client", duration=1.0))),
        steps(sleep(3), fault("partition-one", duration=1.5)),
    )
    result = zkjepsen_run(recipe="kazoo", workload="lock", nodes=3, clients=3, time_limit_s=10,
                          session_timeout_s=3.0, recovery_s=3.0, gen=gen)
    print("STORE", result.store_dir)
"""


def test_a_gen_run_is_recorded_as_what_ran_and_its_folder_replays_the_same_faults(
    pytester, zk_image, monkeypatch
):
    """A schedule given as Python (issue 47): the run is named after its faults, its verdict has
    their power line, and a replay of its folder runs the same faults, triggers and lanes."""
    from zkjepsen.reproduce.replay import replay
    from zkjepsen.run.stored import StoredRun

    pytester.makepyfile(test_gate=GEN_GATE)
    store = pytester.path / "store"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--zk-store={store}", timeout=300
    )
    result.assert_outcomes(passed=1)
    (folder,) = store.glob("kazoo-lock-pause-client+partition-one/latest")
    run = StoredRun.load(folder, need_results=True, need_schedule=True)
    assert run.spec.nemesis == ["pause-client", "partition-one"]
    assert [t.get("fault") for t in run.spec.generator] == [None, None, *run.spec.nemesis]
    assert "power" in run.results  # the faults' power line
    ran = [(f.f, f.trigger, f.lane) for f in run.faults]
    # both faults ran; in which order is the two lanes' timing (a trigger against a sleep)
    assert sorted(f for f, _, _ in ran) == ["partition-one", "pause-client"]
    (again,) = replay(run, 1, store_root=pytester.path / "replays")
    replayed = StoredRun.load(again.store_dir, need_schedule=True)
    assert replayed.spec.nemesis == run.spec.nemesis and replayed.spec.generator is None
    assert sorted((f.f, f.trigger, f.lane) for f in replayed.faults) == sorted(
        ran, key=lambda r: r[0]
    )
