"""The ZooKeeper node image's recipe (docker/image.py builds it): Debian's ZooKeeper, a headless
JRE, the nemesis' tools, python3, libfaketime and the real-library drivers (drivers.py), compiled
at build time in a throwaway copy of the root filesystem so their toolchains stay out.

The same image runs the ZooKeeper servers and the client processes of every backend (it carries
`python3`; kazoo and our own package are bind-mounted from the host so both sides run exactly
the same code). 3.8's inputs are exactly those of the single image zkjepsen had before versions
and recipes existed, so its tag never moved.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable
from pathlib import Path

from zkjepsen.backends import buildroot
from zkjepsen.backends.zookeeper import drivers
from zkjepsen.backends.zookeeper import versions as zkversions
from zkjepsen.docker import powerfs
from zkjepsen.docker.image import SUITE, ImageRecipe, Progress, default_tag

IMAGE_REPO = "zkjepsen/zookeeper"
# Headless JRE only: Debian's `zookeeper` package pulls the full GUI JRE (~930 MB vs ~450 MB).
PACKAGES = (
    "libzookeeper-java",
    "default-jre-headless",
    "iptables",  # the nemesis drops packets inside a node's own network namespace
    "iproute2",
    "libfaketime",  # clock faults: preloaded into the JVM and the clients
    "procps",
    "python3",  # client processes run in containers of this same image
    *drivers.RUNTIME_PACKAGES,  # Curator's jars for the Java driver (the JRE is above)
    *powerfs.RUNTIME_PACKAGES,  # the power-loss layer (docker/powerfs.py), for disk faults
)
# Bumped when the build steps below change in a way the other inputs do not show.
BUILD_RECIPE_VERSION = "4"
ZK_JAVA_DIR = "/usr/share/java"
# slf4j needs a binding (slf4j-log4j12 + log4j-1.2 on the classpath) or the server logs nothing.
EXTRA_JARS = ("slf4j-log4j12.jar", "log4j-1.2.jar")

ENTRYPOINT = r"""#!/bin/sh
# zk-node: start one ZooKeeper server from the config the harness bind-mounted at /zk/conf.
# No systemd, no Debian wrapper: the JVM is PID 1's only child, so SIGSTOP/SIGKILL reach it.
set -e
exec java -Xmx"${ZK_HEAP:-128m}" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k \
  -Dzookeeper.log.dir=/zk/log -Dlog4j.configuration=file:/zk/conf/log4j.properties \
  -cp "/zk/conf:@CLASSPATH@" org.apache.zookeeper.server.quorum.QuorumPeerMain /zk/conf/zoo.cfg
"""


def zookeeper_recipe(zk_version: str | None = None) -> ImageRecipe:
    """The ZooKeeper node image of `zk_version` (versions.py; default 3.8, bookworm),
    also the client image: python3, libfaketime, the drivers. Read from the module's names at
    call time, so a test that changes PACKAGES sees it. 3.8's inputs are exactly those of the
    single image zkjepsen had before versions, so its tag did not move."""
    v = zkversions.get(zk_version)
    if v.name == zkversions.DEFAULT:
        return ImageRecipe(
            repo=IMAGE_REPO,
            packages=tuple(PACKAGES),
            entrypoint="/usr/local/bin/zk-node",
            entry_script=ENTRYPOINT,
            version=BUILD_RECIPE_VERSION,
            suite=SUITE,
            hash_parts=lambda: [*EXTRA_JARS, *drivers.hash_parts(), *powerfs.hash_parts()],
            prepare=_prepare(None),
            files=lambda rootfs: {
                "/usr/local/bin/zk-node": ENTRYPOINT.replace("@CLASSPATH@", _classpath(rootfs)),
                **powerfs.files(),
            },
        )
    jars = (*EXTRA_JARS, *v.extra_jars)
    fuse = powerfs.RUNTIME_PACKAGES  # named per suite (trixie's is libfuse3-4)
    return ImageRecipe(
        repo=IMAGE_REPO,
        packages=(
            *(v.jre if p == "default-jre-headless" else p for p in PACKAGES if p not in fuse),
            *powerfs.runtime_packages(v.suite),
            *v.extra_packages,
        ),
        entrypoint="/usr/local/bin/zk-node",
        entry_script=ENTRYPOINT,
        version=BUILD_RECIPE_VERSION,
        suite=v.suite,
        hash_parts=lambda: [
            f"zookeeper {v.name}",
            *jars,
            *drivers.hash_parts(v),
            *powerfs.hash_parts(),
        ],
        prepare=_prepare(v),
        files=lambda rootfs: {
            "/usr/local/bin/zk-node": ENTRYPOINT.replace("@CLASSPATH@", _classpath(rootfs, jars)),
            **powerfs.files(),
        },
    )


def _prepare(v: zkversions.ZkVersion | None) -> Callable[[Path, Path, Progress], None]:
    """The drivers, then the power-loss layer, each compiled in a throwaway build root."""

    def prepare(rootfs: Path, work: Path, progress: Progress) -> None:
        drivers.build_drivers(rootfs, work, progress, v)
        buildroot.build_powerfs(rootfs, work, progress)

    return prepare


def zookeeper_tag(zk_version: str | None = None) -> str:
    """The content-hash tag of ZooKeeper `zk_version`'s node image."""
    return default_tag(zookeeper_recipe(zk_version))


def _classpath(rootfs: Path, extra_jars: tuple[str, ...] = EXTRA_JARS) -> str:
    """zookeeper.jar's manifest names the jars it needs; add the log binding it does not
    (and, for 3.4, whose manifest forgets it, slf4j's API)."""
    jar = rootfs / ZK_JAVA_DIR.lstrip("/") / "zookeeper.jar"
    with zipfile.ZipFile(jar) as z:
        manifest = z.read("META-INF/MANIFEST.MF").decode()
    # Manifest lines are wrapped at 72 bytes with a leading space on continuation lines.
    unwrapped = re.sub(r"\r?\n ", "", manifest)
    entries: list[str] = [f"{ZK_JAVA_DIR}/zookeeper.jar"]
    for line in unwrapped.splitlines():
        if line.startswith("Class-Path:"):
            for rel in line.split(":", 1)[1].split():
                entries.append(rel if rel.startswith("/") else f"{ZK_JAVA_DIR}/{rel}")
    entries += [f"{ZK_JAVA_DIR}/{j}" for j in extra_jars]
    present = [e for e in dict.fromkeys(entries) if (rootfs / e.lstrip("/")).exists()]
    return ":".join(present)
