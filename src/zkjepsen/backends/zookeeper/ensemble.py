"""A real ZooKeeper ensemble: one Docker container per server on a private bridge network.

The host reaches every container by its fixed IP (no published ports, so no port clashes), which
is how the harness asks servers `srvr`/`mntr` and how host-side kazoo clients connect.
"""

from __future__ import annotations

import ipaddress
import os
import platform
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from zkjepsen.backends.base import ClientEndpoint, Node
from zkjepsen.backends.zookeeper.config import LOG4J_PROPERTIES, ZkSettings, zoo_cfg
from zkjepsen.backends.zookeeper.fourlw import four_letter
from zkjepsen.docker import mounts, netns, resources, signals, subnets
from zkjepsen.errors import BadInput, EnvironmentProblem

SERVER_IP_OFFSET = 10  # n1 = .11, n2 = .12, ...; clients get .101 and up
CLIENT_IP_OFFSET = 100
# A one-server "ensemble" runs standalone: it serves every write itself, so it is the leader.
LEADING = ("leader", "standalone")


@dataclass
class EnsembleSpec:
    nodes: int = 3
    image: str | None = None  # default: the locally built image of settings.zk_version
    client_image: str | None = None  # the clients' (`--client-suite`); default: `image`
    settings: ZkSettings = field(default_factory=ZkSettings)
    faketime: bool = True  # preload libfaketime (clock faults need it from the start)
    quorum_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if self.nodes < 1 or self.nodes > 9:
            raise BadInput(f"--nodes {self.nodes} is out of range; use 1 to 9 (3, 5 or 7 usual)")


class DockerEnsemble:
    """The Docker `Backend` (backends/base.py). Use as a context manager: leaving it always
    removes everything."""

    def __init__(
        self,
        spec: EnsembleSpec,
        store_dir: Path,
        run_id: str | None = None,
        client=None,
        engine: str = resources.DEFAULT_ENGINE,
        engine_local: bool = True,
    ) -> None:
        self.spec = spec
        self.engine = engine  # the engine's name, recorded in the scratch dir for `cleanup`
        self.engine_local = engine_local
        self.run_id = run_id or resources.new_run_id()
        self.store_dir = Path(store_dir)
        self.client = client or resources.docker_client()
        self.network_name = self.run_id
        self.nodes: list[Node] = []
        self.subnet: ipaddress.IPv4Network | None = None
        self._containers: dict[str, object] = {}
        self.files = mounts.Files(self.client)  # bind mounts until start() asks the engine
        self._pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="ensemble")

    # ---- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> DockerEnsemble:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def image(self) -> str:
        from zkjepsen.backends.zookeeper.image import zookeeper_tag

        return self.spec.image or zookeeper_tag(self.spec.settings.zk_version)

    @property
    def scratch(self) -> Path:
        return resources.SCRATCH_ROOT / self.run_id

    def start(self) -> None:
        # With its owner file, before anything else exists; and the engine, for `cleanup`.
        resources.claim_scratch(self.run_id, self.engine)
        # The probe (~3 API calls) runs while the network is made: it adds no wall time.
        probe = self._pool.submit(
            mounts.Files.for_engine, self.client, self.image, self.run_id, self.scratch
        )
        self._create_network()
        self.files = probe.result()
        ips = [
            str(self.subnet.network_address + SERVER_IP_OFFSET + i)
            for i in range(1, self.spec.nodes + 1)
        ]
        self.nodes = [Node(f"n{i}", i, ip) for i, ip in enumerate(ips, start=1)]
        for node in self.nodes:
            self._write_node_files(node, ips)
        list(self._pool.map(self._create_server, self.nodes))
        self.wait_for_quorum(self.spec.quorum_timeout_s)

    def stop(self) -> None:
        """Remove every container and the network; keep the logs in the store. Idempotent."""
        with signals.signals_deferred():
            # Interrupted in the middle of start(), workers may still be creating containers:
            # let them finish first, or one created after the removal below would outlive us.
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="ensemble")
            for node in self.nodes:
                self._save_stdout(node)
            self.files.collect()  # an engine that shares no files: fetch them before removal
            resources.remove_run(self.client, self.run_id)
            self._containers.clear()

    def down(self) -> None:
        self.stop()

    def detach(self) -> None:
        """Leave the ensemble running after this process exits (`cluster up`)."""
        (self.scratch / resources.DETACHED_MARKER).write_text(str(self.store_dir))

    @classmethod
    def attach(cls, run_id: str, client=None) -> DockerEnsemble:
        """Rebuild the handle of a running ensemble from its container labels."""
        client = client or resources.docker_client()
        found = client.containers.list(
            all=True,
            filters={
                "label": [f"{resources.RUN_LABEL}={run_id}", f"{resources.ROLE_LABEL}=server"]
            },
        )
        if not found:
            raise BadInput(
                f"no zkjepsen ensemble with run id {run_id}; "
                "`zkjepsen cluster status` lists the running ones"
            )
        marker = resources.SCRATCH_ROOT / run_id / resources.DETACHED_MARKER
        store = Path(marker.read_text()) if marker.exists() else Path("store/cluster") / run_id
        self = cls(
            EnsembleSpec(
                nodes=len(found), image=found[0].image.tags[0] if found[0].image.tags else None
            ),
            store,
            run_id,
            client,
        )
        for c in sorted(found, key=lambda c: int(c.labels["zkjepsen.myid"])):
            node = Node(
                c.labels["zkjepsen.node"], int(c.labels["zkjepsen.myid"]), c.labels["zkjepsen.ip"]
            )
            self.nodes.append(node)
            self._containers[node.name] = c
        return self

    # ---- Backend --------------------------------------------------------------------------
    def connect_string(self, nodes: list[Node] | None = None) -> str:
        return ",".join(n.address for n in (nodes or self.nodes))

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise BadInput(f"no node named {name}; nodes are {', '.join(n.name for n in self.nodes)}")

    def srvr(self, node: Node, timeout: float = 0.5) -> dict[str, str] | None:
        """`srvr` of one node, or None if it does not answer as a serving member."""
        out = four_letter(node.ip, node.port, "srvr", timeout)
        if out is None or "Mode:" not in out:
            return None
        from zkjepsen.backends.zookeeper.config import parse_four_letter

        return parse_four_letter(out)

    def leader(self) -> Node | None:
        """The node that says it leads, asked of all nodes at once (one round trip, ~ms).

        For ~1.4 s after being cut off an old leader still says "leader" next to the new one, so
        when two claim it we believe the one with the newer epoch (the high 32 bits of its zxid).
        """
        answers = list(self._pool.map(lambda n: (n, self.srvr(n)), self.nodes))
        leaders = [
            (int(a.get("Zxid", "0x0"), 16) >> 32, n)
            for n, a in answers
            if a and a.get("Mode") in LEADING
        ]
        return max(leaders, key=lambda t: t[0])[1] if leaders else None

    def status(self) -> list[dict]:
        def one(node: Node) -> dict:
            state = self._container(node).status if self._container(node) else "missing"
            a = self.srvr(node) if state == "running" else None
            return {
                "node": node.name,
                "ip": node.ip,
                "container": state,
                "mode": a.get("Mode") if a else "not serving",
                "zxid": a.get("Zxid") if a else None,
                "connections": int(a["Connections"]) if a and "Connections" in a else None,
            }

        return list(self._pool.map(one, self.nodes))

    def host_session(self, timeout_s: float):
        from kazoo.client import KazooClient

        return KazooClient(hosts=self.connect_string(), timeout=timeout_s)

    def exec(self, node: Node, argv: list[str]) -> tuple[int, str]:
        res = self._container(node).exec_run(argv, demux=False)
        return res.exit_code, (res.output or b"").decode(errors="replace")

    def logs(self, node: Node) -> str:
        path = self.store_dir / "nodes" / node.name / "zookeeper.log"
        if self._container(node) is not None:
            self.files.pull(self._container(node).id)
        return path.read_text(errors="replace") if path.exists() else ""

    def client_endpoint(self, index: int) -> ClientEndpoint:
        """Clients share the servers' network, at .101 and up."""
        return ClientEndpoint(
            self.network_name,
            str(self.subnet.network_address + CLIENT_IP_OFFSET + index),
            self.spec.client_image or self.image,
        )

    # ---- node control (used by the nemesis) -----------------------------------------------
    def kill(self, node: Node) -> None:
        self._container(node).kill(signal="SIGKILL")

    def restart(self, node: Node) -> None:
        self._container(node).start()

    def pause(self, node: Node) -> None:
        self._container(node).pause()

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
        """Rewrite the node's libfaketime control file (read by its JVM at most once a second)
        atomically: libfaketime never reads half a file."""
        path = self.faketime_file(node)
        if not path.parent.exists():
            return  # the run's scratch dir is gone (torn down): nothing left to skew
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(spec + "\n")
        os.replace(tmp, path)
        self.files.push(path)

    def wait_for_quorum(self, timeout_s: float) -> float:
        """Block until every server serves and exactly one leads; returns the seconds waited."""
        t0 = time.monotonic()
        last: list[dict] = []
        while time.monotonic() - t0 < timeout_s:
            last = list(self._pool.map(lambda n: (n, self.srvr(n)), self.nodes))
            modes = [a.get("Mode") if a else None for _, a in last]
            if all(modes) and sum(m in LEADING for m in modes) == 1:
                return time.monotonic() - t0
            for node in self.nodes:
                c = self._container(node)
                if c is not None:
                    c.reload()
                    if c.status == "exited":
                        raise EnvironmentProblem(
                            f"ZooKeeper on {node.name} exited during start-up; its log ends: "
                            + self._tail(node)
                        )
            time.sleep(0.1)
        bad = next((n for n, a in last if not a), self.nodes[0])
        raise EnvironmentProblem(
            f"the ensemble did not reach quorum within {timeout_s:.0f} s ({bad.name} is not "
            f"serving); its log ends: " + self._tail(bad)
        )

    # ---- helpers --------------------------------------------------------------------------
    def _container(self, node: Node):
        return self._containers.get(node.name)

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

    def _write_node_files(self, node: Node, ips: list[str]) -> None:
        conf = self.scratch / "nodes" / node.name / "conf"
        data = self.scratch / "nodes" / node.name / "data"
        logd = self.store_dir / "nodes" / node.name
        for d in (conf, data, logd, self.faketime_dir(node)):
            d.mkdir(parents=True, exist_ok=True)
        (conf / "zoo.cfg").write_text(zoo_cfg(node.id, ips, self.spec.settings))
        (conf / "log4j.properties").write_text(LOG4J_PROPERTIES)
        (data / "myid").write_text(f"{node.id}\n")
        self.faketime_file(node).write_text("+0 x1\n")
        shutil.copy(conf / "zoo.cfg", logd / "zoo.cfg")

    def faketime_dir(self, node: Node) -> Path:
        return self.scratch / "faketime" / node.name

    def faketime_file(self, node: Node) -> Path:
        return self.faketime_dir(node) / "timestamp"

    def _env(self) -> dict[str, str]:
        env = {"ZK_HEAP": self.spec.settings.heap}
        if self.spec.faketime:
            # The control file is read at most once a second; the nemesis rewrites it at run
            # time. Monotonic faking stays ON for the JVM: turning it off makes timed waits spin.
            env |= {
                "LD_PRELOAD": f"/usr/lib/{platform.machine()}-linux-gnu/faketime/libfaketime.so.1",
                "FAKETIME_TIMESTAMP_FILE": "/zk/faketime/timestamp",
                "FAKETIME_CACHE_DURATION": "1",
                "FAKETIME_XRESET": "1",
            }
        return env

    def _create_server(self, node: Node) -> None:
        api = self.client.api
        binds = {
            str(self.scratch / "nodes" / node.name / "conf"): {"bind": "/zk/conf", "mode": "ro"},
            str(self.scratch / "nodes" / node.name / "data"): {"bind": "/zk/data", "mode": "rw"},
            str((self.store_dir / "nodes" / node.name).resolve()): {
                "bind": "/zk/log",
                "mode": "rw",
            },
            str(self.faketime_dir(node)): {"bind": "/zk/faketime", "mode": "ro"},
        }
        # Servers keep NET_ADMIN: the nemesis's partitions exec iptables in them (~0.1 s, a
        # sidecar costs ~0.4 s); the server is not the program that could fight its faults.
        host_config = api.create_host_config(
            binds=self.files.binds(binds),
            cap_add=["NET_ADMIN", "NET_RAW"],
            init=False,
            **netns.limits(netns.server_memory(self.spec.settings.heap), netns.SERVER_PIDS),
        )
        net = api.create_networking_config(
            {self.network_name: api.create_endpoint_config(ipv4_address=node.ip)}
        )
        try:
            cid = api.create_container(
                self.image,
                name=f"{self.run_id}-{node.name}",
                hostname=node.name,
                labels=resources.labels(
                    self.run_id, "server", node=node.name, myid=node.id, ip=node.ip
                ),
                environment=self._env(),
                host_config=host_config,
                networking_config=net,
            )["Id"]
        except Exception as e:
            if "No such image" in str(e):
                raise EnvironmentProblem(
                    f"image {self.image} is not built; run `zkjepsen image "
                    "build` (or pass --image NAME)"
                ) from None
            raise
        self.files.attach(cid, binds, out=["/zk/log"])
        api.start(cid)
        self._containers[node.name] = self.client.containers.get(cid)
