"""`ServerCluster`: plain server containers on the run's own network, the base of the lock
services other than ZooKeeper (backends/redis/, backends/postgres/).

It is a `ContainerCluster` (cluster.py: the network, the labels and teardown, the node faults the
nemesis uses, the clients' places on the network), so every fault and the client pool work as
they do for any backend. A subclass says what to run (`plan()`: one `Container` per server, plus
helpers such as Sentinels that are not fault targets), when the service is ready (`ready()`), who
leads (`leader()`), and how the runner talks to it (`host_session()`).

Files: each container gets its own config directory read-only at /srv/conf, a data directory
at /srv/data and its clock control file in /srv/faketime: libfaketime's `timestamp`
(preloaded, as for ZooKeeper), or, for a service libfaketime cannot reach (etcd, Redis),
`timewarp`, which the image's entrypoint hands to zkj-timewarp (docker/timewarp.py): clock
faults on servers work the same way, through `set_clock`. Its stdout goes to the store as
`nodes/<name>/stdout.log` at teardown.

zkj-timewarp costs every clock read a syscall (a µs where the vDSO takes tens of ns) and every
fork and exec a stop, so a server runs under it only when the run plans a server clock fault
(`server_clock`, set by run/resolve.py): the entrypoint runs it only if `timewarp` is there.
Then its observation page (what the server's processes read from their clocks) is
`clock_page(node)` on the host, /srv/faketime-seen/page in the container (a writable mount:
/srv/faketime is read-only).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkjepsen.docker import resources, timewarp
from zkjepsen.docker.cluster import ContainerCluster, Node, faketime_env
from zkjepsen.errors import EnvironmentProblem
from zkjepsen.spec import TestSpec

HELPER_IP_OFFSET = 30  # helpers (Sentinels, ...): .31 and up; servers .11 and up
SERVER_MEMORY = "256m"
SEEN_PAGE = "page"  # the entrypoints' ZKJ_TIMEWARP_OBSERVE=/srv/faketime-seen/page


@dataclass
class Container:
    """One container of the backend: a server (a fault target, in `nodes`) or a helper."""

    node: Node
    command: list[str]  # arguments to the image's entrypoint
    files: dict[str, str] = field(default_factory=dict)  # /srv/conf/<name> -> text
    role: str = "server"  # "server": in `nodes`; anything else: a helper (not a target)
    env: dict[str, str] = field(default_factory=dict)


class ServerCluster(ContainerCluster):
    port = 0  # the servers' port
    data_dir = "/srv/data"
    faketime = True  # libfaketime preloaded in the servers (clock faults on them)
    no_faketime = ""  # why not, when faketime is False
    timewarp = False  # the servers run under zkj-timewarp instead (docker/timewarp.py)
    server_clock = False  # a server clock fault is planned (run/resolve.py): start them under it

    def __init__(
        self,
        nodes: int,
        store_dir: Path,
        *,
        backend: Any,
        server_image: str,
        client_image: str,
        params: dict[str, Any] | None = None,
        client=None,
        engine: str = resources.DEFAULT_ENGINE,
        run_id: str | None = None,
    ) -> None:
        super().__init__(store_dir, run_id=run_id, client=client, engine=engine)
        self.size = nodes
        self.info = backend  # backends.registry.BackendInfo
        self.server_image = server_image
        self._client_image = client_image
        self.params = dict(params or {})
        self.helpers: list[Node] = []  # containers that no fault targets (e.g. Sentinels)

    @classmethod
    def for_spec(
        cls,
        spec: TestSpec,
        store_dir: Path,
        *,
        backend,
        client,
        engine,
        server_image,
        client_image,
    ):
        """The factory a backend registers (`BackendInfo.target`, called by `make_backend`):
        the backend's fixed number of servers if it has one, else the spec's `nodes`."""
        return cls(
            backend.nodes or spec.nodes,
            store_dir,
            backend=backend,
            server_image=server_image,
            client_image=client_image,
            params=spec.params,
            client=client,
            engine=engine,
        )

    def adopt(self, run_id: str, containers: list) -> None:
        """Take over a running cluster (`cluster status|down`) from its containers' labels:
        the servers become `nodes`, the rest `helpers`, as start() had made them."""
        self.run_id = self.network_name = run_id
        self.nodes, self.helpers = [], []
        for c in sorted(containers, key=lambda c: int(c.labels.get("zkjepsen.myid", 0))):
            labels = c.labels
            ip, index = labels["zkjepsen.ip"], int(labels["zkjepsen.myid"])
            node = Node(labels["zkjepsen.node"], index, ip, self.port)
            server = labels.get(resources.ROLE_LABEL) == "server"
            (self.nodes if server else self.helpers).append(node)
            self._containers[node.name] = c

    # ---- what a subclass says ---------------------------------------------------------------
    def plan(self) -> list[Container]:
        raise NotImplementedError

    def ready(self) -> bool:
        """Does the service serve as it should (every server, every helper)? Polled."""
        raise NotImplementedError

    @property
    def image(self) -> str:
        return self.server_image

    @property
    def client_image(self) -> str:
        """Clients run zkjepsen's client image (python3, the client libraries, libfaketime)."""
        return self._client_image

    # ---- lifecycle --------------------------------------------------------------------------
    def address_of(self, index: int, helper: bool = False) -> str:
        return self.server_ip(index, HELPER_IP_OFFSET) if helper else self.server_ip(index)

    def start(self) -> None:
        self._open()
        self.nodes = [
            Node(f"n{i}", i, self.address_of(i), self.port) for i in range(1, self.size + 1)
        ]
        plan = self.plan()
        self.helpers = [c.node for c in plan if c.role != "server"]
        for c in plan:
            conf = self.scratch / "nodes" / c.node.name / "conf"
            for d in (
                conf,
                self.scratch / "nodes" / c.node.name / "data",
            ):
                d.mkdir(parents=True, exist_ok=True)
            for name, text in c.files.items():
                (conf / name).write_text(text)
            self.clock_files(c.node, c.role == "server")
            (self.store_dir / "nodes" / c.node.name).mkdir(parents=True, exist_ok=True)
        list(self._pool.map(self._create, plan))
        self.wait_ready(self.info.ready_timeout_s)

    def stop(self) -> None:
        for node in self.helpers:
            self._save_stdout(node)
        super().stop()

    def wait_ready(self, timeout_s: float) -> float:
        """Block until `ready()`; returns the seconds waited. A container that exits, or a
        service not ready in time, is an EnvironmentProblem naming it with its log's end."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            try:
                if self.ready():
                    return time.monotonic() - t0
            except Exception:  # noqa: BLE001 - not up yet: connection refused and the like
                pass
            node = self._exited([*self.nodes, *self.helpers])
            if node is not None:
                raise EnvironmentProblem(
                    f"{self.info.name} {node.name} exited during start-up; its log "
                    "ends: " + self._tail(node)
                )
            time.sleep(0.1)
        raise EnvironmentProblem(
            f"the {self.info.name} servers were not ready within {timeout_s:.0f} s; "
            f"{self.nodes[0].name}'s log ends: " + self._tail(self.nodes[0])
        )

    # ---- Backend ------------------------------------------------------------------------------
    def status(self) -> list[dict]:
        def one(node: Node) -> dict:
            c = self._container(node)
            return {
                "node": node.name,
                "ip": node.ip,
                "container": c.status if c else "missing",
                "mode": self.role_of(node),
                "position": self.position_of(node),
                "connections": None,
                "version": self.server_version(node),
            }

        return [one(n) for n in [*self.nodes, *self.helpers]]

    def role_of(self, node: Node) -> str:
        return "server"

    def server_version(self, node: Node) -> str | None:
        """The version the node's server says it runs (None: unknown)."""
        return None

    def position_of(self, node: Node) -> str | None:
        """How far the node's replicated log is, in the service's own terms (None: unknown)."""
        return None

    # ---- helpers ------------------------------------------------------------------------------
    def clock_files(self, node: Node, server: bool = True) -> None:
        """The node's clock control files, before its container starts: libfaketime's, and
        for a server zkj-timewarp's and its observation page's directory, only when a server
        clock fault is planned (without them its entrypoint runs it as it is)."""
        self.faketime_dir(node).mkdir(parents=True, exist_ok=True)
        self.faketime_file(node).write_text("+0 x1\n")
        if self.timewarp and self.server_clock and server:
            timewarp.blank(self.timewarp_file(node))
            seen = self.seen_dir(node)
            seen.mkdir(parents=True, exist_ok=True)
            seen.chmod(0o777)  # the server's own uid creates its page there

    def timewarp_file(self, node: Node) -> Path:
        return self.faketime_dir(node) / "timewarp"

    def seen_dir(self, node: Node) -> Path:
        return self.scratch / "faketime-seen" / node.name

    def clock_page(self, node: Node) -> Path | None:
        """The host path of the observation page of the server's processes under
        zkj-timewarp (docker/timewarp.observed reads it); None: it runs without the launcher."""
        if not (self.timewarp and self.timewarp_file(node).exists()):
            return None
        return self.seen_dir(node) / SEEN_PAGE

    def halt(self, node: Node) -> None:
        """A server under zkj-timewarp is the launcher's child: SIGSTOP to the container's PID 1
        (the launcher) would stop the tracer and leave the server acknowledging, so the
        launcher is asked to stop it (SIGPWR, client/drivers/timewarp/launcher.c)."""
        if self.clock_page(node) is None:
            super().halt(node)
        else:
            self._container(node).kill(signal="SIGPWR")

    def set_clock(self, node: Node, spec: str) -> None:
        if self.timewarp:
            path = self.timewarp_file(node)
            if path.exists():  # gone: the run's scratch dir is torn down, nothing to skew
                timewarp.apply(path, spec)
            return
        if not self.faketime:
            raise EnvironmentProblem(
                f"clock faults on {self.info.name} servers are not available: {self.no_faketime}"
            )
        super().set_clock(node, spec)

    def _env(self) -> dict[str, str]:
        if not self.faketime:
            return {}
        return faketime_env("/srv/faketime/timestamp")

    def _create(self, c: Container, image: str | None = None) -> None:
        base = self.scratch / "nodes" / c.node.name
        binds = {
            str(base / "conf"): {"bind": "/srv/conf", "mode": "ro"},
            str(base / "data"): {"bind": "/srv/data", "mode": "rw"},
            str(self.faketime_dir(c.node)): {"bind": "/srv/faketime", "mode": "ro"},
        }
        if self.seen_dir(c.node).is_dir():
            binds[str(self.seen_dir(c.node))] = {"bind": "/srv/faketime-seen", "mode": "rw"}
        self._run_server(
            c.node,
            binds,
            memory=SERVER_MEMORY,
            labels=resources.labels(
                self.run_id,
                c.role,
                node=c.node.name,
                myid=c.node.id,
                ip=c.node.ip,
                backend=self.info.name,
            ),
            env={**self._env(), **c.env},
            missing_image=f"run `zkjepsen image build --backend {self.info.name}`",
            command=c.command,
            image=image,
        )


class OneServerCluster(ServerCluster):
    """A service of exactly one server (PostgreSQL, MariaDB, memcached): its one node is the
    leader while it answers, and what each backend adds is its server's arguments and its
    readiness probe."""

    role_word = "primary"  # what `role_of` calls the server while it answers

    def args(self) -> list[str]:
        """The server's command-line arguments."""
        return []

    def plan(self) -> list[Container]:
        if len(self.nodes) != 1:
            raise EnvironmentProblem(f"the {self.info.name} backend runs exactly one server")
        return [Container(self.nodes[0], self.args())]

    def serving(self) -> bool:
        """Whether the server answers now (down, paused or cut off: no)."""
        try:
            return self.ready()
        except Exception:  # noqa: BLE001 - a probe that raises is a server that did not answer
            return False

    def leader(self) -> Node | None:
        """The server, while it answers."""
        return self.nodes[0] if self.nodes and self.serving() else None

    def role_of(self, node: Node) -> str:
        return self.role_word if self.serving() else "not serving"
