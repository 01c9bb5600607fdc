"""The `memcached` backend: one memcached 1.6 server from Debian bookworm (`memcached`), built
into `zkjepsen/memcached:<content hash>` with no registry (docker/image.py). A `ServerCluster`
(docker/servers.py): the network, labels, teardown, node faults and client endpoints are the
shared ones, so pause, kill, partition and every client fault work unchanged. Its clients run
zkjepsen's client image (python3, pymemcache mounted from the host like kazoo).

memcached keeps its items in memory only: a killed server comes back empty (every lock gone),
and there is nothing on disk for a disk fault to hit (service.py declares no data files). Its
expiry clock is its own (a relative TTL counted from the server's start), not under
libfaketime or zkj-timewarp here, so no server clock faults either. The server logs to stdout
(`nodes/n1/stdout.log`, `-v`: errors and warnings).
"""

from __future__ import annotations

from typing import Any

from zkjepsen.backends.memcached.session import MemcachedSession, client_for
from zkjepsen.docker.cluster import Node
from zkjepsen.docker.image import ImageRecipe
from zkjepsen.docker.servers import OneServerCluster

MEMCACHED_PORT = 11211
MEMORY_MB = 64

ENTRYPOINT = r"""#!/bin/sh
# memcached-node: one memcached server; PID 1's only child (exec), so SIGSTOP/SIGKILL reach it.
set -e
exec memcached -u root -l 0.0.0.0 -p 11211 "$@"
"""


def memcached_image() -> ImageRecipe:
    return ImageRecipe(
        repo="zkjepsen/memcached",
        packages=(
            "memcached",
            "iptables",  # the nemesis drops packets inside a server's own network namespace
            "iproute2",
            "procps",
        ),
        entrypoint="/usr/local/bin/memcached-node",
        entry_script=ENTRYPOINT,
    )


def server_args(memory_mb: int = MEMORY_MB) -> list[str]:
    """memcached's own flags: its memory (far more than the run's few keys need, so nothing is
    evicted), connections, and `-v` (errors and warnings to stdout)."""
    return ["-m", str(memory_mb), "-c", "1024", "-v"]


class MemcachedBackend(OneServerCluster):
    port = MEMCACHED_PORT
    faketime = False
    no_faketime = "memcached's expiry clock is not under libfaketime or zkj-timewarp here"

    role_word = "server"

    def args(self) -> list[str]:
        return server_args()

    def _ask(self, node: Node, what: str) -> Any:
        client = client_for(node.ip, node.port, timeout=0.5)
        try:
            return client.version() if what == "version" else client.stats()
        finally:
            client.close()

    def ready(self) -> bool:
        return bool(self._ask(self.nodes[0], "version"))

    def leader(self) -> Node | None:
        """Its one server whether it answers or not, as Redis's one master: what kill-leader
        and partition-leader hit."""
        return self.nodes[0] if self.nodes else None

    def server_version(self, node: Node) -> str | None:
        try:
            v = self._ask(node, "version")
        except Exception:  # noqa: BLE001 - not serving
            return None
        return v.decode() if isinstance(v, bytes) else str(v)

    def host_session(self, timeout_s: float):
        return MemcachedSession(self.connect_string(), timeout=timeout_s)


memcached_backend = MemcachedBackend.for_spec  # BackendInfo.target
