"""Build the etcd driver (client/drivers/etcd, Go) into the image.

The driver serves the client wire protocol with etcd's own locks, from the etcd 3.4.23 source
Debian bookworm ships in `golang-etcd-server-dev` (Go source under /usr/share/gocode, with every
Go library it needs as Debian packages: grpc, protobuf, zap, ...), compiled by Debian's Go
(golang-go, 1.19) module-less: GOPATH=/usr/share/gocode, GO111MODULE=off, GOPROXY=off. So no Go
module proxy is reached, exactly as the go-zookeeper driver is built (backends/zookeeper/
drivers.py); the toolchain stays in a throwaway build root (backends/buildroot.py), and only
one static binary lands in the image.

Inside a client container: `/opt/zkjepsen/drivers/etcd/etcd-lock MODE`, MODE `mutex`
(clientv3/concurrency's Mutex and Session) or `rpc` (the v3lock Lock/Unlock RPC).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from zkjepsen.backends import buildroot
from zkjepsen.backends.buildroot import INSTALL_DIR

LANG_DIR = "etcd"
BINARY = "etcd-lock"
ETCD_LOCK_BIN = f"{INSTALL_DIR}/{LANG_DIR}/{BINARY}"
MODES = ("mutex", "rpc")

# Only in the throwaway build root; apt brings their dependencies (the Go libraries the etcd
# source imports are all dependencies of golang-etcd-server-dev).
BUILD_PACKAGES: tuple[str, ...] = (
    "golang-go",
    "golang-etcd-server-dev",
    *buildroot.TIMEWARP_PACKAGES,
)
# Built beside the driver: the Go clock probe (client/drivers/clockprobe: what a Go program
# reads through the vDSO) and zkj-timewarp (buildroot.py), which skews etcd's clocks.
PROBE_DIR = "clockprobe"


def build_script() -> str:
    """Compile /drivers-src/etcd into /drivers-out/etcd/etcd-lock (a static binary)."""
    return f"""set -e
export GOROOT=$(dirname "$(dirname "$(readlink -f /usr/bin/go)")")
export HOME=/tmp GOCACHE=/tmp/gocache GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off \\
  GOFLAGS= CGO_ENABLED=0
mkdir -p /drivers-out/{LANG_DIR}
cd /drivers-src/{LANG_DIR}
"$GOROOT/bin/go" build -trimpath -ldflags='-s -w' -o /drivers-out/{LANG_DIR}/{BINARY} .
mkdir -p /drivers-out/{PROBE_DIR}
cd /drivers-src/{PROBE_DIR}
"$GOROOT/bin/go" build -trimpath -ldflags='-s -w' -o /drivers-out/{PROBE_DIR}/clockprobe .
{buildroot.timewarp_script()}"""


def hash_parts() -> list[str]:
    """What the image tag must change with: the build packages, the script, every source."""
    return [
        *BUILD_PACKAGES,
        build_script(),
        *buildroot.source_hash_parts(buildroot.DRIVERS_SRC, (LANG_DIR, PROBE_DIR)),
        *buildroot.timewarp_hash_parts(),
    ]


def build_driver(
    rootfs: Path, work: Path, on_progress: Callable[[str], None] = lambda s: None
) -> None:
    """Compile the driver in a throwaway copy of `rootfs` and install it in `rootfs`
    (an `ImageRecipe.prepare`)."""
    base = buildroot.DRIVERS_SRC
    buildroot.build_in_copy(
        rootfs,
        work,
        sources=[
            *(
                (p, p.relative_to(base))
                for p in buildroot.source_files(base, (LANG_DIR, PROBE_DIR))
            ),
            *buildroot.timewarp_sources(),
        ],
        packages=BUILD_PACKAGES,
        script=build_script(),
        outputs=(LANG_DIR, PROBE_DIR, buildroot.TIMEWARP_DIR),
        what="the etcd (Go) driver",
        on_progress=on_progress,
    )
