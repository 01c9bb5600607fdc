"""A plain install works in full, as a new user gets it: the wheel built from this checkout's
sources, installed (with its dependencies, from the package index) into a fresh virtualenv
outside the checkout, used from another directory. It finds the very image the checkout builds
(the drivers' sources shipped as package data: they are part of the image's tag), lists the
real-library recipes, has the compiled checker, and runs the Go recipe to a verdict (client
containers mount the package from site-packages)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# What a fresh clone has that the build reads (without the checkout's in-place .so files).
SOURCES = ("pyproject.toml", "setup.py", "README.md", "src")
BUILT = shutil.ignore_patterns("*.so", "__pycache__", "*.egg-info")


def sh(argv: list, cwd: Path, timeout: float = 300, env: dict | None = None):
    out = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )
    assert out.returncode == 0, f"{argv[:3]}: exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh virtualenv with the wheel built from a copy of the checkout's sources. Its
    dependencies install while the wheel builds (CI time); the wheel's own install then
    resolves them against its metadata."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=BUILT)
        else:
            shutil.copy2(REPO / name, src / name)
    pip = [sys.executable, "-m", "pip"]
    wheel_build = subprocess.Popen(
        [*pip, "wheel", "-q", "--no-deps", "-w", tmp / "dist", "."],
        cwd=src,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        sh([sys.executable, "-m", "venv", "--without-pip", tmp / "v"], tmp)
        deps = tomllib.loads((src / "pyproject.toml").read_text())["project"]["dependencies"]
        sh([*pip, "--python", tmp / "v/bin/python", "install", "-q", *deps], tmp)
    finally:
        log, _ = wheel_build.communicate(timeout=300)
    assert wheel_build.returncode == 0, log
    (wheel,) = (tmp / "dist").glob("zkjepsen-*.whl")
    sh([*pip, "--python", tmp / "v/bin/python", "install", "-q", wheel], tmp)
    return tmp / "v"


def test_the_installed_wheel_works_from_another_directory(venv, zk_image, tmp_path):
    from zkjepsen.backends.zookeeper.image import zookeeper_tag

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    zkj = [venv / "bin/zkjepsen"]
    probe = (
        "import zkjepsen, zkjepsen.checker.linear._fastsweep as f; "
        "print(zkjepsen.__file__, f.__file__)"
    )
    where = sh([venv / "bin/python", "-c", probe], tmp_path, env=env).stdout.split()
    assert all(p.startswith(str(venv)) for p in where), where
    assert "compiled" in sh([*zkj, "--version"], tmp_path, env=env).stdout

    built = sh([*zkj, "image", "build"], tmp_path, env=env)
    assert built.stdout.split("\t")[0] == zk_image == zookeeper_tag()  # the checkout's very image
    assert "note:" not in built.stderr  # nothing to say: the checker is compiled
    recipes = sh([*zkj, "list", "recipes"], tmp_path, env=env).stdout
    assert "go-zk" in recipes and "curator-java" in recipes

    small = ["--nodes", "1", "--clients", "2", "--time-limit", "5", "--nemesis", "none"]
    config = tmp_path / "recovery.toml"  # 1 s, not 10: no fault to recover from
    config.write_text("recovery_s = 1.0\n")
    small += ["--config", config]
    store = tmp_path / "store"
    run = [*zkj, "test", "--recipe", "go-zk", "--workload", "lock", *small, "--store", store]
    sh(run, tmp_path, env=env)  # exit 0: valid
    (latest,) = store.glob("*/latest")
    results = json.loads((latest / "results.json").read_text())
    assert results["valid"] is True and results["lock"]["holds"] > 0
