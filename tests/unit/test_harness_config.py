"""Pure parts of the harness: zoo.cfg, session bounds, 4lw parsing, image hash, store layout."""

from __future__ import annotations

import pytest

from zkjepsen.backends.zookeeper.config import ZkSettings, jvm_flags, parse_four_letter, zoo_cfg
from zkjepsen.backends.zookeeper.image import zookeeper_recipe
from zkjepsen.backends.zookeeper.service import ZooKeeperSettings
from zkjepsen.docker.image import inputs_hash
from zkjepsen.errors import BadInput
from zkjepsen.store import new_run_dir


def test_zoo_cfg_lists_every_server_and_the_timing_knobs():
    cfg = zoo_cfg(2, ["10.0.0.11", "10.0.0.12", "10.0.0.13"], ZkSettings(tick_ms=500))
    lines = set(cfg.splitlines())
    assert {
        "tickTime=500",
        "initLimit=10",
        "syncLimit=5",
        "minSessionTimeout=1000",
        "maxSessionTimeout=10000",
        "4lw.commands.whitelist=*",
        "admin.enableServer=false",
    } <= lines
    assert "server.3=10.0.0.13:2888:3888" in lines


def test_session_timeout_is_clamped_like_the_server_does():
    s = ZkSettings(tick_ms=500)
    assert s.negotiated_session_ms(30_000) == 10_000
    assert s.negotiated_session_ms(100) == 1_000
    assert s.negotiated_session_ms(4_000) == 4_000


def test_inconsistent_settings_are_bad_input():
    with pytest.raises(BadInput):
        ZkSettings(min_session_ms=9000, max_session_ms=2000)


def test_parse_srvr_and_mntr():
    srvr = (
        "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.5/3\nZxid: 0x100000002\n"
        "Mode: leader\nNode count: 5\n"
    )
    assert parse_four_letter(srvr)["Mode"] == "leader"
    assert parse_four_letter("zk_server_state\tfollower\n")["zk_server_state"] == "follower"


def test_image_hash_is_short_and_follows_its_inputs(monkeypatch):
    from zkjepsen.backends.zookeeper import image

    before = inputs_hash(zookeeper_recipe())
    assert len(before) == 12 and int(before, 16) >= 0
    monkeypatch.setattr(image, "PACKAGES", (*image.PACKAGES, "strace"))
    assert inputs_hash(zookeeper_recipe()) != before  # a new package means a new image
    monkeypatch.setattr(image, "PACKAGES", image.PACKAGES[:-1])
    assert inputs_hash(zookeeper_recipe()) == before


def test_store_dirs_are_distinct_and_latest_follows(tmp_path):
    a = new_run_dir("t", tmp_path).path
    b = new_run_dir("t", tmp_path).path
    assert a != b
    assert (tmp_path / "t" / "latest").resolve() == b.resolve()


def test_container_reaping_interval_reaches_the_jvm_only_when_asked():
    assert jvm_flags(ZkSettings()) == ""
    assert jvm_flags(ZkSettings(container_check_ms=1000)) == (
        "-Dznode.container.checkIntervalMs=1000"
    )
    for bad in (0, 50, True, "1000"):
        with pytest.raises(BadInput):
            ZooKeeperSettings(container_check_ms=bad)


def test_a_run_stored_before_the_container_interval_and_fsync_still_loads(tmp_path):
    from zkjepsen.run.stored_checks import check_stored_service

    old = {"name": "zookeeper", "version": "3.8", "tick_ms": 500, "client_suite": None}
    check_stored_service({"backend": "zookeeper", "service": old}, tmp_path / "test.json")
    with pytest.raises(BadInput, match="service.tick_ms"):
        short = {k: v for k, v in old.items() if k != "tick_ms"}
        check_stored_service({"backend": "zookeeper", "service": short}, tmp_path / "test.json")
