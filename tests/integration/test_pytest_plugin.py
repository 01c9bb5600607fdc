"""The README's CI-gate example, run by pytest inside pytest: it fails on a broken lock (naming
the violations and the evidence) and passes on kazoo's Lock without faults."""

from __future__ import annotations

import json
import os
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

GATE = '''
import pytest

@pytest.mark.zkjepsen_faults(max_faults=1)
def test_gate(zkjepsen_run):
    result = zkjepsen_run(recipe="{recipe}", workload="lock", nemesis={nemesis},
                          nodes=3, clients=3, time_limit_s=8, session_timeout_s=3.0,
                          recovery_s=3.0)
    result.assert_valid()
'''


def run_gate(pytester, monkeypatch, recipe: str, nemesis: list[str]):
    # `subjects` is importable in the inner run like a user's package
    monkeypatch.setenv("PYTHONPATH", f"{TESTS}:{os.environ.get('PYTHONPATH', '')}")
    pytester.makepyfile(test_gate=GATE.format(recipe=recipe, nemesis=nemesis))
    store = pytester.path / "store"
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--zk-store={store}",
                                         timeout=300), store


def test_gate_fails_on_a_lock_that_excludes_nobody(pytester, zk_image, monkeypatch):
    result, _ = run_gate(pytester, monkeypatch, "subjects.nolock:NoLock", ["none"])
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*zkjepsen verdict INVALID*", "*belief overlaps; first: clients*",
                                 "*evidence: *timeline.html*"])


def test_gate_passes_and_the_fault_budget_is_kept(pytester, zk_image, monkeypatch):
    result, store = run_gate(pytester, monkeypatch, "kazoo", ["partition-one"])
    result.assert_outcomes(passed=1)
    (schedule,) = store.glob("*/latest/schedule.json")
    assert len(json.loads(schedule.read_text())["faults"]) <= 1
