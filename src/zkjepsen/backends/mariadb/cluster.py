"""The `mariadb` backend: one real MariaDB 10.11 server (n1, the primary) in Docker.

A `ServerCluster` (docker/servers.py): the network, labels, teardown, node faults and client
endpoints are the shared ones, so pause, kill, partition and every client fault work unchanged.
Clients run zkjepsen's client image with PyMySQL, on the same network.

How the server notices a dead client decides how long a `GET_LOCK` outlives its holder: the
lock is held until the server ends the holder's connection, and an idle connection is ended
only when it is known dead (`wait_timeout`, 8 hours by default, or a TCP error). With Linux's
defaults a silent peer is first probed after 2 hours. The server is therefore started with TCP
keepalives (idle 2 s, every 1 s, 3 probes: `tcp_keepalive_*`, MariaDB ≥ 10.3.3), so it drops a
cut-off client within about 5 s of its last packet, as the postgres backend does. Aborted
connections are logged (`log_warnings=2`, MariaDB's default) in `nodes/n1/stdout.log`.

Durability (`--fsync`, service.py): `innodb_flush_log_at_trx_commit` 1 (strict) or 2
(relaxed). InnoDB flushes with fsync (`innodb_flush_method=fsync`, not O_DIRECT) and without
native AIO, so a run with disk faults can boot the server through the power-loss layer over its
data directory (docker/powerfs.py, a FUSE layer); its redo log (`ib_logfile0`) is its declared
data.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.backends.mariadb import probe
from zkjepsen.backends.mariadb.image import DATA_DIR, SOCKET
from zkjepsen.backends.mariadb.schema import DATABASE, PORT
from zkjepsen.backends.mariadb.service import MariaDBSettings
from zkjepsen.backends.mariadb.session import MariaDBSession
from zkjepsen.docker.cluster import Node
from zkjepsen.docker.servers import OneServerCluster
from zkjepsen.errors import EnvironmentProblem
from zkjepsen.spec import TestSpec

SERVER_ARGS = (
    f"--port={PORT}",
    "--bind-address=0.0.0.0",
    "--skip-name-resolve",  # no DNS on the run's network: a lookup per connection would stall
    "--max-connections=200",
    "--innodb-buffer-pool-size=32M",
    "--innodb-flush-method=fsync",  # through the page cache: what the power-loss layer holds
    "--innodb-use-native-aio=0",
    "--tcp-keepalive-time=2",
    "--tcp-keepalive-interval=1",
    "--tcp-keepalive-probes=3",
    "--log-warnings=2",
    "--character-set-server=utf8mb4",
)


class MariaDBBackend(OneServerCluster):
    port = PORT
    # GET_LOCK reads no server clock (nothing expires by time on the server), so clock faults
    # there would test nothing; libfaketime is not preloaded into MariaDB.
    faketime = False
    no_faketime = "MariaDB's GET_LOCK reads no server clock; libfaketime is not preloaded"
    data_dir = DATA_DIR  # in the container (initialised in the image): the power-loss layer's
    data_files = ("ib_logfile0",)  # the redo log: what a commit's durability rests on
    corrupt_files = data_files  # corrupt-file's choice

    def __init__(self, *args: Any, service: MariaDBSettings | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.service = (service or MariaDBSettings()).settled()

    @classmethod
    def for_spec(cls, spec: TestSpec, store_dir: Any, **kw: Any):
        """As every server cluster's, with the run's durability preset (`--fsync`)."""
        out = super().for_spec(spec, store_dir, **kw)
        if isinstance(spec.service, MariaDBSettings):
            out.service = spec.service.settled()
        return out

    def args(self) -> list[str]:
        return [*SERVER_ARGS, *self.service.server_args()]

    def ready(self) -> bool:
        n = self.nodes[0]
        return probe.ready(n.ip, n.port, timeout=0.5)

    def start(self) -> None:
        super().start()
        (self.store_dir / "nodes" / "n1" / "mariadbd.args").write_text(" ".join(self.args()) + "\n")

    def sql(self, sql: str, node: Node | None = None) -> str:
        """Run SQL with the image's `mariadb` client inside the server container, as root over
        the Unix socket; returns its tab-separated output, raises on an SQL error."""
        code, out = self.exec(
            node or self.nodes[0],
            ["mariadb", "--no-defaults", "-uroot", "-S", SOCKET, "-N", "-B", DATABASE, "-e", sql],
        )
        if code != 0:
            raise EnvironmentProblem(f"mariadb failed on the server: {out.strip()[-300:]}")
        return out

    def server_version(self, node: Node) -> str | None:
        return probe.server_version(node.ip, node.port)

    # ---- Backend ----------------------------------------------------------------------------
    def host_session(self, timeout_s: float):
        return MariaDBSession(self.connect_string(), timeout=timeout_s)


mariadb_backend = MariaDBBackend.for_spec  # BackendInfo.target
