"""The PostgreSQL 15 server image, built with no container registry as every zkjepsen image is
(docker/image.py: `debootstrap --variant=minbase` of Debian bookworm, then `docker import`).

`postgresql-15` as bookworm ships it (15.x), `iptables` for the nemesis's partitions, and the
database cluster created at build time (`initdb` in the root filesystem, as the postgres user),
so a container serves in about a second instead of running `initdb` first. Authentication is
`trust` from anywhere: the server lives on a per-run private network and holds nothing but the
test's own rows. The power-loss layer (docker/powerfs.py) is compiled in too: a run with disk
faults boots the server through it, over the data directory. Clients do not run here: they run
zkjepsen's client image with psycopg mounted (client/pool.py), as every backend's clients do.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from zkjepsen.backends import buildroot
from zkjepsen.docker import powerfs
from zkjepsen.docker.image import ImageRecipe
from zkjepsen.errors import EnvironmentProblem

PG_MAJOR = "15"
PG_BIN = f"/usr/lib/postgresql/{PG_MAJOR}/bin"
DATA_DIR = "/pg/data"  # initialised at build time; each container has its own copy
PG_USER = "postgres"
PACKAGES = (
    f"postgresql-{PG_MAJOR}",  # brings psql (postgresql-client-15), used for setup and faults
    "iptables",  # the nemesis drops packets inside a server's own network namespace
    "iproute2",
    "procps",
    *powerfs.RUNTIME_PACKAGES,  # the power-loss layer (docker/powerfs.py), for disk faults
)
# Every address may connect, without a password: a private per-run network, test rows only.
HBA = """local all all trust
host all all 0.0.0.0/0 trust
host all all ::/0 trust
"""
ENTRYPOINT_PATH = "/usr/local/bin/pg-node"
ENTRYPOINT = f"""#!/bin/sh
# pg-node: run the PostgreSQL server as the postgres user, PID 1's only process, so docker's
# SIGSTOP/SIGKILL reach it. Settings come as `-c name=value` arguments (the container command).
set -e
exec setpriv --reuid={PG_USER} --regid={PG_USER} --init-groups {PG_BIN}/postgres -D {DATA_DIR} "$@"
"""


def _initdb(rootfs: Path, work: Path, on_progress: Callable[[str], None]) -> None:
    """Create the database cluster inside the root filesystem (chroot, as the postgres user);
    drop the one Debian's postinst may have made (unused, ~40 MB)."""
    data = rootfs / DATA_DIR.lstrip("/")
    data.mkdir(parents=True)
    subprocess.run(
        ["chroot", str(rootfs), "chown", "-R", f"{PG_USER}:{PG_USER}", "/pg"],
        check=True,
        capture_output=True,
    )
    on_progress("initdb")
    done = subprocess.run(
        [
            "chroot",
            str(rootfs),
            "setpriv",
            f"--reuid={PG_USER}",
            f"--regid={PG_USER}",
            "--init-groups",
            f"{PG_BIN}/initdb",
            "-D",
            DATA_DIR,
            "-U",
            PG_USER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-5:])
        raise EnvironmentProblem(f"initdb failed (exit {done.returncode}); last output: {tail}")
    (data / "pg_hba.conf").write_text(HBA)
    shutil.rmtree(rootfs / "var/lib/postgresql" / PG_MAJOR, ignore_errors=True)


def _prepare(rootfs: Path, work: Path, on_progress: Callable[[str], None]) -> None:
    """The database cluster, then the power-loss layer (compiled in a throwaway build root)."""
    _initdb(rootfs, work, on_progress)
    buildroot.build_powerfs(rootfs, work, on_progress)


def postgres_image() -> ImageRecipe:
    return ImageRecipe(
        repo="zkjepsen/postgres",
        packages=PACKAGES,
        entrypoint=ENTRYPOINT_PATH,
        entry_script=ENTRYPOINT,
        version="1",
        hash_parts=lambda: [
            HBA,
            DATA_DIR,
            "initdb --auth=trust --encoding=UTF8 --locale=C",
            *powerfs.hash_parts(),
        ],
        prepare=_prepare,
        files=lambda rootfs: powerfs.files(),
    )
