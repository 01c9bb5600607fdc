"""The etcd driver (client/drivers/etcd, Go): registered with the command the image build
installs, built module-less from Debian's packages only, and part of the image's content hash.
No Docker, no Go needed."""

from __future__ import annotations

import shutil

from zkjepsen.backends import buildroot
from zkjepsen.backends.etcd import driver_build
from zkjepsen.recipes import RECIPES


def test_the_etcd_recipes_run_the_driver_the_build_installs():
    progs = {n: i for n, i in RECIPES.items() if "etcd" in i.backends and i.command}
    assert set(progs) >= {"etcd-mutex-go", "etcd-lock-rpc"}
    for name, info in progs.items():
        assert info.language == "go" and info.source == "library", name
        assert "real library" in info.description and info.flaw, name
        assert info.command[0] == driver_build.ETCD_LOCK_BIN, name
        assert info.command[1] in driver_build.MODES, name
    assert {i.command[1] for i in progs.values()} == set(driver_build.MODES)


def test_the_build_uses_no_module_proxy_and_writes_where_the_image_installs():
    script = driver_build.build_script()
    for setting in ("GOPATH=/usr/share/gocode", "GO111MODULE=off", "GOPROXY=off"):
        assert setting in script
    assert f"-o /drivers-out/etcd/{driver_build.BINARY} ." in script
    assert {"golang-go", "golang-etcd-server-dev"} <= set(driver_build.BUILD_PACKAGES)
    names = {p.name for p in buildroot.source_files(buildroot.DRIVERS_SRC, ("etcd",))}
    assert {"main.go", "lock.go", "session.go", "resource.go", "errs.go"} <= names


def test_a_driver_source_change_changes_the_hash_parts(tmp_path, monkeypatch):
    before = driver_build.hash_parts()
    copy = tmp_path / "drivers"
    shutil.copytree(buildroot.DRIVERS_SRC, copy)
    monkeypatch.setattr(buildroot, "DRIVERS_SRC", copy)
    assert driver_build.hash_parts() == before
    main = copy / "etcd" / "main.go"
    main.write_text(main.read_text() + "\n// x\n")
    assert driver_build.hash_parts() != before
