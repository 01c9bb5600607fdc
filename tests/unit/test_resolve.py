"""run/resolve.py: a TestSpec (a plain value that imports no registry) resolved once into the
typed test the runner runs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from zkjepsen.client.command import PYTHON_DRIVER
from zkjepsen.errors import BadInput
from zkjepsen.run.resolve import ResolvedTest, resolve
from zkjepsen.run.spec import TestSpec

SRC = Path(__file__).resolve().parents[2] / "src" / "zkjepsen"


def test_the_spec_imports_nothing_of_zkjepsen_but_errors():
    """The run's value is on the ground floor: every room that reads a spec can import it."""
    tree = ast.parse((SRC / "spec.py").read_text())
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    mods |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert {m for m in mods if m.startswith("zkjepsen")} <= {"zkjepsen.errors"}


def test_reading_a_spec_with_its_service_settings_loads_no_docker():
    """The services' declarations are import-light: a spec read from a table (a config, a
    stored test.json) with its service's settings loads neither docker nor the backends."""
    import subprocess
    import sys

    code = (
        "import sys; from zkjepsen.run.spec import read_spec; "
        "read_spec({'etcd': {'version': '3.5'}, 'zk_version': None}); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'docker' "
        "or m.endswith(('.cluster', '.ensemble', '.image'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_resolve_gives_the_runner_everything_typed_once():
    spec = TestSpec(recipe="kazoo", workload="lock", nemesis=["pause-client"], nodes=3)
    test = resolve(spec)
    assert isinstance(test, ResolvedTest) and test.spec is spec
    assert spec.clients == 10 and spec.backend == "zookeeper" and spec.service.version == "3.8"
    assert test.backend.name == "zookeeper"
    assert test.program is not None and test.program.argv == (*PYTHON_DRIVER, "kazoo")
    assert test.generator is not None and test.faults == ["pause-client"]
    assert "lock" in test.checkers
    quiet = resolve(TestSpec(recipe="kazoo", workload="lock", client_mode="in-process"))
    assert quiet.generator is None and quiet.program is None and quiet.faults == []


def test_resolve_refuses_unknown_names_before_anything_exists():
    with pytest.raises(BadInput, match="unknown nemesis"):
        resolve(TestSpec(nemesis=["pause-everything"]))


def test_an_invalid_run_names_its_next_steps_and_a_valid_one_none():
    from zkjepsen.cli.run import next_steps
    from zkjepsen.run.outcome import RunResult

    where = Path("/store/my run")
    invalid = next_steps(RunResult(TestSpec(), where, False, {"valid": False}, {}))
    assert "zkjepsen replay '/store/my run'" in invalid[0]
    assert "zkjepsen shrink '/store/my run'" in invalid[1]
    assert next_steps(RunResult(TestSpec(), where, True, {"valid": True}, {})) == []
    assert next_steps(RunResult(TestSpec(), where, "unknown", {}, {})) == []
    errored = RunResult(TestSpec(), where, False, {"error": "the servers did not start"}, {})
    assert next_steps(errored) == []  # a run that broke has nothing to replay
