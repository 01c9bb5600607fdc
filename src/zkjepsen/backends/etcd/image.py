"""The etcd image's recipe (docker/image.py builds it, with no registry): Debian bookworm's
`etcd-server` 3.4.23 and `etcd-client` (etcdctl), the nemesis' tools, and what the etcd
clients run: python3 with gRPC and protobuf from Debian and the `etcd3` PyPI client (pinned),
and the Go driver (driver_build.py), compiled in a throwaway copy of the root filesystem as the
ZooKeeper drivers are (backends/zookeeper/drivers.py), so its toolchain stays out.

Unlike the other services, etcd's clients run in this image too (`Service.clients`):
the etcd client libraries (gRPC, a compiled Go driver) live here, not in the ZooKeeper image.

`etcd3` 0.12.0 (2020, its last release) is a source distribution only; it is pure Python, so
the host's pip installs it with `--no-deps` into /usr/lib/python3/dist-packages, and its
dependencies come from Debian (python3-grpcio 1.51, python3-protobuf 3.21, python3-six) except
tenacity: etcd3's Lock passes tenacity an old-style `wait(attempt, delay)` function, which
tenacity >= 7 no longer accepts (bookworm ships 8.2), so tenacity is pinned from PyPI too.
Measured (docs/findings.md): with tenacity 8.2.1 a contended `acquire` raises TypeError;
with 6.3.1 it waits and acquires. Its generated protobuf code (protoc 3.6 era) imports and
runs under Debian's python3-protobuf (4.21.12, the C++ implementation), so no
PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION override is needed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from zkjepsen.backends import buildroot
from zkjepsen.backends.etcd import driver_build
from zkjepsen.backends.etcd import versions as etcd_versions
from zkjepsen.backends.etcd.versions import EtcdVersion
from zkjepsen.docker import powerfs
from zkjepsen.docker.image import ImageRecipe, Progress, run_in_root
from zkjepsen.errors import EnvironmentProblem

IMAGE_REPO = "zkjepsen/etcd"
ETCD_VERSION = etcd_versions.VERSIONS[etcd_versions.DEFAULT].etcd  # bookworm's etcd-server
PACKAGES = (
    "etcd-server",
    "etcd-client",  # etcdctl: the health and status checks a person would run
    "iptables",  # the nemesis drops packets inside a node's own network namespace
    "iproute2",
    "libfaketime",  # client clock faults (the Python client honours it; etcd does not)
    "procps",
    "python3",  # the clients' recorder and the Python driver
    "python3-grpcio",
    "python3-protobuf",
    "python3-six",
)
# From PyPI, pinned, installed without their dependencies (see the module's docstring).
PYPI = ("etcd3==0.12.0", "tenacity==6.3.1")
SITE = "usr/lib/python3/dist-packages"  # on the path of every Debian python3
ENV = ("LANG=C.UTF-8",)
# Bumped when the build steps below change in a way the other inputs do not show.
BUILD_RECIPE_VERSION = "2"

ENTRYPOINT = r"""#!/bin/sh
# etcd-node: run one etcd member with the flags the harness passes (the container command).
# The data directory is bind-mounted at /srv/data, so a killed member restarts with its data.
# etcd is PID 1's only child (exec), so SIGSTOP/SIGKILL reach it.
set -e
# Clock faults: etcd (Go) reads its clocks through the vDSO; zkj-timewarp patches it at exec
# (docker/timewarp.py) when the harness gave this server a control file (only in a run that
# plans a server clock fault), and writes what etcd reads into its observation page.
if [ -f /srv/faketime/timewarp ]; then
  if [ -d /srv/faketime-seen ]; then export ZKJ_TIMEWARP_OBSERVE=/srv/faketime-seen/page; fi
  exec /opt/zkjepsen/drivers/timewarp/zkj-timewarp /srv/faketime/timewarp etcd "$@"
fi
exec etcd "$@"
"""


def _pip_install(rootfs: Path, on_progress: Progress) -> None:
    target = rootfs / SITE
    target.mkdir(parents=True, exist_ok=True)
    on_progress(f"pip install --no-deps {' '.join(PYPI)}")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile"]
        + ["--target", str(target), *PYPI],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-5:])
        raise EnvironmentProblem(f"pip install of {', '.join(PYPI)} failed: {tail}")


def _prepare(rootfs: Path, work: Path, on_progress: Progress, v: EtcdVersion) -> None:
    if v.apt_packages:
        apt = " ".join(v.apt_packages)
        on_progress(f"apt-get install {apt}")
        if not (rootfs / "etc/resolv.conf").exists():
            shutil.copy("/etc/resolv.conf", rootfs / "etc/resolv.conf")  # apt needs DNS here
        run_in_root(
            rootfs,
            "export DEBIAN_FRONTEND=noninteractive; apt-get update -q && apt-get install "
            f"-y -q --no-install-recommends {apt} && apt-get clean",
            f"installing {apt}",
            on_progress,
        )
    _pip_install(rootfs, on_progress)
    if v.go_driver:
        # the Go driver, in a throwaway build root (driver_build.py, backends/buildroot.py),
        # with zkj-timewarp (the servers' clock faults) and the Go clock probe beside it
        driver_build.build_driver(rootfs, work, on_progress)
    else:
        buildroot.build_timewarp(rootfs, work, on_progress)
    buildroot.build_powerfs(rootfs, work, on_progress)  # the power-loss layer, for disk faults


def _hash_parts(v: EtcdVersion) -> list[str]:
    built = driver_build.hash_parts() if v.go_driver else buildroot.timewarp_hash_parts()
    parts = [v.etcd, *PYPI, SITE, *ENV, *built, *powerfs.hash_parts()]
    return parts + [f"apt:{p}" for p in v.apt_packages]


def etcd_image(version: str | None = None) -> ImageRecipe:
    """The image of etcd `version` (versions.py; default 3.4, bookworm's)."""
    v = etcd_versions.get(version)
    return ImageRecipe(
        repo=IMAGE_REPO,
        packages=(
            *(p for p in PACKAGES if p not in v.apt_packages),
            *powerfs.runtime_packages(v.suite),  # the power-loss layer (docker/powerfs.py)
        ),
        entrypoint="/usr/local/bin/etcd-node",
        entry_script=ENTRYPOINT,
        version=BUILD_RECIPE_VERSION,
        suite=v.suite,
        hash_parts=lambda: _hash_parts(v),
        prepare=lambda root, work, progress: _prepare(root, work, progress, v),
        env=ENV,
        files=lambda rootfs: powerfs.files(),
    )
