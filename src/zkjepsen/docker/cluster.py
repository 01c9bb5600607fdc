"""`ContainerCluster`: what every service's servers share as Docker containers, knowing no
service. The run's own bridge network (a /24 from `subnets`), labels and teardown (nothing
outlives the run: `resources`), the node faults the nemesis uses (kill, restart, pause, resume,
state, exec, a libfaketime control file per node for `set_clock`) and the clients' places on the
network. A service (backends/<service>/) derives from it, directly (ZooKeeper) or through
`servers.ServerCluster` (Redis, PostgreSQL), and says what its servers run and when they serve.

Addresses on the run's /24: servers at .11 and up (`SERVER_IP_OFFSET` + the server's index),
clients at .101 and up. The host reaches every container by its fixed IP (no published ports,
so no port clashes).
"""

from __future__ import annotations

import ipaddress
import os
import platform
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from zkjepsen.docker import freeze, mounts, netns, powerfs, resources, signals, subnets, supervise
from zkjepsen.errors import BadInput, EnvironmentProblem

SERVER_IP_OFFSET = 10  # n1 = .11, n2 = .12, ...; clients get .101 and up
CLIENT_IP_OFFSET = 100


@dataclass(frozen=True)
class Node:
    """One server of the backend, as the nemesis and the clients address it."""

    name: str  # n1, n2, ...
    id: int  # the server's index (1, 2, ...); ZooKeeper uses it as the server's myid
    ip: str
    port: int  # where clients connect

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


def faketime_env(timestamp_file: str) -> dict[str, str]:
    """The environment that preloads libfaketime, reading its offset from `timestamp_file` (a
    path in the container) at most once a second; the nemesis rewrites that file at run time.
    Monotonic faking stays ON (a JVM's timed waits spin without it)."""
    return {
        "LD_PRELOAD": f"/usr/lib/{platform.machine()}-linux-gnu/faketime/libfaketime.so.1",
        "FAKETIME_TIMESTAMP_FILE": timestamp_file,
        "FAKETIME_CACHE_DURATION": "1",
        "FAKETIME_XRESET": "1",
    }


class ContainerCluster:
    """Server containers on the run's own network. Use as a context manager: leaving it always
    removes everything. A subclass gives `image`, `client_image`, `start` (which begins with
    `_open()` and creates its servers with `_run_server`) and, if it has them, `logs`.
    `data_dir`: where its servers keep their data (in the container), the directory the
    power-loss layer covers when a run sets `power_layer` (docker/powerfs.py)."""

    data_dir = ""
    power_layer = False  # the run asks for disk faults: servers boot under docker/powerfs

    def __init__(
        self,
        store_dir: Path,
        run_id: str | None = None,
        client=None,
        engine: str = resources.DEFAULT_ENGINE,
        engine_local: bool = True,
    ) -> None:
        self.engine = engine  # the engine's name, recorded in the scratch dir for `cleanup`
        self.engine_local = engine_local
        self.run_id = run_id or resources.new_run_id()
        self.store_dir = Path(store_dir)
        self.client = client or resources.docker_client()
        self.network_name = self.run_id
        self.nodes: list[Node] = []
        self.retired: list[Node] = []  # members taken out (membership faults): logs kept
        self.subnet: ipaddress.IPv4Network | None = None
        self._containers: dict[str, object] = {}
        self.files = mounts.Files(self.client)  # bind mounts until start() asks the engine
        self._pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="ensemble")

    # ---- what a subclass says ---------------------------------------------------------------
    @property
    def image(self) -> str:
        """The servers' image."""
        raise NotImplementedError

    @property
    def client_image(self) -> str:
        """The clients' image (python3, the client libraries, libfaketime)."""
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    # ---- lifecycle --------------------------------------------------------------------------
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def scratch(self) -> Path:
        return resources.SCRATCH_ROOT / self.run_id

    def _open(self) -> None:
        """The first steps of every `start`: claim the scratch dir (with its owner file, before
        anything else exists; and the engine, for `cleanup`), then the network; the engine's
        file-sharing probe (~3 API calls) runs meanwhile, so it adds no wall time."""
        resources.claim_scratch(self.run_id, self.engine)
        probe = self._pool.submit(
            mounts.Files.for_engine, self.client, self.image, self.run_id, self.scratch
        )
        self._create_network()
        self.files = probe.result()

    def server_ip(self, index: int, offset: int = SERVER_IP_OFFSET) -> str:
        assert self.subnet is not None, "the cluster's subnet is allocated when it starts"
        return str(self.subnet.network_address + offset + index)

    def stop(self) -> None:
        """Remove every container and the network; keep the logs in the store. Idempotent."""
        with signals.signals_deferred():
            # Interrupted in the middle of start(), workers may still be creating containers:
            # let them finish first, or one created after the removal below would outlive us.
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="ensemble")
            for node in [*self.nodes, *self.retired]:
                self._save_stdout(node)
            self.files.collect()  # an engine that shares no files: fetch them before removal
            resources.remove_run(self.client, self.run_id)
            self._containers.clear()

    def down(self) -> None:
        self.stop()

    def detach(self) -> None:
        """Leave the cluster running after this process exits (`cluster up`)."""
        (self.scratch / resources.DETACHED_MARKER).write_text(str(self.store_dir))

    # ---- Backend ------------------------------------------------------------------------------
    def connect_string(self, nodes: list[Node] | None = None) -> str:
        return ",".join(n.address for n in (nodes or self.nodes))

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise BadInput(f"no node named {name}; nodes are {', '.join(n.name for n in self.nodes)}")

    def exec(self, node: Node, argv: list[str]) -> tuple[int, str]:
        res = self._container(node).exec_run(argv, demux=False)
        return res.exit_code, (res.output or b"").decode(errors="replace")

    def logs(self, node: Node) -> str:
        return self._docker_logs(node)

    def power(self, node: Node, what: str, age_s: float = 0.0) -> dict[str, int]:
        """Ask the node's power-loss layer `what` (stat, sync, drop, torn: docker/powerfs.py);
        its counts ({} when the node runs without the layer)."""
        if not self.power_layer:
            return {}
        # A question that changes nothing (stat, sync) is asked again when the answer is lost:
        # the ctl gives up after 10 s, which a loaded machine can reach (CI run of 2026-11-27,
        # load 5-10). A drop or a tear is never asked twice: the second would drop nothing.
        harmless = what in ("stat", "sync")
        tries = 3 if harmless else 1
        for _ in range(tries):
            code, out = self.exec(node, powerfs.command(what, age_s))
            counts = powerfs.parse(out)
            if counts:
                return counts
        if harmless:
            raise EnvironmentProblem(
                f"the power-loss layer of {node.name} did not answer {what!r} "
                f"(exit {code}: {out.strip()[:200]!r})"
            )
        return {"unanswered": 1}  # the drop or tear's counts are unknown; schedule.json says so

    def client_endpoint(self, index: int) -> ClientEndpoint:
        """Clients share the servers' network, at .101 and up."""
        return ClientEndpoint(
            self.network_name, self.server_ip(index, CLIENT_IP_OFFSET), self.client_image
        )

    # ---- node control (used by the nemesis) -----------------------------------------------
    def kill(self, node: Node) -> None:
        self._container(node).kill(signal="SIGKILL")

    def restart(self, node: Node) -> None:
        self._container(node).start()

    def halt(self, node: Node) -> None:
        """SIGSTOP to the server process (the container's PID 1) only: a power loss's first
        instant (it acknowledges nothing more), while the power-loss layer, a process of its
        own, still answers (a `pause` would freeze it too). PostgreSQL's PID 1 is its
        postmaster: its backends go on until the layer drops (one server: nothing to stop at
        the same instant as)."""
        self._container(node).kill(signal="SIGSTOP")

    def pause(self, node: Node) -> None:
        freeze.pause(self._container(node))

    def resume(self, node: Node) -> None:
        self._container(node).unpause()

    def state(self, node: Node) -> str | None:
        """The container's state ("running", "paused", "exited", ...); None: it has none."""
        c = self._container(node)
        if c is None:
            return None
        c.reload()
        return c.status

    def set_clock(self, node: Node, spec: str) -> None:
        """Rewrite the node's libfaketime control file (read by its server at most once a
        second) atomically: libfaketime never reads half a file."""
        path = self.faketime_file(node)
        if not path.parent.exists():
            return  # the run's scratch dir is gone (torn down): nothing left to skew
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(spec + "\n")
        os.replace(tmp, path)
        self.files.push(path)

    def faketime_dir(self, node: Node) -> Path:
        return self.scratch / "faketime" / node.name

    def faketime_file(self, node: Node) -> Path:
        return self.faketime_dir(node) / "timestamp"

    # ---- membership (a service's own reconfiguration adds and retires servers) --------------
    def new_node(self) -> Node:
        """A server never used in this run: the next index (its address is never reused, the
        retired one's container stays until teardown)."""
        index = max(n.id for n in [*self.nodes, *self.retired]) + 1
        return Node(f"n{index}", index, self.server_ip(index), self.nodes[0].port)

    def retire(self, node: Node) -> None:
        """Take `node` out of `nodes` (the service has removed it) and stop its server; its
        container, labelled with the run id, is removed at teardown with its log saved."""
        self.nodes = [n for n in self.nodes if n.name != node.name]
        self.retired.append(node)
        c = self._container(node)
        if c is not None:
            try:
                c.kill(signal="SIGKILL")
            except Exception:  # noqa: BLE001 - already exited (etcd exits once removed)
                pass

    def discard(self, node: Node, step: int) -> None:
        """Remove `node`'s container (a rolling restart makes a new one on the same data),
        its stdout kept as `nodes/<name>/stdout.<step>.log`."""
        text = self._docker_logs(node)
        d = self.store_dir / "nodes" / node.name
        d.mkdir(parents=True, exist_ok=True)
        (d / f"stdout.{step}.log").write_text(text)
        c = self._container(node)
        self._containers.pop(node.name, None)
        if c is not None:
            c.remove(force=True)

    # ---- helpers ------------------------------------------------------------------------------
    def _container(self, node: Node):
        return self._containers.get(node.name)

    def _exited(self, nodes: list[Node]) -> Node | None:
        """The first of `nodes` whose container has exited (start-up failed), if any."""
        for node in nodes:
            c = self._container(node)
            if c is not None:
                c.reload()
                if c.status == "exited":
                    return node
        return None

    def _tail(self, node: Node, lines: int = 8) -> str:
        text = self.logs(node) or self._docker_logs(node)
        return " | ".join(text.strip().splitlines()[-lines:]) or "(empty)"

    def _docker_logs(self, node: Node) -> str:
        c = self._container(node)
        try:
            return c.logs().decode(errors="replace") if c else ""
        except Exception:  # noqa: BLE001 - best effort on the way out
            return ""

    def _save_stdout(self, node: Node) -> None:
        text = self._docker_logs(node)
        if text:
            d = self.store_dir / "nodes" / node.name
            d.mkdir(parents=True, exist_ok=True)
            (d / "stdout.log").write_text(text)

    def _create_network(self) -> None:
        # here, not at the top: the Docker SDK (requests, urllib3) only where Docker is used
        import docker.errors
        import docker.types

        def create(subnet) -> bool:
            ipam = docker.types.IPAMConfig(
                pool_configs=[
                    docker.types.IPAMPool(
                        subnet=str(subnet), gateway=str(subnet.network_address + 1)
                    )
                ]
            )
            try:
                self.client.networks.create(
                    self.network_name,
                    driver="bridge",
                    ipam=ipam,
                    check_duplicate=True,
                    labels=resources.labels(self.run_id, "network"),
                )
                return True
            except docker.errors.APIError as e:
                if "overlap" in str(e) or "in use" in str(e):
                    return False  # another network holds this subnet: try another
                raise EnvironmentProblem(
                    f"Docker refused to create network {self.network_name}: {e.explanation or e}"
                ) from None

        self.subnet = subnets.allocate(self.run_id, create, local=self.engine_local)

    def _run_server(
        self,
        node: Node,
        binds: dict[str, dict],
        *,
        memory: str,
        labels: dict[str, str],
        env: dict[str, str],
        missing_image: str,
        command: list[str] | None = None,
        out: tuple[str, ...] = (),
        image: str | None = None,
        supervised: bool = False,
    ) -> None:
        """Create and start `node`'s container at its fixed address. Servers keep NET_ADMIN:
        the nemesis's partitions exec iptables in them (~0.1 s, a sidecar costs ~0.4 s); the
        server is not the program that could fight its faults. `missing_image`: the sentence
        that says how to build the image if the engine has none; `image`: another than the
        servers' (a rolling upgrade's next version); `supervised`: the image's entrypoint runs
        under docker/supervise.py (its server killed and restarted inside the container; not
        with the power-loss layer, which is an entrypoint of its own)."""
        api = self.client.api
        layer = self.power_layer and self.data_dir
        extra = powerfs.host_config() if layer else {}
        host_config = api.create_host_config(
            binds=self.files.binds(binds),
            cap_add=["NET_ADMIN", "NET_RAW", *extra.pop("cap_add", [])],  # type: ignore[misc]
            init=False,
            **extra,
            **netns.limits(memory, netns.SERVER_PIDS),
        )
        entry = None
        if layer or supervised:  # the image's own entrypoint, under the layer or supervised
            config = self.client.images.get(image or self.image).attrs.get("Config") or {}
            inner = list(config.get("Entrypoint") or [])
            entry = (
                powerfs.entrypoint(self.data_dir, inner) if layer else supervise.entrypoint(inner)
            )
        net = api.create_networking_config(
            {self.network_name: api.create_endpoint_config(ipv4_address=node.ip)}
        )
        try:
            cid = api.create_container(
                image or self.image,
                command=command,
                entrypoint=entry,
                name=f"{self.run_id}-{node.name}",
                hostname=node.name,
                labels=labels,
                environment=env,
                host_config=host_config,
                networking_config=net,
            )["Id"]
        except Exception as e:
            if "No such image" in str(e):
                raise EnvironmentProblem(
                    f"image {image or self.image} is not built; {missing_image}"
                ) from None
            raise
        self.files.attach(cid, binds, out=out)
        api.start(cid)
        self._containers[node.name] = self.client.containers.get(cid)
