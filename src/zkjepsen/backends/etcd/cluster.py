"""The `etcd` backend: 1, 3, 5 or 7 etcd 3.4.23 members (Debian bookworm), one per container.

A `ServerCluster` (docker/servers.py): the network, labels, teardown, node faults and client
endpoints are the shared ones, so kill, pause, partition, packet loss and every client fault
work unchanged. Each member is started with static bootstrap flags naming every peer
(`--initial-cluster`), its data directory on the bind-mounted /srv/data (a killed member comes
back with its log and rejoins), etcd's default timing (heartbeat 100 ms, election 1000 ms), and
logs as JSON (zap) to stderr (`nodes/<n>/stdout.log`).

Up means etcd says so, never a sleep: every member's `/health` is true (it has a leader and
serves), and every member's `Maintenance.Status` (what `etcdctl endpoint status` shows) names
the same leader, which is one of them. `leader()` is the member a majority of the answering
members name.

Clock faults: not on etcd's servers. Go reads the time through the vDSO, not libc, so a
preloaded libfaketime never reaches etcd (measured: docs/findings.md); the servers run
without it and the clock faults declare themselves not applicable (nemesis/faults.py).
"""

from __future__ import annotations

import time
from typing import Any

from zkjepsen.backends.etcd import gateway
from zkjepsen.backends.etcd.image import etcd_image
from zkjepsen.backends.etcd.service import EtcdSettings
from zkjepsen.backends.etcd.session import EtcdSession
from zkjepsen.backends.etcd.versions import UPGRADES
from zkjepsen.docker.cluster import Node
from zkjepsen.docker.image import ensure_image
from zkjepsen.docker.servers import Container, ServerCluster
from zkjepsen.errors import EnvironmentProblem
from zkjepsen.spec import TestSpec

CLIENT_PORT = gateway.CLIENT_PORT
PEER_PORT = 2380
SIZES = (1, 3, 5, 7)  # odd: an even member adds no fault tolerance (etcd's FAQ)


def member_args(
    node: Node, peers: list[Node], token: str, state: str = "new", relaxed: bool = False
) -> list[str]:
    """The `etcd` flags of one member of a cluster of `peers`: a new one, or (`state`
    "existing") one the member joins after `member add`; `relaxed`: `--fsync relaxed`."""
    return [
        f"--name={node.name}",
        "--data-dir=/srv/data/etcd",
        f"--listen-client-urls=http://0.0.0.0:{CLIENT_PORT}",
        f"--advertise-client-urls=http://{node.ip}:{CLIENT_PORT}",
        f"--listen-peer-urls=http://0.0.0.0:{PEER_PORT}",
        f"--initial-advertise-peer-urls=http://{node.ip}:{PEER_PORT}",
        "--initial-cluster=" + ",".join(f"{p.name}=http://{p.ip}:{PEER_PORT}" for p in peers),
        f"--initial-cluster-state={state}",
        f"--initial-cluster-token={token}",
        "--logger=zap",
        "--log-outputs=stderr",
        *(["--unsafe-no-fsync"] if relaxed else []),
    ]


class EtcdBackend(ServerCluster):
    port = CLIENT_PORT
    # its data files under /srv/data (the raft WAL, the snapshots and bbolt's db); corrupt-file
    # damages the newest WAL segment (the db changes with every apply, so would be newest)
    data_files = ("etcd/member/wal/*.wal", "etcd/member/snap/*")
    corrupt_files = ("etcd/member/wal/*.wal",)
    settings = EtcdSettings().settled()
    # Measured (docs/findings.md): etcd, a Go program, reads its clocks through the vDSO, so
    # LD_PRELOAD=libfaketime changes nothing it sees.
    faketime = False
    timewarp = True  # zkj-timewarp patches its vDSO at exec (docker/timewarp.py)
    no_faketime = "etcd is a Go program: it reads the clock through the vDSO, not libc"

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.member_ids: dict[str, Node] = {}  # etcd's member id -> node, once known

    def plan(self) -> list[Container]:
        if len(self.nodes) not in SIZES:
            raise EnvironmentProblem(
                f"the etcd backend runs {', '.join(map(str, SIZES))} members, not {len(self.nodes)}"
            )
        return [Container(n, self._args(n, self.nodes)) for n in self.nodes]

    @classmethod
    def for_spec(cls, spec: TestSpec, store_dir: Any, **kw: Any) -> EtcdBackend:
        backend = super().for_spec(spec, store_dir, **kw)
        given = spec.service if isinstance(spec.service, EtcdSettings) else EtcdSettings()
        backend.settings = given.settled()
        return backend

    def _args(self, node: Node, peers: list[Node], state: str = "new") -> list[str]:
        relaxed = self.settings.fsync == "relaxed"
        return member_args(node, peers, self.run_id, state, relaxed=relaxed)

    # ---- asking the members (from the host, which reaches every container by its IP) -------
    def statuses(self, timeout: float = 0.5) -> dict[str, dict[str, Any] | None]:
        """Each member's own status (None: no answer), asked at once."""
        answers = self._pool.map(lambda n: gateway.status(n.address, timeout), self.nodes)
        return {n.name: s for n, s in zip(self.nodes, answers, strict=True)}

    def ready(self) -> bool:
        if not all(self._pool.map(lambda n: gateway.health(n.address), self.nodes)):
            return False
        statuses = self.statuses()
        if any(s is None for s in statuses.values()):
            return False
        ids = {s["member_id"]: n for n in self.nodes if (s := statuses[n.name]) is not None}
        leaders = {s["leader"] for s in statuses.values() if s is not None}
        if len(leaders) != 1 or next(iter(leaders)) not in ids:
            return False  # no leader yet, or the members do not agree on one
        self.member_ids = ids
        return True

    def leader(self) -> Node | None:
        statuses = [s for s in self.statuses().values() if s is not None]
        votes: dict[str, int] = {}
        for s in statuses:
            if s.get("leader"):
                votes[s["leader"]] = votes.get(s["leader"], 0) + 1
        best, count = max(votes.items(), key=lambda kv: kv[1], default=(None, 0))
        if best is None or count * 2 <= len(self.nodes):
            return None
        return self.member_ids.get(best)

    def role_of(self, node: Node) -> str:
        s = gateway.status(node.address)
        if s is None:
            return "not serving"
        return "leader" if s["leader"] == s["member_id"] else "follower"

    def position_of(self, node: Node) -> str | None:
        s = gateway.status(node.address)
        return None if s is None else f"term {s['raft_term']}, index {s['raft_index']}"

    # ---- membership: etcd's own `member add/remove` (through the JSON gateway) ---------------
    def membership(self) -> dict[str, Any]:
        """The members as the cluster lists them (names; a started-less one by its id) and the
        raft index and term the list was read at (etcd has no configuration version)."""
        out = self._ask("v3/cluster/member/list", {})
        names = [gateway.field(m, "name") or f"id {m.get('ID')}" for m in out.get("members", [])]
        header = out.get("header")
        return {
            "version": gateway.num(header, "raft_index") or None,  # 3.5+ fills it in
            "raft_term": gateway.num(header, "raft_term"),
            "members": sorted(names, key=lambda m: (len(m), m)),
        }

    def remove_member(self, node: Node) -> None:
        """`member remove` `node` (asked of another member; it then stops itself), then wait
        until the rest serve with one leader."""
        ids = {s["member_id"]: n for n, s in self.statuses().items() if s}
        mid = next((i for i, name in ids.items() if name == node.name), None)
        if mid is None:
            raise EnvironmentProblem(f"etcd {node.name} does not answer: its member id is unknown")
        self._ask("v3/cluster/member/remove", {"ID": mid}, avoid=node)
        self.retire(node)
        self.wait_ready(self.info.ready_timeout_s)

    def add_member(self) -> Node:
        """`member add` a fresh member, then start it (empty data directory,
        `--initial-cluster-state existing`); returns once every member serves and agrees."""
        node = self.new_node()
        peer = f"http://{node.ip}:{PEER_PORT}"
        self._ask("v3/cluster/member/add", {"peerURLs": [peer]})
        for d in ("conf", "data"):
            (self.scratch / "nodes" / node.name / d).mkdir(parents=True, exist_ok=True)
        self.clock_files(node)  # a new member's clock can be faulted as the others'
        (self.store_dir / "nodes" / node.name).mkdir(parents=True, exist_ok=True)
        args = self._args(node, [*self.nodes, node], state="existing")
        self._create(Container(node, args))
        self.nodes.append(node)
        self.wait_ready(self.info.ready_timeout_s)
        return node

    # ---- rolling restarts and upgrades -------------------------------------------------------
    def server_version(self, node: Node) -> str | None:
        """What the member says it runs (`GET /version`: etcdserver); None: no answer."""
        return gateway.version(node.address)

    def upgrade_image(self) -> str:
        """The next version's image (built if missing), from the version the members run."""
        now = next((v for n in self.nodes if (v := self.server_version(n))), None)
        nxt = UPGRADES.get(".".join((now or "").split(".")[:2]))
        if nxt is None:
            raise EnvironmentProblem(f"no upgrade from etcd {now}; {', '.join(UPGRADES)} has")
        return ensure_image(self.client, None, recipe=etcd_image(nxt)).tag

    def restart_server(self, node: Node, image: str | None, step: int) -> None:
        """A new container for `node` on its own data directory (`image`: another version's),
        then wait until every member serves and they agree on a leader."""
        self.discard(node, step)
        args = self._args(node, self.nodes, state="existing")
        self._create(Container(node, args), image)
        self.wait_ready(self.info.ready_timeout_s)

    def _ask(self, path: str, body: dict[str, Any], avoid: Node | None = None) -> dict[str, Any]:
        """`path` asked of the first member that answers (not `avoid`). etcd refuses a member
        change as "unhealthy cluster" until its members have been connected for 5 s (its
        strict reconfiguration check): asked again for up to the ready timeout."""
        deadline = time.monotonic() + self.info.ready_timeout_s
        while True:
            try:
                return self._ask_once(path, body, avoid)
            except RuntimeError as e:
                if "unhealthy cluster" not in str(e) or time.monotonic() > deadline:
                    raise EnvironmentProblem(str(e)) from None
            time.sleep(0.5)

    def _ask_once(self, path: str, body: dict[str, Any], avoid: Node | None) -> dict[str, Any]:
        last: Exception | None = None
        for n in self.nodes:
            if n != avoid:
                try:
                    return gateway.call(n.address, path, body, timeout=5)
                except gateway.Unreachable as e:
                    last = e
        raise EnvironmentProblem(f"no etcd member answered {path}: {last}")

    # ---- Backend ----------------------------------------------------------------------------
    def host_session(self, timeout_s: float):

        return EtcdSession(self.connect_string(), timeout=timeout_s)


etcd_backend = EtcdBackend.for_spec  # BackendInfo.target
