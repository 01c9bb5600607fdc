"""Compile drivers in a throwaway build root, for any service's image (backends/<service>/).

Why this way: the real-library drivers (client/drivers/<lang>/) are compiled from Debian's
packages (a JDK, the Go toolchain, the libraries' sources), so no Maven Central or Go module
proxy is needed; but the toolchains must not land in the runtime image. So they are installed
into a *throwaway copy* of the freshly bootstrapped root filesystem, the drivers are compiled
there (chroot: docker/image.py's `run_in_root`), and only the results are copied back. The
sources are copied to `/drivers-src/<dir>/` of the build root; the build script leaves its
results in `/drivers-out/<dir>/`, and those directories are installed under the image's
drivers directory.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from zkjepsen.docker import powerfs
from zkjepsen.docker.image import run_in_root
from zkjepsen.errors import EnvironmentProblem

DRIVERS_SRC = Path(__file__).resolve().parents[1] / "client" / "drivers"
INSTALL_DIR = "/opt/zkjepsen/drivers"


def source_files(
    base: Path, dirs: Iterable[str], suffixes: tuple[str, ...] = (".java", ".go")
) -> Iterator[Path]:
    """The driver sources of `dirs` under `base` (client/drivers/), sorted; an installation
    without them is incomplete and says so."""
    for lang in dirs:
        found = [p for p in sorted((base / lang).rglob("*")) if p.suffix in suffixes]
        if not found:
            # An installed package without its package data (pyproject's package-data) would
            # otherwise name another image and fail deep in its build.
            raise EnvironmentProblem(
                f"the {lang} driver's sources are missing from {base / lang}: this "
                "zkjepsen installation is incomplete; reinstall it (pip install .) from a "
                "checkout or a wheel built from one"
            )
        yield from (p for p in found if p.is_file())


def source_hash_parts(base: Path, dirs: Iterable[str]) -> list[str]:
    """Every source file's name and text: an image's tag must change with them."""
    parts: list[str] = []
    for path in source_files(base, dirs):
        parts.append(str(path.relative_to(base)))
        parts.append(path.read_text())
    return parts


def build_in_copy(
    rootfs: Path,
    work: Path,
    *,
    sources: Iterable[tuple[Path, Path]],
    packages: Iterable[str],
    script: str,
    outputs: Iterable[str],
    what: str,
    on_progress: Callable[[str], None] = lambda s: None,
    edit_sources: Callable[[Path], None] | None = None,
) -> None:
    """Copy `rootfs` to a build root, put each (source file, path under /drivers-src) there,
    let `edit_sources(that /drivers-src)` add or change files, install `packages`, run
    `script`, and copy each of `outputs` (directories under /drivers-out) to the drivers
    directory of `rootfs`. The build root is deleted whatever happens."""
    build = work / "buildroot"
    on_progress("copying the root filesystem for a throwaway driver build root")
    subprocess.run(["cp", "-a", str(rootfs), str(build)], check=True, capture_output=True)
    try:
        if not (build / "etc/resolv.conf").exists():
            shutil.copy("/etc/resolv.conf", build / "etc/resolv.conf")
        src = build / "drivers-src"
        for path, rel in sources:
            dest = src / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, dest)
        if edit_sources is not None:
            edit_sources(src)
        packages = list(packages)
        on_progress(f"installing {', '.join(packages)} in the build root")
        run_in_root(
            build,
            "export DEBIAN_FRONTEND=noninteractive; apt-get update -q && "
            f"apt-get install -y -q --no-install-recommends {' '.join(packages)}",
            "installing the driver toolchains",
            on_progress,
        )
        on_progress(f"compiling {what}")
        run_in_root(build, script, f"compiling {what}", on_progress)
        target = rootfs / INSTALL_DIR.lstrip("/")
        for out in outputs:
            shutil.copytree(build / "drivers-out" / out, target / out, dirs_exist_ok=True)
    finally:
        shutil.rmtree(build, ignore_errors=True)


def build_powerfs(rootfs: Path, work: Path, on_progress: Callable[[str], None]) -> None:
    """The power-loss layer (docker/powerfs.c), compiled in a throwaway copy of `rootfs` and
    installed in it with its boot script (docker/powerfs.py says how it is used)."""
    build_in_copy(
        rootfs,
        work,
        sources=[(powerfs.SOURCE, Path("powerfs/powerfs.c"))],
        packages=powerfs.BUILD_PACKAGES,
        script=powerfs.BUILD_SCRIPT,
        outputs=["powerfs"],
        what="the power-loss layer (powerfs)",
        on_progress=on_progress,
    )
    src = rootfs / INSTALL_DIR.lstrip("/") / "powerfs" / "powerfs"
    dest = rootfs / powerfs.BIN.lstrip("/")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(src, dest)


# zkj-timewarp (client/drivers/timewarp/, C; docker/timewarp.py says why), compiled by Debian's
# gcc in the same kind of throwaway build root: a static binary, so it runs in any image.
TIMEWARP_DIR = "timewarp"
TIMEWARP_PACKAGES = ("gcc", "libc6-dev")
TIMEWARP_SUFFIXES = (".c", ".h", ".sh")


def timewarp_script() -> str:
    """Compile /drivers-src/timewarp into /drivers-out/timewarp (the launcher, the C probe)."""
    return f"sh /drivers-src/{TIMEWARP_DIR}/build.sh /drivers-out/{TIMEWARP_DIR}\n"


def timewarp_sources() -> list[tuple[Path, Path]]:
    found = source_files(DRIVERS_SRC, (TIMEWARP_DIR,), TIMEWARP_SUFFIXES)
    return [(p, p.relative_to(DRIVERS_SRC)) for p in found]


def timewarp_hash_parts() -> list[str]:
    parts = [*TIMEWARP_PACKAGES, timewarp_script()]
    for path, rel in timewarp_sources():
        parts += [str(rel), path.read_text()]
    return parts


def build_timewarp(
    rootfs: Path, work: Path, on_progress: Callable[[str], None] = lambda s: None
) -> None:
    """Compile zkj-timewarp alone into `rootfs` (an `ImageRecipe.prepare`)."""
    build_in_copy(
        rootfs,
        work,
        sources=timewarp_sources(),
        packages=TIMEWARP_PACKAGES,
        script=timewarp_script(),
        outputs=(TIMEWARP_DIR,),
        what="zkj-timewarp",
        on_progress=on_progress,
    )
