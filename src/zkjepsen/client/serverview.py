"""What `client check` reads on the service itself to verify a program's answers
(client/conformance.py): the protected resource, the token, the lock node after a release.

`ZooKeeperView` reads ZooKeeper through its own kazoo session (the token is the czxid of the
program's node, which must exist while held and be gone after release). `ServiceView` reads
etcd, Redis or PostgreSQL through the backend's host session (backends/session.py): the
resource is where the service sessions keep it, and the token follows the services'
convention (`node` is `<lock_path>/<token, 10 digits>`); how a program keeps its lock there is
its own business, so nothing is said about the lock key after a release.
"""

from __future__ import annotations

from typing import Any, Protocol

from kazoo.client import KazooClient

from zkjepsen.backends.session import close_quietly, lock_node


class ServerView(Protocol):
    service: str  # "ZooKeeper", "etcd", ...: named in the check's sentences
    params: dict[str, Any]  # added to the program's init params

    def create_resource(self, path: str, data: bytes) -> None: ...
    def resource(self, path: str) -> tuple[bytes | None, int]:
        """The resource's data and version, as of now (caught up with the leader)."""

    def token_problem(self, lock_path: str, node: str, token: int) -> str | None:
        """One sentence when the (node, token) an acquire answered is not what the service
        shows; None when it is."""

    def node_left(self, node: str) -> bool | None:
        """Is `node` gone (after a release)? None: the service cannot tell."""

    def close(self, base: str) -> None:
        """Remove what the check made under `base`, end the session (best effort)."""


class ZooKeeperView:
    service = "ZooKeeper"
    params: dict[str, Any] = {}

    def __init__(self, hosts: str, session_timeout_s: float = 4.0) -> None:
        self.hosts, self.session_timeout_s = hosts, session_timeout_s
        self.zk: Any = None

    def _synced(self, path: str) -> Any:
        """The view's own session, caught up with the leader. Its server may be a follower
        other than the program's, and a follower answers reads from what it has applied so
        far: without the sync, a write the program was answered ok for can still be missing
        there (seen once in CI: "the resource holds b'{}', not b'A1'")."""
        if self.zk is None:
            self.zk = KazooClient(hosts=self.hosts, timeout=self.session_timeout_s)
            self.zk.start(timeout=15)
        self.zk.sync(path.rsplit("/", 1)[0] or "/")
        return self.zk

    def create_resource(self, path: str, data: bytes) -> None:
        self._synced("/").create(path, data, makepath=True)

    def resource(self, path: str) -> tuple[bytes | None, int]:
        data, stat = self._synced(path).get(path)
        return data, stat.version

    def token_problem(self, lock_path: str, node: str, token: int) -> str | None:
        stat = self._synced(lock_path).exists(node)
        if stat is None:
            return f"acquire returned node {node}, which does not exist"
        if stat.czxid != token:
            return (
                f"acquire returned a token ({token}) that is not the czxid of its node "
                f"({stat.czxid})"
            )
        return None

    def node_left(self, node: str) -> bool | None:
        return self._synced(node).exists(node) is None

    def close(self, base: str) -> None:
        if self.zk is None:
            return
        try:
            self.zk.delete(base, recursive=True)
            self.zk.stop()
            self.zk.close()
        except Exception:  # noqa: BLE001 - best effort on the way out
            pass


class ServiceView:
    """`session`: a backend's host session (not started), e.g. `backend.host_session(4.0)`.
    The lock's TTL is long (`lock_ttl_s`, 30 s): a session timeout's 4 s could run out while
    instance B's container starts on a loaded machine, and B would then rightly get the lock
    A still believes it holds (seen on Redis: B's init took 19 s)."""

    params: dict[str, Any] = {"lock_ttl_s": 30.0}

    def __init__(self, service: str, session: Any) -> None:
        self.service, self.session = service, session
        self.started = False

    def _s(self) -> Any:
        if not self.started:
            self.session.start(timeout=15)
            self.started = True
        return self.session

    def create_resource(self, path: str, data: bytes) -> None:
        self._s().create(path, data)

    def resource(self, path: str) -> tuple[bytes | None, int]:
        data, stat = self._s().get(path)
        return data, stat.version

    def token_problem(self, lock_path: str, node: str, token: int) -> str | None:

        want = lock_node(lock_path, token)
        if node != want:
            return (
                f"acquire returned node {node}; on {self.service} it is the lock path and the "
                f"token in 10 digits ({want})"
            )
        return None

    def node_left(self, node: str) -> bool | None:
        return None

    def close(self, base: str) -> None:

        close_quietly(self.session)
