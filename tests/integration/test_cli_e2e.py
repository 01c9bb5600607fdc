"""`zkjepsen test` and `analyze` end to end through the CLI, against real ensembles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
ZKJEPSEN = [sys.executable, "-m", "zkjepsen.cli"]
# `subjects` (broken recipes used as test subjects) is importable like a user's own package.
ENV = {**os.environ, "PYTHONPATH": f"{TESTS}:{os.environ.get('PYTHONPATH', '')}"}
SMALL = ["--nodes", "3", "--clients", "3", "--time-limit", "6", "--session-timeout", "3s"]


def zkj(*argv: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*ZKJEPSEN, *argv], capture_output=True, text=True, env=ENV, timeout=timeout
    )


def lock_run(recipe: str, store: Path) -> subprocess.CompletedProcess:
    """A small `lock` run of `recipe` with no fault. A recovery of 1 s, not 10: with no fault
    there is nothing to recover from, and what each test asserts comes from the main phase."""
    config = store / "recovery.toml"
    config.write_text("recovery_s = 1.0\n")
    return zkj(
        "test",
        "--recipe",
        recipe,
        "--workload",
        "lock",
        "--nemesis",
        "none",
        *SMALL,
        "--config",
        str(config),
        "--store",
        str(store),
    )


def store_dir(store: Path) -> Path:
    (latest,) = store.glob("*/latest")
    return latest.resolve()


def test_valid_run_exits_0_and_analyze_reproduces_it(tmp_path, zk_image):
    out = lock_run("kazoo", tmp_path)
    assert out.returncode == 0, out.stderr
    run = store_dir(tmp_path)
    for name in (
        "test.json",
        "history.jsonl",
        "results.json",
        "timeline.html",
        "latency.png",
        "rate.png",
        "run.log",
        "nodes/n1/zookeeper.log",
    ):
        assert (run / name).exists(), name
    results = json.loads((run / "results.json").read_text())
    assert results["valid"] is True and results["lock"]["holds"] > 0
    again = zkj("analyze", str(run))
    assert again.returncode == 0 and "reproduced" in again.stderr


def test_broken_recipe_exits_1_naming_the_violation(tmp_path, zk_image):
    out = lock_run("subjects.nolock:NoLock", tmp_path)
    assert out.returncode == 1, out.stderr
    assert "INVALID" in out.stderr and "belief overlaps; first: clients" in out.stderr
    run = store_dir(tmp_path)
    # Its next step, as Hypothesis prints the failing example: the commands for its folder.
    assert f"zkjepsen replay {run}" in out.stderr and f"zkjepsen shrink {run}" in out.stderr
    assert 'stroke="#d50000"' in (run / "timeline.html").read_text()  # violations drawn
    again = zkj("analyze", str(run))
    assert again.returncode == 1 and "reproduced" in again.stderr


@pytest.mark.parametrize(
    "argv, words",
    [
        (["test", "--recipe", "no-such-recipe"], "unknown recipe"),
        (["test", "--nemesis", "pause-everything"], "unknown nemesis"),
        (["test", "--workload", "nope"], "unknown workload"),
        (["test", "--session-timeout", "soon"], "not a duration"),
        (["test", "--session-timeout", "60s"], "outside what the servers grant"),
        (["test", "--param", "novalue"], "not KEY=VALUE"),
        (["test", "--recipe", "no_such_pkg.mod:Lock"], "cannot import recipe module"),
        (["analyze", "/nonexistent/run"], "is not a run directory"),
        (["list", "things"], "Invalid value"),
    ],
)
def test_bad_arguments_exit_254_with_one_sentence(argv, words, tmp_path):
    out = zkj(*argv, "--store", str(tmp_path)) if argv[0] == "test" else zkj(*argv)
    assert out.returncode == 254, (out.returncode, out.stderr)
    assert words in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.glob("*/*/history.jsonl"))  # nothing half-written


def test_a_named_scenario_runs_end_to_end_as_expected(tmp_path, zk_image):
    # ZOOKEEPER-2931: the pre-fix WriteLock splits holders with no fault at all.
    out = zkj(
        "scenario",
        "run",
        "sort-by-full-name",
        "--recipe",
        "writelock-2931",
        "--store",
        str(tmp_path),
    )
    assert out.returncode == 0, out.stderr
    # The split holder is what the scenario expects; other checkers (fencing, atomicity) may
    # report its consequences beside it.
    said = " ".join(out.stderr.split())  # the console wraps long lines
    found = said[said.index("as expected: found [") :].split("]")[0]
    assert "'lock:belief'" in found and "NOT as expected" not in said
    assert "1/1 scenario runs as expected" in out.stdout


def test_a_recipe_whose_release_raises_is_unknown_and_says_so(tmp_path, zk_image):
    # Issue 23: release() deletes the lock node, then raises; the run was VALID, exit 0.
    out = lock_run("subjects.raising_release:ReleaseRaises", tmp_path)
    assert out.returncode == 2, out.stderr
    assert "UNKNOWN" in out.stderr and "no release succeeded" in out.stderr, out.stderr
    results = json.loads((store_dir(tmp_path) / "results.json").read_text())
    ex = results["exercised"]
    assert ex["releases"] > 0 and ex["releases_failed_without_fault"] == ex["releases"]
    assert ex["first_failed_release"]["error"] == "RuntimeError"
    assert results["lock"]["valid"] is True and results["lock"]["holds"] > 0  # it did lock
