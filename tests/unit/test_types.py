"""The type checker on the package, as configured in pyproject.toml ([tool.mypy]): the bare
`mypy` in the repository checks src/zkjepsen, and the suite runs it. Missing mypy fails (it is
in the [test] extra), never skips."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def mypy() -> list[str]:
    exe = Path(sys.executable).with_name("mypy")
    if not exe.exists():
        pytest.fail("mypy is not installed (it is in the [test] extra: pip install -e '.[test]')")
    return [str(exe)]


def test_the_bare_mypy_checks_the_package_clean():
    out = subprocess.run(mypy(), cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "no issues found in" in out.stdout
    # The configuration, not a path given here, chose what was checked: the whole package.
    checked = int(out.stdout.rsplit("no issues found in ", 1)[1].split()[0])
    assert checked >= len(list((REPO / "src" / "zkjepsen").rglob("*.py"))), out.stdout


def test_the_configuration_catches_a_type_error(tmp_path):
    """The same settings on a module that misuses the package's types: the check can fail,
    in an unannotated function's body too (check_untyped_defs)."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from zkjepsen.history import Op\n\n\n"
        "def f() -> int:\n"
        "    return Op(0, 0, 1, 'invoke', 'read').index + 'x'\n\n\n"
        "def g():\n"
        "    return Op(0, 0, 1, 'invoke', 'read').nonexistent\n"
    )
    out = subprocess.run(
        [*mypy(), "--config-file", str(REPO / "pyproject.toml"), str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert 'Unsupported operand types for + ("int" and "str")' in out.stdout, out.stdout
    assert '"Op" has no attribute "nonexistent"' in out.stdout, out.stdout
