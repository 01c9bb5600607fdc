"""Build a node image with no container registry, from an `ImageRecipe`.

Why this way: our machines (and many CI runners) have a Docker engine but no registry, so no base
image can be pulled. We make a minimal Debian root filesystem with `debootstrap` from the Debian
mirror the machine already uses, add one entrypoint script, and `docker import` the tree.

Each service says what its image holds in a recipe (backends/zookeeper/image.py,
backends/redis/cluster.py, backends/postgres/image.py): a repository name, the Debian packages,
an entrypoint, extra files and steps (the ZooKeeper image compiles its drivers in a throwaway
copy of the root filesystem), and the parts of its content hash. This module knows no service.

The tag is a content hash of every input (suite, package list, entrypoint, build steps, the
recipe's extra parts), so a rebuild happens only when one of them changes.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from zkjepsen.errors import BadInput, EnvironmentProblem

SUITE = "bookworm"
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


class Detail(str):
    """A line of a build tool's own output (debootstrap, apt, a compiler), as opposed to a
    phase of the build: a `Progress` that prints lines shows phases and only samples these."""


class Heartbeat:
    """A build's progress as lines (for a log or a terminal alike): each phase as it begins,
    and while one lasts, a line at least every `every_s` seconds with the tool's latest output,
    so a 6-minute build is never silent (issue 40: the etcd image's 351 s printed nothing)."""

    def __init__(self, say: Callable[[str], None], every_s: float = 15.0) -> None:
        self.say, self.every_s = say, every_s
        self.t0 = self.last = time.monotonic()
        self.phase, self.detail = "starting", ""
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True, name="build-heartbeat")

    def __call__(self, text: str) -> None:
        with self.lock:
            if isinstance(text, Detail):
                self.detail = str(text)
                return
            self.phase, self.detail = str(text), ""
            self._say(self.phase)

    def _say(self, text: str) -> None:
        self.last = time.monotonic()
        self.say(f"[{self.last - self.t0:4.0f} s] {text}")

    def _beat(self) -> None:
        while not self.done.wait(1.0):
            with self.lock:
                if time.monotonic() - self.last >= self.every_s:
                    latest = f": {self.detail}" if self.detail else ""
                    self._say(f"still {self.phase}{latest}")

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join(timeout=5)


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


@dataclass(frozen=True)
class ImageInfo:
    tag: str
    size_bytes: int
    built: bool  # False when the cached image was reused
    build_seconds: float | None = None


def inputs_hash(recipe: ImageRecipe) -> str:
    """Content hash of everything that determines the image."""
    h = hashlib.sha256()
    for part in recipe.inputs():
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def default_tag(recipe: ImageRecipe) -> str:
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


def _run_streaming(argv: list[str], on_line: Callable[[str], None], what: str) -> None:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        tail = (tail + [line])[-15:]
        on_line(Detail(line))
    if proc.wait() != 0:
        raise EnvironmentProblem(
            f"{what} failed (exit {proc.returncode}); last output: " + " | ".join(tail[-5:])
        )


def image_exists(client, tag: str) -> bool:  # client: docker.DockerClient
    # here, not at the top: the Docker SDK (requests, urllib3) only where Docker is used
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


# A JVM started on the host (javac in a build root) must start under an address-space limit
# (CI runs with `ulimit -v`): by default it reserves a quarter of RAM for its heap and 1 GiB of
# compressed class space before it runs a line, and fails there. Read by every JVM from the
# environment, so the build scripts (and their hashes) stay as they are.
SMALL_JVM_OPTIONS = "-Xmx512m -XX:-UseCompressedClassPointers -XX:ReservedCodeCacheSize=64m"


def run_in_root(root: Path, script: str, what: str, on_line: Callable[[str], None]) -> None:
    """Run `script` in the build root with its own /proc (the JDK needs /proc/self/exe), in a
    private mount namespace: the mount vanishes with the process, nothing to unmount, so the
    build root can always be deleted."""
    proc = subprocess.run(
        [
            "unshare",
            "--mount",
            "--fork",
            "chroot",
            str(root),
            "/bin/sh",
            "-c",
            "mount -t proc proc /proc && " + script,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "JAVA_TOOL_OPTIONS": SMALL_JVM_OPTIONS},
    )
    lines = proc.stdout.splitlines()
    for line in lines[-3:]:
        on_line(Detail(line[:100]))
    if proc.returncode != 0:
        raise EnvironmentProblem(
            f"{what} failed (exit {proc.returncode}); last output: " + " | ".join(lines[-8:])
        )


def _debootstrap(recipe: ImageRecipe, rootfs: Path, on_progress: Progress) -> None:
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
        lambda line: on_progress(Detail(line[:100])),
        "debootstrap",
    )


def _trim(rootfs: Path) -> None:
    """Drop what a container never reads (apt lists and caches, docs, man pages, locales)."""
    subprocess.run(["chroot", str(rootfs), "apt-get", "clean"], check=True, capture_output=True)
    for junk in JUNK:
        target = rootfs / junk
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True, exist_ok=True)


def _write_files(recipe: ImageRecipe, rootfs: Path) -> None:
    """The entrypoint and the recipe's files; executable when under a bin/ directory."""
    files = {recipe.entrypoint: recipe.entry_script}
    files.update(recipe.files(rootfs) if recipe.files is not None else {})
    for where, text in files.items():
        path = rootfs / where.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if where == recipe.entrypoint or "/bin/" in where:
            path.chmod(0o755)


def _import(client, recipe: ImageRecipe, rootfs: Path, tarball: Path, tag: str) -> None:
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


BUILD_DIR = "/var/tmp"  # where a build's root filesystem is made (and removed)
BUILD_PREFIX = "zkjepsen-build-"


@contextmanager
def _one_build_at_a_time(on_progress: Callable[[str], None]) -> Iterator[None]:
    """One image build at a time on this machine, across processes: the suite's two xdist
    workers each build every missing image in the background and, without this, built the
    same image side by side (twice the CPU of a 2-core machine for one image). The lock is on
    the build folder itself, so it leaves no file behind and dies with its process."""
    fd = os.open(BUILD_DIR, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_progress("waiting for another image build on this machine to finish")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # and with it the lock


def remove_unfinished_builds(dry_run: bool = False) -> list[Path]:
    """The build folders a killed build left behind (1-2 GB each), removed unless `dry_run`.
    Only while no build runs on this machine (the build lock is free, and held meanwhile so
    none starts): every build makes its folder under that lock, so any folder then is stale."""
    fd = os.open(BUILD_DIR, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return []  # a build is under way: its folder is not ours to judge
        stale = sorted(Path(BUILD_DIR).glob(f"{BUILD_PREFIX}*"))
        for d in [] if dry_run else stale:
            shutil.rmtree(d, ignore_errors=True)
        return stale
    finally:
        os.close(fd)


def build_image(
    client,
    tag: str | None = None,
    force: bool = False,
    on_progress: Callable[[str], None] = lambda s: None,
    *,
    recipe: ImageRecipe,
) -> ImageInfo:
    """Build (or reuse) `recipe`'s image; returns its tag, size and the build time."""
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
    with _one_build_at_a_time(on_progress):
        if not force and image_exists(client, tag):  # built by the one we waited for
            return ImageInfo(tag, client.images.get(tag).attrs.get("Size", 0), built=False)
        work = Path(tempfile.mkdtemp(prefix=BUILD_PREFIX, dir=BUILD_DIR))
        try:
            rootfs = work / "rootfs"
            _debootstrap(recipe, rootfs, on_progress)
            if recipe.prepare is not None:
                recipe.prepare(rootfs, work, on_progress)
            on_progress("trimming the root filesystem")
            _trim(rootfs)
            _write_files(recipe, rootfs)
            on_progress("importing into Docker")
            _import(client, recipe, rootfs, work / "rootfs.tar", tag)
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
    *,
    recipe: ImageRecipe,
) -> ImageInfo:
    """The image to run: the user's (`image`, must exist locally) or ours (`recipe`'s; built
    if missing, reporting each build step to `on_progress`)."""

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
