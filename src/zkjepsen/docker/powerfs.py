"""The power-loss layer (`powerfs.c`, beside this file): what an image carries for it, how a
server container boots through it, and how the nemesis asks it to drop what was not fsynced.

Why: a `kill -9` loses nothing (the kernel keeps the page cache), so only a layer that holds
each file's writes since its last fsync can show what a power loss takes. `powerfs` is a FUSE
passthrough (libfuse3, Debian's) mounted over a server's data directory; its undo records of
what was written since the last fsync are dropped on command (`drop`, or `torn`: the newest
write survives in part), and it counts what it dropped.

Only runs that ask for disk faults use it (`ContainerCluster.power_dir`): their server
containers, and only those, get `/dev/fuse` and CAP_SYS_ADMIN and boot through
`powerfs-boot DATA_DIR ENTRYPOINT...`, which bind-mounts the data directory aside (its files
live in `.powerfs-live/` of it, the undo trash in `.powerfs-trash/`), mounts the layer over it
and runs the server. The mount and its process live in the container's own namespaces: they
end with the container, and the data directory (the run's scratch) with the run.
"""

from __future__ import annotations

import json
from pathlib import Path

SOURCE = Path(__file__).with_name("powerfs.c")
INSTALL_DIR = "/opt/zkjepsen/powerfs"
BIN = f"{INSTALL_DIR}/powerfs"
BOOT = "/usr/local/bin/powerfs-boot"
CONTROL = "/run/powerfs/ctl"
RUNTIME_PACKAGES = ("libfuse3-3",)
# libfuse3's runtime package is named for its soname: libfuse3-3 in bullseye and bookworm,
# libfuse3-4 in trixie (fuse 3.17; checked in the suites' package indexes, 2026-11-26).
RUNTIME_BY_SUITE = {"trixie": ("libfuse3-4",)}


def runtime_packages(suite: str) -> tuple[str, ...]:
    """The layer's runtime library, as the Debian `suite` names it."""
    return RUNTIME_BY_SUITE.get(suite, RUNTIME_PACKAGES)


BUILD_PACKAGES = ("gcc", "libc6-dev", "libfuse3-dev", "pkg-config")
BUILD_SCRIPT = """set -e
mkdir -p /drivers-out/powerfs
gcc -O2 -Wall -o /drivers-out/powerfs/powerfs /drivers-src/powerfs/powerfs.c \\
  $(pkg-config --cflags --libs fuse3)
"""
BOOT_SCRIPT = rf"""#!/bin/sh
# powerfs-boot DATA_DIR ENTRYPOINT [ARGS...]: the power-loss layer over DATA_DIR, then the server.
set -e
d="$1"; shift
u=/run/powerfs/under
mkdir -p "$u"
mount --bind "$d" "$u"
mkdir -p "$u/.powerfs-live" "$u/.powerfs-trash"
# First boot: what the harness put in the data directory becomes the layer's live files.
for f in "$u"/* "$u"/.[!.]*; do
  case "$f" in "$u/.powerfs-live"|"$u/.powerfs-trash"|"$u/*"|"$u/.[!.]*") continue;; esac
  mv "$f" "$u/.powerfs-live/"
done
chown --reference="$u" "$u/.powerfs-live"
chmod --reference="$u" "$u/.powerfs-live"
rm -rf "$u/.powerfs-trash" && mkdir "$u/.powerfs-trash"
{BIN} "$u/.powerfs-live" "$u/.powerfs-trash" {CONTROL} "$d" \
  -o allow_other,default_permissions,fsname=powerfs
exec "$@"
"""


def hash_parts() -> list[str]:
    """What an image's tag must change with: the layer's source and how it is built and run."""
    return [*RUNTIME_PACKAGES, *BUILD_PACKAGES, BUILD_SCRIPT, BOOT_SCRIPT, SOURCE.read_text()]


def files() -> dict[str, str]:
    """The files an image carries for the layer (its binary is compiled by the recipe)."""
    return {BOOT: BOOT_SCRIPT}


def entrypoint(data_dir: str, image_entrypoint: list[str]) -> list[str]:
    """A server container's entrypoint under the layer."""
    return [BOOT, data_dir, *image_entrypoint]


def host_config() -> dict[str, object]:
    """What a server container under the layer needs: the FUSE device and the mount."""
    return {"devices": ["/dev/fuse:/dev/fuse:rwm"], "cap_add": ["SYS_ADMIN"]}


def command(what: str, age_s: float = 0.0) -> list[str]:
    """The argv, in a server container, that asks the layer `what`: stat, sync (all pending is
    on disk), drop or torn (what is older than `age_s` > 0 the kernel had written back)."""
    return [BIN, "ctl", CONTROL, what, *([f"{age_s:g}"] if age_s > 0 else [])]


def parse(output: str) -> dict[str, int]:
    """The layer's one-line JSON answer; {} when there is none (the layer was not running)."""
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                return {k: int(v) for k, v in json.loads(line).items()}
            except (ValueError, TypeError, AttributeError):
                return {}
    return {}
