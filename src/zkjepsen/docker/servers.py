"""`ServerCluster`: the `Backend` of a lock service that is not ZooKeeper (Redis, PostgreSQL),
as plain server containers on the run's own network.

It is DockerEnsemble (backends/zookeeper/ensemble.py) with the ZooKeeper parts replaced: the
network, the labels and teardown (nothing outlives the run), the node faults the nemesis uses (kill,
restart, pause, resume, state, exec, libfaketime control files for `set_clock`) and the clients'
places on the network are inherited unchanged, so every fault and the client pool work as they do
for ZooKeeper. A subclass says what to run (`plan()`: one `Container` per server, plus helpers such
as Sentinels that are not fault targets), when the service is ready (`ready()`), who leads
(`leader()`), and how the runner talks to it (`host_session()`).

Files: each container gets its own config directory read-only at /srv/conf, a data directory
at /srv/data and its libfaketime control file at /srv/faketime/timestamp (preloaded, as for
ZooKeeper: clock faults on servers work the same way). Its stdout goes to the store as
`nodes/<name>/stdout.log` at teardown.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkjepsen.backends.base import ClientEndpoint, Node
from zkjepsen.backends.zookeeper.ensemble import SERVER_IP_OFFSET, DockerEnsemble, EnsembleSpec
from zkjepsen.docker import mounts, netns, resources
from zkjepsen.errors import EnvironmentProblem

HELPER_IP_OFFSET = 30  # helpers (Sentinels, ...): .31 and up; servers .11 and up
SERVER_MEMORY = "256m"


@dataclass
class Container:
    """One container of the backend: a server (a fault target, in `nodes`) or a helper."""

    node: Node
    command: list[str]  # arguments to the image's entrypoint
    files: dict[str, str] = field(default_factory=dict)  # /srv/conf/<name> -> text
    role: str = "server"  # "server": in `nodes`; anything else: a helper (not a target)
    env: dict[str, str] = field(default_factory=dict)


class ServerCluster(DockerEnsemble):
    port = 0  # the servers' port
    faketime = True  # libfaketime preloaded in the servers (clock faults on them)
    no_faketime = ""  # why not, when faketime is False

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
        super().__init__(
            EnsembleSpec(nodes=nodes, image=server_image),
            store_dir,
            run_id=run_id,
            client=client,
            engine=engine,
        )
        self.info = backend  # harness.backends.BackendInfo
        self.client_image = client_image
        self.params = dict(params or {})
        self.helpers: list[Node] = []  # containers that no fault targets (e.g. Sentinels)

    # ---- what a subclass says ---------------------------------------------------------------
    def plan(self) -> list[Container]:
        raise NotImplementedError

    def ready(self) -> bool:
        """Does the service serve as it should (every server, every helper)? Polled."""
        raise NotImplementedError

    # ---- lifecycle --------------------------------------------------------------------------
    def address_of(self, index: int, helper: bool = False) -> str:
        offset = HELPER_IP_OFFSET if helper else SERVER_IP_OFFSET
        return str(self.subnet.network_address + offset + index)

    def start(self) -> None:
        resources.claim_scratch(self.run_id, self.engine)
        # The probe (~3 API calls) runs while the network is made: it adds no wall time.
        probe = self._pool.submit(
            mounts.Files.for_engine, self.client, self.image, self.run_id, self.scratch
        )
        self._create_network()
        self.files = probe.result()
        self.nodes = [
            Node(f"n{i}", i, self.address_of(i), self.port) for i in range(1, self.spec.nodes + 1)
        ]
        plan = self.plan()
        self.helpers = [c.node for c in plan if c.role != "server"]
        for c in plan:
            conf = self.scratch / "nodes" / c.node.name / "conf"
            for d in (
                conf,
                self.scratch / "nodes" / c.node.name / "data",
                self.faketime_dir(c.node),
            ):
                d.mkdir(parents=True, exist_ok=True)
            for name, text in c.files.items():
                (conf / name).write_text(text)
            self.faketime_file(c.node).write_text("+0 x1\n")
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
            for node in [*self.nodes, *self.helpers]:
                c = self._container(node)
                if c is not None:
                    c.reload()
                    if c.status == "exited":
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
    def client_endpoint(self, index: int) -> ClientEndpoint:
        """Clients run zkjepsen's client image (python3, the client libraries, libfaketime)."""
        base = super().client_endpoint(index)
        return ClientEndpoint(base.network, base.ip, self.client_image)

    def logs(self, node: Node) -> str:
        return self._docker_logs(node)

    def status(self) -> list[dict]:
        def one(node: Node) -> dict:
            c = self._container(node)
            return {
                "node": node.name,
                "ip": node.ip,
                "container": c.status if c else "missing",
                "mode": self.role_of(node),
                "zxid": None,
                "connections": None,
            }

        return [one(n) for n in [*self.nodes, *self.helpers]]

    def role_of(self, node: Node) -> str:
        return "server"

    # ---- helpers ------------------------------------------------------------------------------
    def set_clock(self, node: Node, spec: str) -> None:
        if not self.faketime:
            raise EnvironmentProblem(
                f"clock faults on {self.info.name} servers are not available: {self.no_faketime}"
            )
        super().set_clock(node, spec)

    def _env(self) -> dict[str, str]:
        if not self.faketime:
            return {}
        return {
            "LD_PRELOAD": f"/usr/lib/{platform.machine()}-linux-gnu/faketime/libfaketime.so.1",
            "FAKETIME_TIMESTAMP_FILE": "/srv/faketime/timestamp",
            "FAKETIME_CACHE_DURATION": "1",
            "FAKETIME_XRESET": "1",
        }

    def _create(self, c: Container) -> None:
        api = self.client.api
        base = self.scratch / "nodes" / c.node.name
        binds = {
            str(base / "conf"): {"bind": "/srv/conf", "mode": "ro"},
            str(base / "data"): {"bind": "/srv/data", "mode": "rw"},
            str(self.faketime_dir(c.node)): {"bind": "/srv/faketime", "mode": "ro"},
        }
        host_config = api.create_host_config(
            binds=self.files.binds(binds),
            cap_add=["NET_ADMIN", "NET_RAW"],  # partitions exec iptables in the servers
            init=False,
            **netns.limits(SERVER_MEMORY, netns.SERVER_PIDS),
        )
        net = api.create_networking_config(
            {self.network_name: api.create_endpoint_config(ipv4_address=c.node.ip)}
        )
        try:
            cid = api.create_container(
                self.image,
                command=c.command,
                name=f"{self.run_id}-{c.node.name}",
                hostname=c.node.name,
                labels=resources.labels(
                    self.run_id,
                    c.role,
                    node=c.node.name,
                    myid=c.node.id,
                    ip=c.node.ip,
                    backend=self.info.name,
                ),
                environment={**self._env(), **c.env},
                host_config=host_config,
                networking_config=net,
            )["Id"]
        except Exception as e:
            if "No such image" in str(e):
                raise EnvironmentProblem(
                    f"image {self.image} is not built; run `zkjepsen image build "
                    f"--backend {self.info.name}`"
                ) from None
            raise
        self.files.attach(cid, binds)
        api.start(cid)
        self._containers[c.node.name] = self.client.containers.get(cid)
