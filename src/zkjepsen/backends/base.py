"""The `Backend` protocol: exactly what the nemesis and the client pool ask of a running cluster.

Each service implements it as a sibling package: `ZooKeeperEnsemble` (backends/zookeeper/), the
Redis and PostgreSQL clusters (backends/redis/, backends/postgres/, on `docker.servers`); all of
them are `docker.cluster.ContainerCluster`s, and none derives from another service's class. A
remote backend implements the same, and every fault and client works unchanged. Nodes are named
`n1`, `n2`, ...; fault code addresses them by `Node` (docker/cluster.py), never by container.
"""

from __future__ import annotations

from typing import Protocol

from zkjepsen.docker.cluster import ClientEndpoint, Node


class HostSession(Protocol):
    """The runner's own session with the backend (client 0): what the lock-shaped workloads'
    `setup` and `final` call on `ctx.session`: kazoo's KazooClient for ZooKeeper; others give
    an object with these methods over their own store (the protected resource lives there;
    `get` returns (data bytes, a stat whose `version` counts the writes); `create` raises
    kazoo's NodeExistsError when the path exists; `ensure_path` and `sync` may do nothing)."""

    def start(self, timeout: float = 15) -> None: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...
    def ensure_path(self, path: str) -> None: ...
    def create(self, path: str, value: bytes = b"") -> str: ...
    def get(self, path: str) -> tuple[bytes, object]: ...
    def sync(self, path: str) -> None: ...


class Backend(Protocol):
    """The servers of one lock service, as the nemesis, the client pool and the runner use them.
    A `Node`'s `id` is the server's index (1, 2, ...), whatever the service makes of it."""

    run_id: str  # names the run's resources (labels, the iptables chain)
    nodes: list[Node]

    def connect_string(self, nodes: list[Node] | None = None) -> str: ...
    def leader(self) -> Node | None: ...

    # Faults on one node. `state` says what a heal must do: "running", "paused", "exited", ...
    def kill(self, node: Node) -> None: ...
    def restart(self, node: Node) -> None: ...
    def pause(self, node: Node) -> None: ...
    def resume(self, node: Node) -> None: ...
    def state(self, node: Node) -> str | None: ...
    def exec(self, node: Node, argv: list[str]) -> tuple[int, str]: ...
    def set_clock(self, node: Node, spec: str) -> None:
        """A libfaketime spec (`+5`, `+0 x4`, `+0`) for the node's server process."""

    def logs(self, node: Node) -> str: ...
    def power(self, node: Node, what: str, age_s: float = 0.0) -> dict[str, int]:
        """Ask the node's power-loss layer (docker/powerfs.py): stat, sync, drop or torn."""

    def client_endpoint(self, index: int) -> ClientEndpoint: ...
    def start(self) -> None:
        """Create the servers and return once they serve (raise EnvironmentProblem if not)."""

    def stop(self) -> None:
        """Remove everything the backend started, keep its logs in the store (idempotent)."""

    def host_session(self, timeout_s: float) -> HostSession:
        """A new, not yet started, session for the runner itself (setup and final reads)."""

    def down(self) -> None:
        """Remove everything the backend started (idempotent)."""
