"""What a plain (non-editable) install needs, checked without installing: every file the code
reads from the package ships as package data, the C fast paths build with the package and
without a compiler the build still succeeds saying so once, zkjepsen says whether its checker
is compiled, and client containers get our package, not the directory it is installed in.
The install itself: tests/integration/test_install.py."""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import zkjepsen
from zkjepsen.backends.zookeeper import drivers
from zkjepsen.backends.zookeeper import versions as zkversions
from zkjepsen.cli import main
from zkjepsen.client import pool
from zkjepsen.errors import EnvironmentProblem

REPO = Path(__file__).resolve().parents[2]
PKG = Path(zkjepsen.__file__).resolve().parent


def package_data_patterns() -> list[str]:
    toml = tomllib.loads((REPO / "pyproject.toml").read_text())
    return toml["tool"]["setuptools"]["package-data"]["zkjepsen"]


def test_every_driver_source_the_image_build_reads_is_package_data():
    patterns = package_data_patterns()
    read = {p for v in zkversions.VERSIONS.values() for p in drivers.source_files(v)}
    assert read, "no driver sources found"
    for path in read:
        rel = path.relative_to(PKG).as_posix()
        assert any(fnmatch.fnmatch(rel, pat) for pat in patterns), f"{rel} is not package data"


def test_every_other_file_in_the_package_ships_too():
    # A file the code reads that is neither Python nor the C the build compiles: it must be in
    # the wheel (a plain install has nothing else).
    built = (".py", ".pyc", ".c", ".h", ".so")
    others = [p for p in PKG.rglob("*") if p.is_file() and not p.name.endswith(built)]
    patterns = package_data_patterns()
    for path in others:
        rel = path.relative_to(PKG).as_posix()
        assert any(fnmatch.fnmatch(rel, pat) for pat in patterns), f"{rel} is not package data"


def test_missing_driver_sources_say_the_installation_is_incomplete(tmp_path, monkeypatch):
    monkeypatch.setattr(drivers, "DRIVERS_SRC", tmp_path)
    with pytest.raises(EnvironmentProblem, match="installation is incomplete; reinstall"):
        list(drivers.source_files())


def test_client_containers_mount_our_package_not_its_parent():
    # In site-packages the parent holds every installed distribution.
    ((host, bind),) = pool.package_bind().items()
    assert Path(host) == PKG and (Path(host) / "cli" / "__init__.py").is_file()
    assert bind == {"bind": f"{pool.SRC_DIR}/zkjepsen", "mode": "ro"}


def test_the_version_says_whether_the_checker_is_compiled(monkeypatch, capsys):
    from zkjepsen.cli import app

    monkeypatch.setitem(sys.modules, "zkjepsen.checker.linear._fastsweep", None)  # cannot import
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("zkjepsen 0.1.0 (Python 3.")
    assert "the checker's sweep" in out and "run in pure Python here" in out
    assert "apt-get install gcc python3-dev" in out
    monkeypatch.setattr(app, "FAST_PATHS", {"zkjepsen.errors": "importable"})
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.endswith("the checker and the history reader are compiled\n")


def test_image_build_notes_a_pure_python_checker(monkeypatch):
    from click.testing import CliRunner

    from zkjepsen.cli import app, cluster
    from zkjepsen.docker.image import ImageInfo

    info = ImageInfo(tag="zkjepsen/zookeeper:x", size_bytes=1e6, built=False, build_seconds=0)
    monkeypatch.setattr(cluster, "ensure_image", lambda *a, **k: info)
    monkeypatch.setattr(cluster.resources, "docker_client", lambda: None)
    monkeypatch.setattr(app, "FAST_PATHS", {"zkjepsen.errors": "importable"})
    out = CliRunner().invoke(app.cli, ["image", "build"])
    assert out.exit_code == 0 and "note:" not in out.output, out.output
    monkeypatch.setattr(app, "FAST_PATHS", {"zkjepsen._no_such_module": "the checker's sweep"})
    out = CliRunner().invoke(app.cli, ["image", "build"])
    assert out.exit_code == 0, out.output
    assert out.output.count("the checker's sweep run in pure Python here") == 1, out.output


def test_without_a_compiler_the_build_succeeds_and_says_so_once(tmp_path):
    env = {**os.environ, "CC": "/bin/false"}
    out = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "-b", tmp_path / "lib"]
        + ["-t", tmp_path / "tmp"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    said = [line for line in out.stderr.splitlines() if line.startswith("zkjepsen: ")]
    assert len(said) == 1, out.stderr
    assert "_fastjsonl, _fastlog, _fastsweep, _fastgroup not built" in said[0]
    assert "pure Python" in said[0]
    assert not list((tmp_path / "lib").rglob("*.so"))
