"""Build the real-library drivers (client/drivers/curator, client/drivers/gozk) into the image.

Why this way: the drivers are Java (Apache Curator 5.4.0) and Go (go-zookeeper) programs that
speak the client wire protocol (docs/client-protocol.md). Debian bookworm ships both libraries,
so they build with no registry, no Maven Central and no Go module proxy, in a throwaway build
root (backends/buildroot.py); only the results are copied back: one jar of our classes (its
manifest names Debian's Curator, ZooKeeper, guava and slf4j jars, which the runtime image
carries) and one static Go binary.

Inside a client container:
- `/opt/zkjepsen/drivers/curator/run MODE` (MODE: one of CURATOR_MODES, Subject.MODES), i.e.
  `java ... -jar /opt/zkjepsen/drivers/curator/zkjepsen-curator.jar MODE`;
- `/opt/zkjepsen/drivers/gozk/zk-lock`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from zkjepsen.backends import buildroot
from zkjepsen.backends.buildroot import DRIVERS_SRC, INSTALL_DIR
from zkjepsen.backends.zookeeper import versions as zkversions
from zkjepsen.backends.zookeeper.versions import ZkVersion

LANG_DIRS = ("curator", "gozk")
CURATOR_JAR = f"{INSTALL_DIR}/curator/zkjepsen-curator.jar"
CURATOR_RUN = f"{INSTALL_DIR}/curator/run"
GOZK_BIN = f"{INSTALL_DIR}/gozk/zk-lock"
CURATOR_MODES = (
    "mutex",
    "careful",
    "semaphore",
    "latch",
    "semaphore-v2",
    "rwlock",
    "selector",
    "selector-tolerant",
)

# In the runtime image: Curator and what it needs at run time (guava, slf4j, ZooKeeper 3.8.0).
RUNTIME_PACKAGES = ("libcurator-recipes-java",)
# Only in the throwaway build root.
BUILD_PACKAGES = (
    "default-jdk-headless",
    "golang-go",
    "golang-github-samuel-go-zookeeper-dev",
    *buildroot.TIMEWARP_PACKAGES,  # zkj-timewarp: clock faults on Go client programs
)
JAVA_DIR = "/usr/share/java"
CURATOR_CLASSPATH = (
    "curator-recipes.jar",
    "curator-framework.jar",
    "curator-client.jar",
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "guava.jar",
    "slf4j-api.jar",
    "slf4j-simple.jar",
)


def run_script(v: ZkVersion | None = None) -> str:
    """A small JVM: one per client container, started per (re)start of the program."""
    v = v or zkversions.get(None)
    curator = v.curator
    return f"""#!/bin/sh
# The real Apache Curator {curator} behind zkjepsen's client wire protocol. MODE: {
        ", ".join(CURATOR_MODES)
    }
exec {v.client_java} -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Xmx128m \\
  -jar {CURATOR_JAR} "$@"
"""


def build_script(v: ZkVersion | None = None) -> str:
    """Compile both drivers in the throwaway build root (javac for the suite's JDK)."""
    v = v or zkversions.get(None)
    release = v.java_release
    # bullseye's zookeeper.jar carries its .java sources too; javac would compile them (and
    # fail on log4j) unless told where our sources are. Only there, so 3.8's hash stays.
    sourcepath = " -sourcepath /drivers-src/curator" if v.curator_shim else ""
    return f"""set -e
# The toolchains by their real paths (the JDK's launchers find libjli.so through $ORIGIN).
JDK=$(dirname "$(readlink -f /usr/bin/javac)")
export GOROOT=$(dirname "$(dirname "$(readlink -f /usr/bin/go)")")
export HOME=/tmp GOCACHE=/tmp/gocache GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off \\
  CGO_ENABLED=0
mkdir -p /drivers-out/curator /drivers-out/gozk /tmp/classes
"$JDK/javac" --release {release}{sourcepath} -nowarn -encoding UTF-8 \\
  -cp {":".join(f"{JAVA_DIR}/{j}" for j in CURATOR_CLASSPATH)} \\
  -d /tmp/classes /drivers-src/curator/*.java
"$JDK/jar" --create --file /drivers-out/curator/zkjepsen-curator.jar \\
  --manifest /drivers-src/MANIFEST.MF -C /tmp/classes .
cd /drivers-src/gozk
"$GOROOT/bin/go" build -trimpath -ldflags='-s -w' -o /drivers-out/gozk/zk-lock .
{buildroot.timewarp_script()}"""


CURATOR_RUN_SCRIPT = run_script()
BUILD_SCRIPT = build_script()


def manifest() -> str:
    """The jar's manifest: Main-Class, and Class-Path naming Debian's jars (lines ≤ 72 bytes)."""
    value = " ".join(f"{JAVA_DIR}/{j}" for j in CURATOR_CLASSPATH)
    line = f"Class-Path: {value}"
    wrapped = [line[:72]] + [" " + line[i : i + 71] for i in range(72, len(line), 71)]
    return (
        "Manifest-Version: 1.0\nMain-Class: zkjepsen.curator.Driver\n" + "\n".join(wrapped) + "\n"
    )


# An older Curator's suite compiles Driver.java with its fenced write rewritten to call the
# shim (client/drivers/<curator_shim>/Compat.java); Driver.java itself stays as it is, so the
# default image's content hash does not move. The build fails if the text is not found.
SHIM_EDITS = (
    ("Driver.java", "import org.apache.curator.framework.api.transaction.CuratorOp;\n", ""),
    (
        "Driver.java",
        """            List<CuratorOp> ops = Arrays.asList(
                    client.transactionOp().check().forPath(fence),
                    client.transactionOp().setData().withVersion(version).forPath(path, bytes));
            List<CuratorTransactionResult> res = client.transaction().forOperations(ops);
            return Json.obj("version", res.get(1).getResultStat().getVersion());
""",
        """            return Json.obj("version",
                    Compat.fencedSetData(client, fence, path, bytes, version));
""",
    ),
    ("Subject.java", "lease.getNodeName()", "Compat.nodeName(lease)"),
    ("SemaphoreV2.java", "lease.getNodeName()", "Compat.nodeName(lease)"),
    ("Subject.java", "latch.getOurPath()", "Compat.ourPath(latch)"),
)


def source_files(v: ZkVersion | None = None) -> Iterator[Path]:
    dirs = [*LANG_DIRS, *([v.curator_shim] if v is not None and v.curator_shim else [])]
    yield from buildroot.source_files(DRIVERS_SRC, dirs)


def shimmed(name: str, text: str) -> str:
    """Source file `name` of the Java driver for an older Curator (see SHIM_EDITS)."""
    for file, old, new in SHIM_EDITS:
        if file != name:
            continue
        if old not in text:
            raise ValueError(f"{name} no longer contains the text the shim replaces: {old!r}")
        text = text.replace(old, new)
    return text


def hash_parts(v: ZkVersion | None = None) -> list[str]:
    """What the image tag must change with: every driver source and every build step."""
    scripts = [run_script(v), build_script(v)]
    parts = [*RUNTIME_PACKAGES, *BUILD_PACKAGES, *scripts, manifest()]
    parts += buildroot.timewarp_hash_parts()
    for path in source_files(v):
        parts.append(str(path.relative_to(DRIVERS_SRC)))
        parts.append(path.read_text())
    if v is not None and v.curator_shim:
        parts += [x for edit in SHIM_EDITS for x in edit]
    return parts


def build_drivers(
    rootfs: Path,
    work: Path,
    on_progress: Callable[[str], None] = lambda s: None,
    v: ZkVersion | None = None,
) -> None:
    """Compile the drivers (for version `v`'s suite, default 3.8's) in a throwaway copy of
    `rootfs` and install the results in it."""
    sources = []
    for path in source_files(v):
        rel = path.relative_to(DRIVERS_SRC)
        if v is not None and v.curator_shim and rel.parts[0] == v.curator_shim:
            rel = Path("curator", *rel.parts[1:])  # compiled with the driver's classes
        sources.append((path, rel))
    sources += buildroot.timewarp_sources()

    def edit(src: Path) -> None:
        if v is not None and v.curator_shim:
            for name in {file for file, _, _ in SHIM_EDITS}:
                java = src / "curator" / name
                java.write_text(shimmed(name, java.read_text()))
        (src / "MANIFEST.MF").write_text(manifest())

    buildroot.build_in_copy(
        rootfs,
        work,
        sources=sources,
        packages=BUILD_PACKAGES,
        script=build_script(v),
        outputs=(*LANG_DIRS, buildroot.TIMEWARP_DIR),
        what="the Curator (Java) and go-zookeeper (Go) drivers",
        on_progress=on_progress,
        edit_sources=edit,
    )
    run = rootfs / CURATOR_RUN.lstrip("/")
    run.write_text(run_script(v))
    run.chmod(0o755)
