"""The real-library drivers: registered with a command the image build installs, and part of
the image's content hash. No Docker, no JDK, no Go needed."""

from __future__ import annotations

import re
import shutil

import pytest

from zkjepsen.backends.zookeeper import drivers, image
from zkjepsen.docker.image import inputs_hash
from zkjepsen.errors import BadInput
from zkjepsen.recipes import RECIPES
from zkjepsen.run.resolve import program_for, spec_program, validate_spec
from zkjepsen.spec import TestSpec


def test_driver_recipes_run_what_the_image_build_installs():
    # The ZooKeeper drivers (other backends' drivers: tests/unit/test_postgres_backend.py,
    # test_etcd_driver_build.py).
    progs = {
        n: i
        for n, i in RECIPES.items()
        if i.command and i.language in ("java", "go") and "zookeeper" in i.backends
    }
    assert set(progs) >= {
        "curator-java",
        "curator-java-careful",
        "curator-java-semaphore",
        "curator-java-latch",
        "curator-java-semaphore-v2",
        "curator-java-rwlock",
        "curator-java-selector",
        "curator-java-selector-tolerant",
        "go-zk",
    }
    for name, info in progs.items():
        assert info.source == "library" and info.language in ("java", "go"), name
        assert "real library" in info.description and info.flaw, name
        if info.language == "java":
            assert info.command[0] == drivers.CURATOR_RUN
            assert info.command[1] in drivers.CURATOR_MODES
        else:
            assert info.command == (drivers.GOZK_BIN,)
    assert drivers.CURATOR_JAR in drivers.CURATOR_RUN_SCRIPT


def test_curator_modes_are_the_java_drivers_own():
    # The Java driver refuses a mode it does not know (exit 2 before init): the Python list and
    # Subject.MODES must be the same.
    subject = (drivers.DRIVERS_SRC / "curator" / "Subject.java").read_text()
    listed = re.search(r"List<String> MODES = List\.of\(([^)]*)\)", subject)
    assert listed, "Subject.MODES not found"
    assert tuple(re.findall(r'"([^"]+)"', listed.group(1))) == drivers.CURATOR_MODES


def test_a_program_serves_the_semaphore_and_rwlock_workloads_a_python_recipe_runs_in_process():
    for recipe, workload in [
        ("curator-java-semaphore-v2", "semaphore"),
        ("curator-java-rwlock", "rwlock"),
        ("curator-java-selector", "election"),
    ]:
        spec = TestSpec(recipe=recipe, workload=workload)
        validate_spec(spec)
        plan = spec_program(spec)
        assert plan is not None and plan.argv == RECIPES[recipe].command, recipe
    for recipe, workload in [("kazoo-semaphore", "semaphore"), ("kazoo-rwlock", "rwlock")]:
        assert program_for(recipe, workload) is None, recipe  # the in-process loop, as before
    with pytest.raises(BadInput, match="runs on zookeeper, not on backend etcd"):
        validate_spec(TestSpec(recipe="curator-java-rwlock", workload="rwlock", backend="etcd"))


def test_sources_are_found_and_toolchains_stay_out_of_the_runtime_image():
    names = {p.name for p in drivers.source_files()}
    assert {"Driver.java", "Subject.java", "Json.java", "main.go"} <= names
    assert {"SemaphoreV2.java", "ReadWrite.java", "Selector.java", "Reflect.java"} <= names
    assert not set(drivers.BUILD_PACKAGES) & set(image.PACKAGES)
    assert set(drivers.RUNTIME_PACKAGES) <= set(image.PACKAGES)


def test_manifest_lines_fit_and_name_every_jar():
    text = drivers.manifest()
    assert all(len(line.encode()) <= 72 for line in text.splitlines())
    unwrapped = re.sub(r"\n ", "", text)
    cp = next(line for line in unwrapped.splitlines() if line.startswith("Class-Path: "))
    assert cp.split()[1:] == [f"{drivers.JAVA_DIR}/{j}" for j in drivers.CURATOR_CLASSPATH]
    assert "Main-Class: zkjepsen.curator.Driver" in text


def test_a_driver_source_change_changes_the_image_tag(tmp_path, monkeypatch):
    before = inputs_hash(image.zookeeper_recipe())
    copy = tmp_path / "drivers"
    shutil.copytree(drivers.DRIVERS_SRC, copy)
    monkeypatch.setattr(drivers, "DRIVERS_SRC", copy)
    assert inputs_hash(image.zookeeper_recipe()) == before
    (copy / "gozk" / "main.go").write_text((copy / "gozk" / "main.go").read_text() + "\n// x\n")
    assert inputs_hash(image.zookeeper_recipe()) != before
