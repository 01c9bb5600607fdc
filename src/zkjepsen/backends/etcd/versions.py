"""The etcd versions zkjepsen can run: one Debian suite each, so no registry is needed.

Checked in the suites' package indexes (deb.debian.org, 2026-11-24): bookworm ships
`etcd-server`/`etcd-client` 3.4.23 (Go 1.19), trixie 3.5.16 (3.5.16-4, Go 1.24), with
python3-grpcio 1.51.1 and python3-protobuf 3.21.12 in both, so the etcd3 PyPI client runs the
same way on either. `--etcd-version` picks the image's suite (servers and clients: etcd's
clients run in its image). Both speak the same v3 API, its JSON gateway at `/v3/...` included.
"""

from __future__ import annotations

from dataclasses import dataclass

from zkjepsen.errors import BadInput


@dataclass(frozen=True)
class EtcdVersion:
    name: str  # what users type: "3.5"
    suite: str  # the Debian suite its image is bootstrapped from
    etcd: str  # etcd-server's version in that suite
    # Installed with apt-get in the bootstrapped root instead of by debootstrap, whose own
    # dependency resolution fails on them in that suite (trixie: configuring python3-grpcio).
    apt_packages: tuple[str, ...] = ()
    # The Go driver (driver_build.py) is written against etcd 3.4's client packages
    # (go.etcd.io/etcd/clientv3); 3.5 moved them (go.etcd.io/etcd/client/v3), so the trixie
    # image has no Go driver and the Go recipes are refused on it.
    go_driver: bool = True
    # --unsafe-no-fsync (`--fsync relaxed`) came with etcd 3.5; 3.4.23's etcd has no such flag
    unsafe_no_fsync: bool = False


VERSIONS: dict[str, EtcdVersion] = {
    "3.4": EtcdVersion("3.4", "bookworm", "3.4.23"),
    "3.5": EtcdVersion(
        "3.5",
        "trixie",
        "3.5.16",
        ("python3-grpcio", "python3-protobuf"),
        go_driver=False,
        unsafe_no_fsync=True,
    ),
}
DEFAULT = "3.4"
# A rolling upgrade's next version: a version not here has none, and rolling-upgrade is
# refused on it (EtcdSettings.lacks).
UPGRADES = {"3.4": "3.5"}


def get(name: str | None) -> EtcdVersion:
    """The version `name` names ("3.5", "3.5.16"); the default for None."""
    if name is None:
        return VERSIONS[DEFAULT]
    key = ".".join(str(name).strip().split(".")[:2])
    found = VERSIONS.get(key)
    if found is None or not str(name).strip().startswith(key):
        choices = ", ".join(f"{v.name} ({v.suite}, {v.etcd})" for v in VERSIONS.values())
        raise BadInput(f"unknown etcd version {name!r}; choose from {choices}")
    return found


def without_driver(version: EtcdVersion, recipe: str, language: str) -> str | None:
    """Why `recipe` (written in `language`) cannot run on `version`, or None: its clients would
    need a driver that version's image does not have. A test refuses it; a matrix marks the
    cell n/a and runs the rest."""
    if language == "go" and not version.go_driver:
        return (
            f"recipe {recipe}'s Go driver is built against etcd 3.4's client; "
            f"run it without --etcd-version {version.name}"
        )
    return None
