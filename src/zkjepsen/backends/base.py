"""The `Backend` protocol: exactly what the nemesis and the client pool ask of a running cluster.

`DockerEnsemble` (backends/zookeeper/ensemble.py) is the one implementation today; a Redis or
PostgreSQL backend, or a remote one, implements the same and every fault and client works unchanged.
Nodes are named `n1`, `n2`, ...; fault code addresses them by `Node`, never by container.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from zkjepsen.backends.zookeeper.config import CLIENT_PORT


@dataclass(frozen=True)
class Node:
    name: str  # n1, n2, ...
    id: int  # ZooKeeper's myid
    ip: str
    port: int = CLIENT_PORT

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"


@dataclass(frozen=True)
class ClientEndpoint:
    """Where client N's container joins the backend: the Docker network, its fixed address
    there, and the image it runs in (one that has python3 and iptables)."""

    network: str
    ip: str
    image: str


class HostSession(Protocol):
    """The runner's own session with the backend (client 0): what the lock-shaped workloads'
    `setup` and `final` call on `ctx.zk`. kazoo's KazooClient for ZooKeeper; other backends give
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
    def client_endpoint(self, index: int) -> ClientEndpoint: ...
    def start(self) -> None:
        """Create the servers and return once they serve (raise EnvironmentProblem if not)."""

    def stop(self) -> None:
        """Remove everything the backend started, keep its logs in the store (idempotent)."""

    def host_session(self, timeout_s: float) -> HostSession:
        """A new, not yet started, session for the runner itself (setup and final reads)."""

    def down(self) -> None:
        """Remove everything the backend started (idempotent)."""
