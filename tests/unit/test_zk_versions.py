"""ZooKeeper 3.4 / 3.8 / 3.9 and the clients' suite, without Docker: one image recipe per
version (3.8's tag unchanged), each version's zoo.cfg, the Curator 2.7 shim, and bad values
refused in one sentence with exit 254 before anything exists."""

from __future__ import annotations

import dataclasses
import re

import pytest

from zkjepsen.backends.zookeeper import drivers, image
from zkjepsen.backends.zookeeper import versions as zkversions
from zkjepsen.backends.zookeeper.config import ZkSettings, zoo_cfg
from zkjepsen.backends.zookeeper.service import ZooKeeperSettings
from zkjepsen.cli import main
from zkjepsen.errors import BadInput
from zkjepsen.run.resolve import spec_from_json, validate_spec
from zkjepsen.run.spec import TestSpec, read_spec


def test_each_version_has_its_own_suite_and_tag_and_3_8_is_the_old_image():
    assert image.zookeeper_recipe("3.8").inputs() == image.zookeeper_recipe().inputs()
    assert image.zookeeper_tag("3.8") == image.zookeeper_tag()
    assert image.zookeeper_tag() == image.default_tag(image.zookeeper_recipe())
    suites = {v: image.zookeeper_recipe(v).suite for v in zkversions.VERSIONS}
    assert suites == {"3.4": "bullseye", "3.8": "bookworm", "3.9": "trixie"}
    tags = {image.zookeeper_tag(v) for v in zkversions.VERSIONS}
    assert len(tags) == 3 and all(t.startswith("zkjepsen/zookeeper:") for t in tags)


def test_the_curator_2_shim_is_built_and_hashed_only_for_3_4():
    names = lambda v: {p.name for p in drivers.source_files(v)}  # noqa: E731
    assert "Compat.java" in names(zkversions.get("3.4"))
    assert "Compat.java" not in names(zkversions.get("3.8"))
    assert "Compat.java" not in names(None)
    assert "--release 11" in drivers.build_script(zkversions.get("3.4"))
    assert "Curator 2.7.1" in drivers.run_script(zkversions.get("3.4"))
    assert drivers.build_script(zkversions.get("3.8")) == drivers.BUILD_SCRIPT


def test_the_shim_edits_still_match_the_driver_sources():
    # If a driver source changes, or a new one calls what Curator 2.7 lacks without an edit of
    # its own, the 3.4 build would fail: fail here first. Every source, not only the edited.
    for path in sorted((drivers.DRIVERS_SRC / "curator").glob("*.java")):
        out = drivers.shimmed(path.name, path.read_text())
        assert "transactionOp" not in out and "getNodeName()" not in out
        assert "getOurPath()" not in out
    with pytest.raises(ValueError, match="no longer contains"):
        drivers.shimmed("Driver.java", "class Driver {}")


@pytest.mark.parametrize("version", ["3.4", "3.8", "3.9"])
def test_zoo_cfg_has_only_the_keys_the_version_knows(version):
    cfg = zoo_cfg(1, ["10.0.0.11", "10.0.0.12", "10.0.0.13"], ZkSettings(zk_version=version))
    new = version != "3.4"
    assert ("4lw.commands.whitelist=*" in cfg) is new
    assert ("admin.enableServer=false" in cfg) is new
    assert ("standaloneEnabled=false" in cfg) is new
    assert len(re.findall(r"^server\.\d=", cfg, re.M)) == 3
    assert "minSessionTimeout=1000" in cfg


def test_the_spec_records_the_version_and_refuses_unknown_ones():
    spec = TestSpec()
    validate_spec(spec)
    assert spec.service == ZooKeeperSettings(version="3.8", tick_ms=500, fsync="strict")
    assert spec.to_json()["service"] == {
        "name": "zookeeper",
        "version": "3.8",
        "tick_ms": 500,
        "client_suite": None,
        "fsync": "strict",
        "container_check_ms": None,
        "restart": None,
    }
    assert read_spec(spec.to_json()) == spec  # test.json round-trips
    two = spec_from_json({"zookeeper": {"version": "3.4", "client_suite": "trixie"}})  # TOML
    assert two.service == ZooKeeperSettings(version="3.4", client_suite="trixie")
    with pytest.raises(BadInput, match="unknown ZooKeeper version '3.5'"):
        spec_from_json({"zookeeper": {"version": "3.5"}})  # a config
    with pytest.raises(BadInput, match="unknown client suite 'sid'"):
        spec_from_json({"zookeeper": {"client_suite": "sid"}})
    with pytest.raises(BadInput, match=r"unknown \[zookeeper\] setting\(s\) vesion"):
        spec_from_json({"zookeeper": {"vesion": "3.9"}})
    with pytest.raises(BadInput, match="more than one service"):
        spec_from_json({"zookeeper": {"version": "3.9"}, "etcd": {"version": "3.5"}})
    redis = dataclasses.replace(
        TestSpec(recipe="redis-setnx"), service=ZooKeeperSettings(version="3.9")
    )
    with pytest.raises(BadInput, match="--zk-version is ZooKeeper's; backend redis has none"):
        validate_spec(redis)


def test_an_older_test_json_with_flat_service_keys_still_loads():
    """Runs stored before each service owned its settings kept them flat, and every one of
    them (Redis's too) carried ZooKeeper's tick: read back in one place (run/spec.py)."""
    old_zk = {"recipe": "kazoo", "zk_version": "3.4", "client_suite": "trixie", "tick_ms": 500}
    spec = spec_from_json(old_zk)
    assert spec.service == ZooKeeperSettings(version="3.4", client_suite="trixie")
    old_redis = {"recipe": "redis-setnx", "tick_ms": 500, "zk_version": None, "client_suite": None}
    redis = spec_from_json({**old_redis, "etcd_version": None})
    assert redis.service is None
    validate_spec(redis)
    assert redis.service.name == "redis"
    old_etcd = spec_from_json({"recipe": "etcd3-python", "nodes": 3, "etcd_version": "3.5"})
    assert old_etcd.service.name == "etcd" and old_etcd.service.version == "3.5"
    odd_tick = spec_from_json({"recipe": "kazoo", "tick_ms": 100, "session_timeout_s": 1.0})
    assert odd_tick.service == ZooKeeperSettings(tick_ms=100)


def test_version_lists_are_checked():
    assert zkversions.parse_list("3.4, 3.8,3.9") == ["3.4", "3.8", "3.9"]
    for bad in ("3.4,,3.9", "3.4,3.4", "3.4,4.0"):
        with pytest.raises(BadInput):
            zkversions.parse_list(bad)
    assert zkversions.client_suite(None, "3.4").suite == "bullseye"
    assert zkversions.client_suite("3.9").suite == "trixie"


@pytest.mark.parametrize(
    "args,words",
    [
        (["test", "--zk-version", "3.5"], ["unknown ZooKeeper version"]),
        (["test", "--client-suite", "sid"], ["unknown client suite"]),
        (["test", "--recipe", "redis-setnx", "--zk-version", "3.4"], ["ZooKeeper's"]),
        (["cluster", "up", "--zk-version", "4"], ["unknown ZooKeeper version"]),
        (
            ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--zk-versions", "3.4,3.4"],
            ["twice"],
        ),
        (
            ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--zk-versions", "3.4,x"],
            ["unknown ZooKeeper version"],
        ),
        (
            [
                "matrix",
                "--recipes",
                "kazoo",
                "--nemeses",
                "none",
                "--zk-versions",
                "3.4",
                "--zk-version",
                "3.9",
            ],
            ["not both"],
        ),
        (["scenario", "run", "--all", "--zk-versions", "3.7"], ["unknown ZooKeeper version"]),
        (["image", "build", "--zk-version", "2.0"], ["unknown ZooKeeper version"]),
    ],
)
def test_bad_versions_are_one_sentence_and_exit_254(args, words, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent")  # nothing may reach an engine
    with pytest.raises(SystemExit) as e:
        main(args)
    err = capsys.readouterr().err
    assert e.value.code == 254, err
    assert len([x for x in err.splitlines() if x.strip()]) == 1 and "Traceback" not in err
    for w in words:
        assert w in err, err
    assert not list(tmp_path.iterdir()), "bad input must create nothing"


def test_a_manifest_from_before_versions_merges_with_a_3_8_one():
    from zkjepsen.report import findings

    old = {"workload": "lock", "recipes": ["kazoo"], "nemeses": ["none"], "runs": 1}
    flat = {**old, "zk_versions": ["3.8"], "client_suite": None}  # before services had tables
    new = {**old, "services": {"zookeeper": {"version": ["3.8"]}}}
    assert all(findings.same_setting(old, new, k) for k in findings.SAME)
    assert all(findings.same_setting(flat, new, k) for k in findings.SAME)
    other = {**old, "services": {"zookeeper": {"version": ["3.4"]}}}
    assert not findings.same_setting(old, other, "services")


def test_a_matrix_of_several_services_gives_each_its_own_version():
    """--zk-version/--zk-versions are ZooKeeper's rows', --etcd-version etcd's: a matrix of four
    services takes them, and the other services' cells run as they are."""
    from zkjepsen.cli.cells import axis_rows, cell_specs
    from zkjepsen.cli.matrix import checked_cells

    axes = {"zookeeper": ("version", ["3.4", "3.9"])}
    rows = axis_rows(["kazoo", "redis-set-px", "etcd3-python"], axes)
    assert rows == ["kazoo zk3.4", "kazoo zk3.9", "redis-set-px", "etcd3-python"]
    by_row = cell_specs([f"{r}|none" for r in rows], 1, 1, {}, {"workload": "lock"})
    assert [s.service.version if s.service else None for _, s in by_row] == [
        "3.4",
        "3.9",
        None,
        None,
    ]
    cells = [f"{r}|none" for r in ["kazoo", "redis-set-px", "etcd3-python"]]
    tables = {"zookeeper": {"version": "3.9"}, "etcd": {"version": "3.5"}}
    specs = cell_specs(cells, 2, 1, tables, {"workload": "lock"})
    got = {(c, s.service.name if s.service else None, getattr(s.service, "version", None))
           for c, s in specs}  # fmt: skip
    assert got == {
        ("kazoo|none", "zookeeper", "3.9"),
        ("redis-set-px|none", None, None),
        ("etcd3-python|none", "etcd", "3.5"),
    }
    assert checked_cells(specs[: len(cells)]) == {}  # every spec passes the up-front checks


def test_the_matrix_builds_each_services_image_at_its_version_once(monkeypatch):
    from zkjepsen.cli import cells
    from zkjepsen.cli.matrix import checked_cells

    asked = {}
    monkeypatch.setattr(cells, "prepare", lambda engine, **kw: asked.update(kw) or "engine")
    rows = ["kazoo|none", "etcd3-python|none", "redis-set-px|none"]
    specs = cells.cell_specs(rows, 3, 1, {"etcd": {"version": "3.5"}}, {"workload": "lock"})
    checked_cells(specs[: len(rows)])
    assert cells.matrix_engine(None, specs) == "engine"
    described = [(s.backend, s.service.describe()) for s in asked["specs"]][:3]
    assert described == [("zookeeper", "ZooKeeper 3.8"), ("etcd", "etcd 3.5.16"), ("redis", "")]
