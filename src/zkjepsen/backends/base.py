"""The `Backend` protocol: exactly what the nemesis and the client pool ask of a running cluster.

Each service implements it as a sibling package: `ZooKeeperEnsemble` (backends/zookeeper/), the
Redis and PostgreSQL clusters (backends/redis/, backends/postgres/, on `docker.servers`); all of
them are `docker.cluster.ContainerCluster`s, and none derives from another service's class. A
remote backend implements the same, and every fault and client works unchanged. Nodes are named
`n1`, `n2`, ...; fault code addresses them by `Node` (docker/cluster.py), never by container.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from zkjepsen.docker.cluster import ClientEndpoint, Node
from zkjepsen.faultkinds.abilities import DATA_FILES, RECONFIGURE, RESTART_SERVERS, UPGRADE


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
    def halt(self, node: Node) -> None:
        """SIGSTOP to the server process only (a power loss's first instant)."""

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


# ---- abilities a backend has beyond `Backend`, as Jepsen asks a db `satisfies?` ---------------
# Each is what a fault needing the ability (faultkinds/abilities.py) calls. A backend declares
# the ability in its `BackendInfo.abilities` exactly when its class satisfies the protocol
# (tests/unit/test_applicability.py checks both ways); whether a fault may run is decided once,
# before anything starts, by faultkinds' one predicate over the declarations (run/resolve.py
# `refusals`), never by probing the backend at fault time. Methods and class attributes only,
# so that a backend's class, not only a running instance, can be checked.


@runtime_checkable
class Reconfigurable(Protocol):
    """RECONFIGURE: its membership changes while it runs (ZooKeeper 3.5+ `reconfig`, etcd)."""

    def membership(self) -> dict[str, Any]: ...
    def remove_member(self, node: Node) -> None: ...
    def add_member(self) -> Node: ...


@runtime_checkable
class RestartsServers(Protocol):
    """RESTART_SERVERS: one server at a time, a new container on its own data."""

    def server_version(self, node: Node) -> str | None: ...
    def restart_server(self, node: Node, image: str | None, step: int) -> None: ...


@runtime_checkable
class Upgradable(Protocol):
    """UPGRADE: the next version's image, for a roll (its settings say when there is none)."""

    def upgrade_image(self) -> str: ...


@runtime_checkable
class NamesDataFiles(Protocol):
    """DATA_FILES: the globs of its servers' data files under their data directory, and those
    corrupt-file chooses among (narrower where that matters: etcd's WAL, not its snapshots)."""

    data_files: tuple[str, ...]
    corrupt_files: tuple[str, ...]


@runtime_checkable
class ListsChildren(Protocol):
    """A host session whose nodes can be listed (kazoo's client): what a trigger waiting in a
    lock's queue watches (nemesis/arming.py `queue_watch`)."""

    def get_children(self, path: str) -> list[str]: ...


ABILITY_PROTOCOLS: dict[str, type] = {
    RECONFIGURE: Reconfigurable,
    RESTART_SERVERS: RestartsServers,
    UPGRADE: Upgradable,
    DATA_FILES: NamesDataFiles,
}
