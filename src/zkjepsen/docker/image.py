"""Build the ZooKeeper node image with no container registry.

Why this way: our machines (and many CI runners) have a Docker engine but no registry, so no base
image can be pulled. We make a minimal Debian root filesystem with `debootstrap` from the Debian
mirror the machine already uses, add one entrypoint script, and `docker import` the tree. The same
image runs the ZooKeeper servers and the client processes (it carries `python3`; kazoo and our own
package are bind-mounted from the host so both sides run exactly the same code).

The real-library drivers (Curator in Java, go-zookeeper in Go; see
backends/zookeeper/drivers.py) are compiled at build time in a throwaway copy of the root
filesystem, so their toolchains stay out.

The tag is a content hash of every input (suite, package list, entrypoint, build steps, driver
sources), so a rebuild happens only when one of them changes.

Other backends' images (Redis, PostgreSQL) are built the same way from an `ImageRecipe`: a
repository name, the Debian packages, an entrypoint, extra files and steps, and the parts of
its content hash. `zookeeper_recipe()` is the ZooKeeper node image's recipe; its hash is the
same as before recipes existed, so no image had to be rebuilt for them.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from zkjepsen.backends.zookeeper import drivers
from zkjepsen.backends.zookeeper import versions as zkversions
from zkjepsen.errors import EnvironmentProblem

IMAGE_REPO = "zkjepsen/zookeeper"
SUITE = "bookworm"
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

LABEL = "zkjepsen.image"
# Trimmed from every image's root filesystem after its packages are installed.
JUNK = (
    "var/lib/apt/lists",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/locale",
    "usr/share/info",
    "var/cache/debconf/templates.dat-old",
)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ImageRecipe:
    """Everything one image is built from, with no registry: `debootstrap --variant=minbase`
    of `suite` with `packages`, then `prepare(rootfs, work, on_progress)` (e.g. compile
    drivers in a throwaway copy), the trim, then `files(rootfs)` (path in the image -> text;
    executable when the path is under a bin/ directory), then `docker import` with `entrypoint`
    (a path in the image) and `env`. `hash_parts` are the extra inputs of the content hash
    (after suite, version, entrypoint script and packages): change any input, get a new tag."""

    repo: str  # e.g. zkjepsen/redis
    packages: tuple[str, ...]
    entrypoint: str  # the path of the entrypoint in the image
    entry_script: str  # its text (hashed; files() may rewrite it with build-time facts)
    version: str = "1"  # bump when the steps change in a way the other inputs do not show
    suite: str = SUITE
    hash_parts: Callable[[], list[str]] = field(default=lambda: [])
    prepare: Callable[[Path, Path, Progress], None] | None = None
    files: Callable[[Path], dict[str, str]] | None = None
    env: tuple[str, ...] = ("LANG=C.UTF-8",)

    def inputs(self) -> list[str]:
        return [self.suite, self.version, self.entry_script, *self.packages, *self.hash_parts()]


def zookeeper_recipe(zk_version: str | None = None) -> ImageRecipe:
    """The ZooKeeper node image of `zk_version` (harness.zkversions; default 3.8, bookworm),
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
            hash_parts=lambda: [*EXTRA_JARS, *drivers.hash_parts()],
            prepare=drivers.build_drivers,
            files=lambda rootfs: {
                "/usr/local/bin/zk-node": ENTRYPOINT.replace("@CLASSPATH@", _classpath(rootfs))
            },
        )
    jars = (*EXTRA_JARS, *v.extra_jars)
    return ImageRecipe(
        repo=IMAGE_REPO,
        packages=(
            *(v.jre if p == "default-jre-headless" else p for p in PACKAGES),
            *v.extra_packages,
        ),
        entrypoint="/usr/local/bin/zk-node",
        entry_script=ENTRYPOINT,
        version=BUILD_RECIPE_VERSION,
        suite=v.suite,
        hash_parts=lambda: [f"zookeeper {v.name}", *jars, *drivers.hash_parts(v)],
        prepare=lambda rootfs, work, progress: drivers.build_drivers(rootfs, work, progress, v),
        files=lambda rootfs: {
            "/usr/local/bin/zk-node": ENTRYPOINT.replace("@CLASSPATH@", _classpath(rootfs, jars))
        },
    )


@dataclass(frozen=True)
class ImageInfo:
    tag: str
    size_bytes: int
    built: bool  # False when the cached image was reused
    build_seconds: float | None = None


def zookeeper_tag(zk_version: str | None = None) -> str:
    """The content-hash tag of ZooKeeper `zk_version`'s node image."""
    return default_tag(zookeeper_recipe(zk_version))


def inputs_hash(recipe: ImageRecipe | None = None) -> str:
    """Content hash of everything that determines the image (default: ZooKeeper's)."""
    h = hashlib.sha256()
    for part in (recipe or zookeeper_recipe()).inputs():
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def default_tag(recipe: ImageRecipe | None = None) -> str:
    recipe = recipe or zookeeper_recipe()
    return f"{recipe.repo}:{inputs_hash(recipe)}"


def debian_mirror() -> str:
    """The Debian mirror this machine's apt already uses (no other host is reachable)."""
    env = os.environ.get("ZKJEPSEN_DEBIAN_MIRROR")
    if env:
        return env
    candidates = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in candidates:
        try:
            text = path.read_text()
        except OSError:
            continue
        for m in re.finditer(r"(https?://\S+/debian)/?(?:\s|$)", text):
            if "security" not in m.group(1):
                return m.group(1)
    return "http://deb.debian.org/debian"


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


def _run_streaming(argv: list[str], on_line: Callable[[str], None], what: str) -> None:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        tail = (tail + [line])[-15:]
        on_line(line)
    if proc.wait() != 0:
        raise EnvironmentProblem(
            f"{what} failed (exit {proc.returncode}); last output: " + " | ".join(tail[-5:])
        )


def image_exists(client, tag: str) -> bool:  # client: docker.DockerClient
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_image(
    client,
    tag: str | None = None,
    force: bool = False,
    on_progress: Callable[[str], None] = lambda s: None,
    recipe: ImageRecipe | None = None,
) -> ImageInfo:
    """Build (or reuse) an image (default: the ZooKeeper node image); returns its tag, size
    and the build time."""
    recipe = recipe or zookeeper_recipe()
    tag = tag or default_tag(recipe)
    if not force and image_exists(client, tag):
        return ImageInfo(tag, client.images.get(tag).attrs.get("Size", 0), built=False)
    if os.geteuid() != 0:
        raise EnvironmentProblem(
            "building the image needs root (debootstrap); run it as root "
            "or pass --image NAME to use an image you built yourself"
        )
    if shutil.which("debootstrap") is None:
        raise EnvironmentProblem(
            "debootstrap is not installed; run `apt-get install debootstrap` "
            "(./run does it for you)"
        )
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="zkjepsen-build-", dir="/var/tmp"))
    try:
        rootfs = work / "rootfs"
        on_progress(f"debootstrap {recipe.suite} from {debian_mirror()}")
        _run_streaming(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(recipe.packages)}",
                recipe.suite,
                str(rootfs),
                debian_mirror(),
            ],
            lambda line: on_progress(line[:100]),
            "debootstrap",
        )
        if recipe.prepare is not None:
            recipe.prepare(rootfs, work, on_progress)
        on_progress("trimming the root filesystem")
        subprocess.run(["chroot", str(rootfs), "apt-get", "clean"], check=True, capture_output=True)
        for junk in JUNK:
            target = rootfs / junk
            if target.is_dir():
                shutil.rmtree(target, ignore_errors=True)
                target.mkdir(parents=True, exist_ok=True)
        files = {recipe.entrypoint: recipe.entry_script}
        files.update(recipe.files(rootfs) if recipe.files is not None else {})
        for where, text in files.items():
            path = rootfs / where.lstrip("/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if where == recipe.entrypoint or "/bin/" in where:
                path.chmod(0o755)
        on_progress("importing into Docker")
        tarball = work / "rootfs.tar"
        subprocess.run(
            ["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."],
            check=True,
            capture_output=True,
        )
        repo, _, version = tag.rpartition(":")
        # From a file, not a stream: the engine rejects the SDK's chunked upload.
        client.api.import_image_from_file(
            str(tarball),
            repository=repo,
            tag=version,
            changes=[
                f'ENTRYPOINT ["{recipe.entrypoint}"]',
                f'LABEL {LABEL}="{inputs_hash(recipe)}"',
                *(f"ENV {e}" for e in recipe.env),
            ],
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not image_exists(client, tag):
        raise EnvironmentProblem(f"docker import finished but image {tag} is missing")
    size = client.images.get(tag).attrs.get("Size", 0)
    return ImageInfo(tag, size, built=True, build_seconds=time.monotonic() - started)


def ensure_image(
    client,
    image: str | None,
    force: bool = False,
    on_progress: Callable[[str], None] = lambda line: None,
    recipe: ImageRecipe | None = None,
) -> ImageInfo:
    """The image to run: the user's (`image`, must exist locally) or ours (`recipe`, default
    the ZooKeeper node image; built if missing, reporting each build step to `on_progress`)."""
    from zkjepsen.errors import BadInput

    if image:
        if not image_exists(client, image):
            raise BadInput(
                f"image {image} does not exist locally; build or load it first, "
                "or drop --image to use zkjepsen's own"
            )
        return ImageInfo(image, client.images.get(image).attrs.get("Size", 0), built=False)
    tag = default_tag(recipe)
    if image_exists(client, tag) and not force:
        return ImageInfo(tag, client.images.get(tag).attrs.get("Size", 0), built=False)
    return build_image(client, tag, force=force, on_progress=on_progress, recipe=recipe)
