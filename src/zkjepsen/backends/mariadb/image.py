"""The MariaDB 10.11 server image, built with no container registry as every zkjepsen image is
(docker/image.py: `debootstrap --variant=minbase` of Debian bookworm, then `docker import`).

`mariadb-server` as bookworm ships it (10.11.x), `iptables` for the nemesis's partitions, and
the data directory created at build time in the root filesystem: `mariadb-install-db`, then a
throwaway server (no networking, a socket in /tmp) that creates the clients' user and database
and the test's tables (schema.py) and shuts down, so a container serves in a second or two and
every client finds its tables. The clients' user is `zkjepsen`, password `zkjepsen`, from any
address, with every right on database `zkjepsen` (the server lives on a per-run private network
and holds nothing but the test's own rows); `root` is the operating system's root over the Unix
socket (`docker exec ... mariadb`: setup and faults). The power-loss layer (docker/powerfs.py) is
compiled in too: a run with disk faults boots the server through it, over the data directory.
Clients do not run here: they run zkjepsen's client image with PyMySQL mounted (client/pool.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from zkjepsen.backends import buildroot
from zkjepsen.backends.mariadb.schema import DATABASE, PASSWORD, SETUP_SQL, USER
from zkjepsen.docker import powerfs
from zkjepsen.docker.image import ImageRecipe, run_in_root

DATA_DIR = "/my/data"  # initialised at build time; each container has its own copy
SOCKET = "/tmp/mariadb.sock"
OS_USER = "mysql"
# Small, so the data directory in the image (and each container's copy-up) stays small; the
# server is started with the same size (cluster.py), or it would rewrite the log at boot.
LOG_FILE_SIZE = "8M"
PACKAGES = (
    "mariadb-server",  # 10.11 on bookworm; brings the `mariadb` client (setup and faults)
    "iptables",  # the nemesis drops packets inside a server's own network namespace
    "iproute2",
    "procps",
    *powerfs.RUNTIME_PACKAGES,  # the power-loss layer (docker/powerfs.py), for disk faults
)
ENTRYPOINT_PATH = "/usr/local/bin/mariadb-node"
ENTRYPOINT = f"""#!/bin/sh
# mariadb-node: run the MariaDB server as the mysql user, PID 1's only process, so docker's
# SIGSTOP/SIGKILL reach it. Settings come as --name=value arguments (the container command);
# no option file is read (--no-defaults): the command is the whole configuration.
set -e
exec setpriv --reuid={OS_USER} --regid={OS_USER} --init-groups /usr/sbin/mariadbd --no-defaults \\
  --datadir={DATA_DIR} --socket={SOCKET} --innodb-log-file-size={LOG_FILE_SIZE} "$@"
"""
# The data directory, then the clients' user, database and tables through a throwaway server.
INIT_SCRIPT = f"""set -e
mkdir -p {DATA_DIR}
chown -R {OS_USER}:{OS_USER} /my
mariadb-install-db --no-defaults --user={OS_USER} --datadir={DATA_DIR} \\
  --auth-root-authentication-method=socket --skip-test-db --skip-name-resolve \\
  --innodb-log-file-size={LOG_FILE_SIZE} >/tmp/install-db.log 2>&1 || {{
  tail -20 /tmp/install-db.log; exit 1; }}
mariadbd --no-defaults --user={OS_USER} --datadir={DATA_DIR} --socket=/tmp/build.sock \\
  --skip-networking --innodb-log-file-size={LOG_FILE_SIZE} >/tmp/build-server.log 2>&1 &
i=0
until mariadb-admin --no-defaults -uroot -S /tmp/build.sock ping >/dev/null 2>&1; do
  i=$((i+1)); [ $i -lt 600 ] || {{ tail -20 /tmp/build-server.log; exit 1; }}; sleep 0.2
done
mariadb --no-defaults -uroot -S /tmp/build.sock <<'SQL'
CREATE DATABASE {DATABASE};
CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}';
GRANT ALL PRIVILEGES ON {DATABASE}.* TO '{USER}'@'%';
USE {DATABASE};
{SETUP_SQL}
SQL
mariadb-admin --no-defaults -uroot -S /tmp/build.sock shutdown
wait
rm -rf /var/lib/mysql/* /tmp/install-db.log /tmp/build-server.log
"""


def _prepare(rootfs: Path, work: Path, on_progress: Callable[[str], None]) -> None:
    """The data directory (user, database, tables), then the power-loss layer (compiled in a
    throwaway build root)."""
    on_progress("mariadb-install-db and the clients' user, database and tables")
    run_in_root(rootfs, INIT_SCRIPT, "initialising the MariaDB data directory", on_progress)
    buildroot.build_powerfs(rootfs, work, on_progress)


def mariadb_image() -> ImageRecipe:
    return ImageRecipe(
        repo="zkjepsen/mariadb",
        packages=PACKAGES,
        entrypoint=ENTRYPOINT_PATH,
        entry_script=ENTRYPOINT,
        version="1",
        hash_parts=lambda: [INIT_SCRIPT, *powerfs.hash_parts()],
        prepare=_prepare,
        files=lambda rootfs: powerfs.files(),
    )
