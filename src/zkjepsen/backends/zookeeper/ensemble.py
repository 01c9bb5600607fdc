"""A real ZooKeeper ensemble: one Docker container per server on the run's own network
(a `ContainerCluster`, docker/cluster.py, which gives the network, teardown, node faults and the
clients' places).

The host reaches every container by its fixed IP (no published ports, so no port clashes), which
is how the harness asks servers `srvr`/`mntr` and how host-side kazoo clients connect.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkjepsen.backends.zookeeper.config import (
    CLIENT_PORT,
    LOG4J_PROPERTIES,
    SUPER_AUTH,
    ZkSettings,
    jvm_flags,
    parse_four_letter,
    server_line,
    zoo_cfg,
)
from zkjepsen.backends.zookeeper.fourlw import four_letter
from zkjepsen.backends.zookeeper.image import zookeeper_recipe, zookeeper_tag
from zkjepsen.backends.zookeeper.versions import UPGRADES
from zkjepsen.backends.zookeeper.versions import get as zk_version
from zkjepsen.docker import netns, resources, supervise
from zkjepsen.docker.cluster import ContainerCluster, Node, faketime_env
from zkjepsen.docker.image import ensure_image
from zkjepsen.errors import BadInput, EnvironmentProblem

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
    # a server kill and its restart act on the server process inside its container (kept),
    # not on the container (docker/supervise.py; the service's `restart = "process"`)
    restart_in_place: bool = False

    def __post_init__(self) -> None:
        if self.nodes < 1 or self.nodes > 9:
            raise BadInput(f"--nodes {self.nodes} is out of range; use 1 to 9 (3, 5 or 7 usual)")


class ZooKeeperEnsemble(ContainerCluster):
    """ZooKeeper's `Backend` (backends/base.py). Use as a context manager: leaving it always
    removes everything."""

    data_dir = "/zk/data"  # dataDir (config.py): version-2/ holds the logs and snapshots
    data_files = ("version-2/log.*", "version-2/snapshot.*")
    corrupt_files = data_files  # corrupt-file's choice: any of them

    def __init__(self, spec: EnsembleSpec, store_dir: Path, *args, **kwargs) -> None:
        """`args`, `kwargs`: ContainerCluster's (run_id, client, engine, engine_local)."""
        self.spec = spec
        super().__init__(store_dir, *args, **kwargs)
        self.supervised: set[str] = set()  # nodes whose server runs under the supervisor
        self.killed_in_place: set[str] = (
            set()
        )  # of those, the ones whose server was killed in place

    # ---- lifecycle -------------------------------------------------------------------------
    @property
    def image(self) -> str:

        return self.spec.image or zookeeper_tag(self.spec.settings.zk_version)

    @property
    def client_image(self) -> str:
        return self.spec.client_image or self.image

    def start(self) -> None:
        self._open()
        ips = [self.server_ip(i) for i in range(1, self.spec.nodes + 1)]
        self.nodes = [Node(f"n{i}", i, ip, CLIENT_PORT) for i, ip in enumerate(ips, start=1)]
        for node in self.nodes:
            self._write_node_files(node, ips)
        list(self._pool.map(self._create_server, self.nodes))
        self.wait_for_quorum(self.spec.quorum_timeout_s)

    @classmethod
    def attach(cls, run_id: str, client=None) -> ZooKeeperEnsemble:
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
                c.labels["zkjepsen.node"],
                int(c.labels["zkjepsen.myid"]),
                c.labels["zkjepsen.ip"],
                CLIENT_PORT,
            )
            self.nodes.append(node)
            self._containers[node.name] = c
        return self

    # ---- Backend --------------------------------------------------------------------------
    def srvr(self, node: Node, timeout: float = 0.5) -> dict[str, str] | None:
        """`srvr` of one node, or None if it does not answer as a serving member."""
        out = four_letter(node.ip, node.port, "srvr", timeout)
        if out is None or "Mode:" not in out:
            return None

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

    # ---- node control: in place under the supervisor (docker/supervise.py) ----------------
    def kill(self, node: Node) -> None:
        if node.name not in self.supervised:
            return super().kill(node)
        self._container(node).kill(signal=supervise.KILL_SIGNAL)
        self.killed_in_place.add(node.name)

    def restart(self, node: Node) -> None:
        self.killed_in_place.discard(node.name)
        if node.name in self.supervised:
            try:
                return self._container(node).kill(signal=supervise.START_SIGNAL)
            except Exception as e:
                if "is not running" not in str(e):
                    raise
        super().restart(node)  # not supervised, or the container itself went down

    def state(self, node: Node) -> str | None:
        """As the container's, except that a server killed in place is "exited" once its JVM is
        seen gone from the container (`docker top`, one API call): the kill's observation
        (nemesis/process.py), not that it was asked for. A container whose processes cannot
        be listed counts as killed, as before: the heal then starts its server again."""
        state = super().state(node)
        if state != "running" or node.name not in self.killed_in_place:
            return state
        try:
            processes = self._container(node).top().get("Processes") or []
        except Exception:  # noqa: BLE001 - gone or going: no JVM to see
            return "exited"
        return "running" if any("java" in str(p[-1]) for p in processes) else "exited"

    def whole(self) -> bool:
        """Every server serves and exactly one leads (one round of `srvr`, ~ms): after a server
        fault, the restarted server has rejoined and synced (nemesis/arming.await_settled)."""
        modes = [a.get("Mode") if a else None for a in self._pool.map(self.srvr, self.nodes)]
        return all(modes) and sum(m in LEADING for m in modes) == 1

    def status(self) -> list[dict]:
        def one(node: Node) -> dict:
            state = self._container(node).status if self._container(node) else "missing"
            a = self.srvr(node) if state == "running" else None
            return {
                "node": node.name,
                "ip": node.ip,
                "container": state,
                "mode": a.get("Mode") if a else "not serving",
                "position": f"zxid {a['Zxid']}" if a and a.get("Zxid") else None,
                "connections": int(a["Connections"]) if a and "Connections" in a else None,
                "version": served_version(a),
            }

        return list(self._pool.map(one, self.nodes))

    def host_session(self, timeout_s: float):

        # here, not at the top: keeps the commands' start-up light (`list`, `--help`)
        from kazoo.client import KazooClient

        return KazooClient(hosts=self.connect_string(), timeout=timeout_s)

    def logs(self, node: Node) -> str:
        path = self.store_dir / "nodes" / node.name / "zookeeper.log"
        if self._container(node) is not None:
            self.files.pull(self._container(node).id)
        return path.read_text(errors="replace") if path.exists() else ""

    def wait_for_quorum(self, timeout_s: float) -> float:
        """Block until every server serves and exactly one leads; returns the seconds waited."""
        t0 = time.monotonic()
        last: list[tuple[Any, dict[str, str] | None]] = []
        while time.monotonic() - t0 < timeout_s:
            last = list(self._pool.map(lambda n: (n, self.srvr(n)), self.nodes))
            modes = [a.get("Mode") if a else None for _, a in last]
            if all(modes) and sum(m in LEADING for m in modes) == 1:
                return time.monotonic() - t0
            node = self._exited(self.nodes)
            if node is not None:
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

    # ---- membership: ZooKeeper's own dynamic reconfiguration (3.5+) ----------------------------
    def membership(self) -> dict[str, Any]:
        """The ensemble's configuration as its servers agree on it (`/zookeeper/config`): its
        version (hex, as ZooKeeper writes it) and its members' names."""
        data = self._reconfig(lambda zk: zk.get("/zookeeper/config")[0])
        return parse_config(data.decode(), self)

    def remove_member(self, node: Node) -> None:
        """`reconfig -remove` `node` (asked of another member), then stop it and wait until the
        rest serve with a leader."""
        others = [n for n in self.nodes if n.name != node.name]
        deadline = time.monotonic() + self.spec.quorum_timeout_s
        while True:
            try:
                self._reconfig(lambda zk: zk.reconfig(None, str(node.id), None), others)
                break
            except Exception as e:  # noqa: BLE001 - kazoo's ConnectionLoss: did it commit?
                # Removing the leader: it steps down as it commits, and the member that
                # forwarded the request may drop the connection before it answers.
                if time.monotonic() > deadline:
                    raise EnvironmentProblem(f"reconfig -remove {node.name}: {e!r}") from None
                time.sleep(0.5)
                try:
                    if node.name not in self.membership()["members"]:
                        break
                except Exception:  # noqa: BLE001 - mid-election: ask again
                    pass
        self.retire(node)
        self.wait_for_quorum(self.spec.quorum_timeout_s)

    def add_member(self) -> Node:
        """A fresh server (empty data directory) started with the current members and itself,
        serving once it has synced as a non-voting follower, then `reconfig -add`-ed; returns
        once every member serves and one leads."""
        node = self.new_node()
        members = {n.id: n.ip for n in self.nodes} | {node.id: node.ip}
        self._write_node_files(node, members)
        self._create_server(node)
        self.nodes.append(node)
        deadline = time.monotonic() + self.spec.quorum_timeout_s
        while self.srvr(node) is None:
            if time.monotonic() > deadline or self._exited([node]):
                raise EnvironmentProblem(
                    f"the new member {node.name} did not sync; its log ends: " + self._tail(node)
                )
            time.sleep(0.1)
        line = f"{server_line(node.id, node.ip)}:participant;{CLIENT_PORT}"
        self._reconfig(lambda zk: zk.reconfig(line, None, None), self.nodes[:-1])
        self.wait_for_quorum(self.spec.quorum_timeout_s)
        return node

    # ---- rolling restarts and upgrades -------------------------------------------------------
    def server_version(self, node: Node) -> str | None:
        """The version `node`'s server says it runs (`srvr`); None: it does not serve."""
        return served_version(self.srvr(node, timeout=1.0))

    def upgrade_image(self) -> str:
        """The next version's image (built if missing), from the version the servers run."""
        now = next((v for n in self.nodes if (v := self.server_version(n))), None)
        nxt = UPGRADES.get(".".join((now or "").split(".")[:2]))
        if nxt is None:
            raise EnvironmentProblem(f"no upgrade from ZooKeeper {now}; {', '.join(UPGRADES)} has")
        return ensure_image(self.client, None, recipe=zookeeper_recipe(nxt)).tag

    def restart_server(self, node: Node, image: str | None, step: int) -> None:
        """A new container for `node` on its own data and configuration (`image`: another
        version's), then wait until every server serves and one leads."""
        self.discard(node, step)
        self._create_server(node, image)
        self.wait_for_quorum(self.spec.quorum_timeout_s)

    def _reconfig(self, fn, nodes: list[Node] | None = None):
        """`fn(kazoo client)` as the harness's super user, connected to `nodes` (not to one
        being removed: its answer might be lost)."""
        if not zk_version(self.spec.settings.zk_version).reconfig:
            raise EnvironmentProblem(f"ZooKeeper {self.spec.settings.zk_version} has no reconfig")
        # KazooClient's class through host_session: no kazoo import here (start-up stays light)
        cls = type(self.host_session(10))
        zk = cls(hosts=self.connect_string(nodes), timeout=10, auth_data=[SUPER_AUTH])
        zk.start(timeout=15)
        try:
            return fn(zk)
        finally:
            zk.stop()
            zk.close()

    def _write_node_files(self, node: Node, ips: list[str] | dict[int, str]) -> None:
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

    def _env(self) -> dict[str, str]:
        env = {"ZK_HEAP": self.spec.settings.heap}
        if flags := jvm_flags(self.spec.settings):
            env["JAVA_TOOL_OPTIONS"] = flags  # read by every JVM at its start
        if self.spec.faketime:
            env |= faketime_env("/zk/faketime/timestamp")
        return env

    def _create_server(self, node: Node, image: str | None = None) -> None:
        # reconfig rewrites zoo.cfg and writes zoo.cfg.dynamic.<version> beside it (3.5+)
        conf = "rw" if zk_version(self.spec.settings.zk_version).reconfig else "ro"
        binds = {
            str(self.scratch / "nodes" / node.name / "conf"): {"bind": "/zk/conf", "mode": conf},
            str(self.scratch / "nodes" / node.name / "data"): {"bind": "/zk/data", "mode": "rw"},
            str((self.store_dir / "nodes" / node.name).resolve()): {
                "bind": "/zk/log",
                "mode": "rw",
            },
            str(self.faketime_dir(node)): {"bind": "/zk/faketime", "mode": "ro"},
        }
        supervised = self.spec.restart_in_place and not self.power_layer
        (self.supervised.add if supervised else self.supervised.discard)(node.name)
        self.killed_in_place.discard(node.name)
        self._run_server(
            node,
            binds,
            supervised=supervised,
            memory=netns.server_memory(self.spec.settings.heap),
            labels=resources.labels(
                self.run_id, "server", node=node.name, myid=node.id, ip=node.ip
            ),
            env=self._env(),
            missing_image="run `zkjepsen image build` (or pass --image NAME)",
            out=("/zk/log",),
            image=image,
        )


def parse_config(text: str, ens: ContainerCluster) -> dict[str, Any]:
    """`/zookeeper/config` (`server.N=ip:...` lines, `version=<hex>`) as {version, members}."""
    version, members = None, []
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key == "version":
            version = value.strip()
        elif key.startswith("server."):
            ip = value.split(":", 1)[0]
            name = next((n.name for n in ens.nodes if n.ip == ip), f"server.{key[7:]}")
            members.append(name)
    return {"version": version, "members": sorted(members, key=lambda m: (len(m), m))}


def served_version(srvr: dict[str, str] | None) -> str | None:
    """`3.8.0` of srvr's `Zookeeper version: 3.8.0-<commit>, built on ...`."""
    text = (srvr or {}).get("Zookeeper version")
    return text.split(",")[0].split("-")[0].strip() if text else None
