"""The Redis backends: Redis 7.0 from Debian bookworm (`redis-server`, `redis-sentinel`), built
into `zkjepsen/redis:<content hash>` with no registry (docker/image.py), in three shapes:

- `redis`: one master (n1);
- `redis-sentinel`: a master (n1) and two replicas (n2, n3) with three Sentinels (s1..s3,
  quorum 2, a master is down after 2 s of silence): kill the master (`kill-leader`) and the
  Sentinels promote a replica; clients find the master through the Sentinels;
- `redlock`: five independent masters (n1..n5).

No persistence anywhere (`save ""`, no AOF) unless the run gives `--fsync`: a killed server
comes back empty, which is how Redis is commonly run for locks and what Redlock's authors warn
about. `--fsync strict` turns the AOF on with `appendfsync always` (each write fsynced before
its reply), `relaxed` with `appendfsync everysec` (up to about a second of acknowledged writes
lost with the power). Servers log to stdout
(`nodes/<n>/stdout.log`). `leader()` is the current master (for `kill-leader`,
`partition-leader`): n1 for one master, whom the Sentinels name for Sentinel, none for Redlock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zkjepsen.backends import buildroot
from zkjepsen.backends.redis.session import LOCK_PREFIX, RedisSession
from zkjepsen.docker import powerfs
from zkjepsen.docker.cluster import Node
from zkjepsen.docker.image import ImageRecipe, Progress
from zkjepsen.docker.servers import Container, ServerCluster
from zkjepsen.spec import TestSpec

REDIS_PORT = 6379
SENTINEL_PORT = 26379
MASTER_NAME = "zkjepsen"
SENTINELS = 3
DOWN_AFTER_MS = 2000
FAILOVER_TIMEOUT_MS = 6000

ENTRYPOINT = r"""#!/bin/sh
# redis-node server|sentinel: run one Redis server or Sentinel from the config the harness
# bind-mounted at /srv/conf. Both rewrite their config at run time (Sentinel's failovers), so
# they run from a writable copy in /srv/data. The server is PID 1's only child (exec), or
# zkj-timewarp's when the harness gave it a clock control file (docker/timewarp.py: only in a
# run that plans a server clock fault), which writes what it reads into its observation page.
set -e
warp=
if [ -f /srv/faketime/timewarp ]; then
  warp="/opt/zkjepsen/drivers/timewarp/zkj-timewarp /srv/faketime/timewarp"
  if [ -d /srv/faketime-seen ]; then export ZKJ_TIMEWARP_OBSERVE=/srv/faketime-seen/page; fi
fi
case "$1" in
  sentinel) cp /srv/conf/sentinel.conf /srv/data/sentinel.conf
            exec redis-sentinel /srv/data/sentinel.conf ;;
  *)        cp /srv/conf/redis.conf /srv/data/redis.conf
            exec $warp redis-server /srv/data/redis.conf ;;
esac
"""


def redis_image() -> ImageRecipe:
    return ImageRecipe(
        repo="zkjepsen/redis",
        packages=(
            "redis-server",
            "redis-sentinel",
            "iptables",  # the nemesis drops packets inside a server's own network namespace
            "iproute2",
            "procps",
            *powerfs.RUNTIME_PACKAGES,  # the power-loss layer (docker/powerfs.py), disk faults
        ),
        # zkj-timewarp (the servers' clock faults) and the power-loss layer, each compiled in
        # a throwaway build root
        hash_parts=lambda: [*buildroot.timewarp_hash_parts(), *powerfs.hash_parts()],
        prepare=_prepare,
        entrypoint="/usr/local/bin/redis-node",
        entry_script=ENTRYPOINT,
        files=lambda rootfs: powerfs.files(),
    )


def _prepare(rootfs: Path, work: Path, progress: Progress) -> None:
    buildroot.build_timewarp(rootfs, work, progress)
    buildroot.build_powerfs(rootfs, work, progress)


# --fsync (service.py): the AOF and how often it is fsynced; "off" (not given): none at all
APPENDFSYNC = {"strict": "always", "relaxed": "everysec"}


def redis_conf(replica_of: str | None = None, fsync: str | None = None) -> str:
    every = APPENDFSYNC.get(fsync or "")
    lines = [
        "bind 0.0.0.0",
        f"port {REDIS_PORT}",
        "protected-mode no",
        'save ""',
        "appendonly yes" if every else "appendonly no",
        *([f"appendfsync {every}"] if every else []),
        "dir /srv/data",
        'logfile ""',
    ]
    if replica_of:
        lines.append(f"replicaof {replica_of} {REDIS_PORT}")
    return "\n".join(lines) + "\n"


def sentinel_conf(master_ip: str) -> str:
    return (
        "\n".join(
            [
                f"port {SENTINEL_PORT}",
                "bind 0.0.0.0",
                "protected-mode no",
                "dir /srv/data",
                'logfile ""',
                f"sentinel monitor {MASTER_NAME} {master_ip} {REDIS_PORT} 2",
                f"sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}",
                f"sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}",
                f"sentinel parallel-syncs {MASTER_NAME} 1",
            ]
        )
        + "\n"
    )


class RedisBackend(ServerCluster):
    port = REDIS_PORT
    # its data files under /srv/data: the AOF (Redis 7: appendonlydir/ with a manifest, base
    # and incremental files) and an RDB snapshot (none unless a rewrite or SAVE makes one)
    data_files = ("appendonlydir/*", "dump.rdb")
    corrupt_files = ("appendonlydir/*.incr.aof", "dump.rdb")
    fsync: str | None = None  # the run's --fsync (service.py's RedisSettings): None, no AOF
    # Measured: redis-server 7.0.15 under LD_PRELOAD=libfaketime 0.9.10 dies at start-up
    # ("unexpected recursive calls to clock_gettime()", with or without monotonic faking).
    faketime = False
    timewarp = True  # zkj-timewarp patches its vDSO at exec (docker/timewarp.py)
    no_faketime = "libfaketime 0.9.10 breaks redis-server 7.0's start-up (recursive clock_gettime)"

    @classmethod
    def for_spec(cls, spec: TestSpec, store_dir: Path, **kw: Any) -> RedisBackend:
        backend = super().for_spec(spec, store_dir, **kw)
        # Its settings as a table: service.py (RedisSettings) imports this module for its
        # image, so naming the type here would make a cycle.
        backend.fsync = (spec.service.to_json() if spec.service else {}).get("fsync")
        return backend

    @property
    def sentinel(self) -> bool:
        return self.info.name == "redis-sentinel"

    def plan(self) -> list[Container]:
        master = self.nodes[0].ip
        out = [
            Container(
                n,
                ["server"],
                {"redis.conf": redis_conf(master if self.sentinel and i else None, self.fsync)},
            )
            for i, n in enumerate(self.nodes)
        ]
        if self.sentinel:
            for i in range(1, SENTINELS + 1):
                s = Node(f"s{i}", 100 + i, self.address_of(i, helper=True), SENTINEL_PORT)
                out.append(
                    Container(s, ["sentinel"], {"sentinel.conf": sentinel_conf(master)}, "sentinel")
                )
        return out

    def connect_string(self, nodes: list[Node] | None = None) -> str:
        if self.sentinel and nodes is None:
            return f"redis-sentinel://{MASTER_NAME}@" + ",".join(s.address for s in self.helpers)
        return "redis://" + ",".join(n.address for n in (nodes or self.nodes))

    def host_session(self, timeout_s: float):

        return RedisSession(self.connect_string(), timeout=timeout_s)

    # ---- asking the servers (from the host, which reaches every container by its IP) ------
    def _redis(self, node: Node, timeout: float = 0.5):
        # here, not at the top: a service's client library, loaded by runs of that service
        import redis

        return redis.Redis(
            host=node.ip, port=node.port, socket_timeout=timeout, socket_connect_timeout=timeout
        )

    def _info(self, node: Node, section: str) -> dict[str, Any] | None:
        r = self._redis(node)
        try:
            return r.info(section)
        except Exception:  # noqa: BLE001 - down, paused, cut off: no answer
            return None
        finally:
            r.close()

    def role_of(self, node: Node) -> str:
        if node in self.helpers:
            return "sentinel"
        info = self._info(node, "replication")
        return str(info.get("role")) if info else "not serving"

    def sentinel_master(self) -> str | None:
        """The master's IP as a majority of the Sentinels name it now (None: no majority)."""
        votes: dict[str, int] = {}
        for s in self.helpers:
            r = self._redis(s)
            try:
                addr = r.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
                ip = addr[0].decode() if addr else None
            except Exception:  # noqa: BLE001
                ip = None
            finally:
                r.close()
            if ip:
                votes[ip] = votes.get(ip, 0) + 1
        best = max(votes.items(), key=lambda kv: kv[1], default=(None, 0))
        return best[0] if best[1] * 2 > len(self.helpers) else None

    def leader(self) -> Node | None:
        if self.info.name == "redis":
            return self.nodes[0]
        if not self.sentinel:
            return None  # independent masters: nobody leads
        ip = self.sentinel_master()
        return next((n for n in self.nodes if n.ip == ip), None)

    def before_kill(self) -> dict[str, Any]:
        """Each server's role, replication offset (a master's `master_repl_offset`, a
        replica's `slave_repl_offset`: what it has applied) and lock keys with their values,
        read from the host in a few ms right before a kill (nemesis/process.py)."""

        def one(node: Node) -> dict[str, Any]:
            r = self._redis(node)
            try:
                info = r.info("replication")
                master = info.get("role") == "master"
                locks = {
                    k.decode(): (r.get(k) or b"").decode(errors="replace")
                    for k in r.scan_iter(match=LOCK_PREFIX + "*")
                }
                offset = info.get("master_repl_offset" if master else "slave_repl_offset")
                return {"role": info.get("role"), "offset": offset, "locks": locks}
            except Exception as e:  # noqa: BLE001 - down or cut off: say so
                return {"error": f"{type(e).__name__}: {e}"}
            finally:
                r.close()

        return {n.name: v for n, v in zip(self.nodes, self._pool.map(one, self.nodes), strict=True)}

    def ready(self) -> bool:
        answers = [self._info(n, "replication") for n in self.nodes]
        roles = [r for r in answers if r]
        if len(roles) < len(answers):
            return False
        if not self.sentinel:
            return all(r.get("role") == "master" for r in roles)
        if roles[0].get("connected_slaves", 0) < len(self.nodes) - 1:
            return False
        if any(r.get("master_link_status") != "up" for r in roles[1:]):
            return False
        for s in self.helpers:  # every Sentinel knows the master, its replicas and the others
            r = self._redis(s)
            try:
                m = r.sentinel_master(MASTER_NAME)  # parsed by redis-py: str keys, int values
            finally:
                r.close()
            if int(m.get("num-other-sentinels", 0)) < len(self.helpers) - 1:
                return False
            if int(m.get("num-slaves", 0)) < len(self.nodes) - 1:
                return False
        return True


redis_backend = RedisBackend.for_spec  # BackendInfo.target
