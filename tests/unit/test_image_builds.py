"""The suite's background image builds (tests/images.py): each image the session's tests need is
built once, in order, by one thread; a test waits only for its own; a failed build fails the
tests that need that image with its reason. The build itself is faked (no Docker here)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import images  # tests/images.py (tests/ is on sys.path: the conftest's folder)
import pytest

from zkjepsen.docker import image as image_mod


@pytest.fixture
def fake(monkeypatch):
    built: list[str] = []
    gate, slow_started = threading.Event(), threading.Event()

    def build_image(client, tag, *, recipe, **kw):
        if tag == "img:slow":
            slow_started.set()
            gate.wait(10)
        if tag == "img:bad":
            raise RuntimeError("debootstrap failed")
        built.append(tag)
        return image_mod.ImageInfo(tag, 1, built=True, build_seconds=0.0)

    monkeypatch.setattr(image_mod, "build_image", build_image)
    monkeypatch.setattr(images, "recipe_of", lambda key: key)
    monkeypatch.setattr(image_mod, "default_tag", lambda recipe: f"img:{recipe}")
    return SimpleNamespace(built=built, gate=gate, slow_started=slow_started)


def test_which_images_a_test_needs_comes_from_its_fixtures():
    assert images.needed(["tmp_path", "zk_image"]) == ["zookeeper"]
    assert images.needed(["pg_image", "zk_image"]) == ["zookeeper", "postgres"]
    both = images.needed(["version", "docker_client"])
    assert both == [f"zookeeper-{v}" for v in images.versions()] and len(both) >= 3


def test_each_image_is_built_once_in_order_and_a_test_waits_for_its_own(fake):
    built, gate = fake.built, fake.gate
    b = images.Builds(lambda: None, ["zk", "slow", "etcd", "zk"])
    gate.set()
    assert b.tag("etcd") == "img:etcd"  # waits for the ones before it, in their order
    assert b.tag("zk") == "img:zk"
    assert built == ["img:zk", "img:slow", "img:etcd"]
    assert b.tag("extra") == "img:extra" and built[-1] == "img:extra"  # asked later: built then


def test_a_failed_build_fails_only_the_tests_that_need_it(fake):
    built, gate = fake.built, fake.gate
    gate.set()
    b = images.Builds(lambda: None, ["bad", "redis"])
    with pytest.raises(RuntimeError, match="debootstrap failed"):
        b.tag("bad")
    assert b.tag("redis") == "img:redis" and built == ["img:redis"]


def test_closing_waits_for_the_build_under_way_and_starts_no_other(fake):
    built, gate = fake.built, fake.gate
    b = images.Builds(lambda: None, ["slow", "etcd"])
    b._start()
    assert fake.slow_started.wait(10)
    threading.Timer(0.2, gate.set).start()
    b.close()  # returns once "slow" is built: its folder is gone with it
    assert built == ["img:slow"] and b.tag("slow") == "img:slow"
    with pytest.raises(RuntimeError, match="session ended"):
        b.tag("etcd")  # never started: its waiter is told, not left hanging


def test_a_second_build_of_the_same_image_waits_for_the_first_and_reuses_it(monkeypatch, tmp_path):
    """Two processes (the suite's xdist workers) missing the same image: the second waits on
    the machine-wide build lock and then finds the image built, instead of building it again."""
    monkeypatch.setattr(image_mod, "BUILD_DIR", str(tmp_path))
    monkeypatch.setattr(image_mod.os, "geteuid", lambda: 0)
    monkeypatch.setattr(image_mod.shutil, "which", lambda name: f"/usr/sbin/{name}")
    exists = threading.Event()
    monkeypatch.setattr(image_mod, "image_exists", lambda client, tag: exists.is_set())
    client = SimpleNamespace(images=SimpleNamespace(get=lambda tag: SimpleNamespace(attrs={})))
    said: list[str] = []
    waiting = threading.Event()

    def progress(line: str) -> None:
        said.append(line)
        waiting.set()

    result: list = []
    with image_mod._one_build_at_a_time(lambda s: None):  # the first build, under way
        t = threading.Thread(
            target=lambda: result.append(
                image_mod.build_image(client, "img:x", on_progress=progress, recipe=None)
            )
        )
        t.start()
        assert waiting.wait(60), said  # a bounded wait (it says so at once)
        assert "waiting for another image build" in said[0] and result == []
        exists.set()  # the first build's image is in
    t.join(60)  # a bounded wait: the lock is released above
    assert result and result[0].built is False and result[0].tag == "img:x"


def test_cleanup_removes_a_killed_builds_folder_only_while_no_build_runs(tmp_path, monkeypatch):
    """A build killed mid-way leaves its 1-2 GB folder; cleanup removes such folders, but not
    while a build holds the lock (the folder may be that build's own)."""
    monkeypatch.setattr(image_mod, "BUILD_DIR", str(tmp_path))
    left = tmp_path / f"{image_mod.BUILD_PREFIX}abc"
    (left / "rootfs").mkdir(parents=True)
    (tmp_path / "someone-elses").mkdir()
    with image_mod._one_build_at_a_time(lambda s: None):
        assert image_mod.remove_unfinished_builds() == [] and left.exists()
    assert image_mod.remove_unfinished_builds(dry_run=True) == [left] and left.exists()
    assert image_mod.remove_unfinished_builds() == [left] and not left.exists()
    assert (tmp_path / "someone-elses").exists()
