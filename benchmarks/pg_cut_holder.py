"""How long does PostgreSQL keep a lock whose holder was cut off (or frozen)?

For each lock (`for-update`, `advisory`) and server setting: client A (its own container, the
real lock module on psycopg) takes the lock and sits in its critical section, idle; the host then
cuts A off from the server (iptables in A's network namespace, from a sidecar, as the nemesis's
`isolate-client` does) or freezes it (`docker pause`, as `pause-client`); client B, connected
before the fault, polls the lock every 50 ms (`FOR UPDATE NOWAIT` / `pg_try_advisory_lock`).
Printed: seconds from the fault to B getting the lock (the time the server kept a dead holder's
lock), or "> cap" when it never did within the cap; and when the server's log says it ended A's
connection.

    .venv/bin/python benchmarks/pg_cut_holder.py [--runs 5] [--cap 30]

Settings compared: `tuned` (what the backend runs with: TCP keepalives idle 2 s, interval 1 s,
3 probes, tcp_user_timeout 5 s), `os-default` (keepalives left to Linux: first probe after
7200 s), and `idle-tx-3s` (tuned + idle_in_transaction_session_timeout 3 s).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from zkjepsen.backends.postgres.image import postgres_image
from zkjepsen.backends.registry import make_backend
from zkjepsen.backends.zookeeper.image import zookeeper_tag
from zkjepsen.client.pool import SRC_ROOT, client_library_binds
from zkjepsen.docker import netns, resources
from zkjepsen.docker.image import ensure_image

HOLDER = r"""
import sys, time
from zkjepsen.backends.postgres.session import PostgresSession
from zkjepsen.recipes.pg.advisory import AdvisoryLock
from zkjepsen.recipes.pg.for_update import ForUpdateLock
kind, servers, name = sys.argv[1:4]
session = PostgresSession(servers)
session.start()
cls = {"for-update": ForUpdateLock, "advisory": AdvisoryLock}[kind]
lock = cls(session, name, identifier="client-1")
tok = lock.acquire(5).token
print("HELD", tok, time.monotonic(), flush=True)
time.sleep(3600)
"""

POLLER = r"""
import sys, time
import psycopg
kind, servers, name, cap = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
host = servers.split(":")[0]
c = psycopg.connect(host=host, user="postgres", dbname="postgres", autocommit=True,
                    application_name="zkjepsen-c2-poller")
print("READY", time.monotonic(), flush=True)
end = time.monotonic() + cap
while time.monotonic() < end:
    if kind == "advisory":
        got = c.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (name,)).fetchone()[0]
    else:
        c.autocommit = False
        try:
            c.execute("SELECT 1 FROM zkjepsen_lock_rows WHERE name = %s FOR UPDATE NOWAIT",
                      (name,)).fetchone()
            got = True
        except psycopg.errors.LockNotAvailable:
            got = False
        c.rollback()
        c.autocommit = True
    if got:
        print("GOT", time.monotonic(), flush=True)
        sys.exit(0)
    time.sleep(0.05)
print("NEVER", time.monotonic(), flush=True)
"""

SETTINGS = {  # --param values of the postgres backend
    "tuned": {},
    "os-default": {"pg_keepalives": "os"},
    "idle-tx-3s": {"pg_idle_tx_timeout_s": 3},
}


def start_script(cluster, index: int, code_dir: Path, script: str, args: list[str]):
    api = cluster.client.api
    where = cluster.client_endpoint(index)
    cid = api.create_container(
        where.image,
        entrypoint=["python3", f"/b/{script}", *args],
        labels=resources.labels(cluster.run_id, "client"),
        environment={"PYTHONPATH": "/opt/zkjepsen/src:/opt/zkjepsen/site", "PYTHONUNBUFFERED": "1"},
        host_config=api.create_host_config(
            binds={
                str(SRC_ROOT): {"bind": "/opt/zkjepsen/src", "mode": "ro"},
                **client_library_binds(),
                str(code_dir): {"bind": "/b", "mode": "ro"},
            }
        ),
        networking_config=api.create_networking_config(
            {where.network: api.create_endpoint_config(ipv4_address=where.ip)}
        ),
    )["Id"]
    api.start(cid)
    return cid


def wait_line(api, cid: str, word: str, timeout: float) -> list[str] | None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for line in api.logs(cid, stdout=True, stderr=False).decode().splitlines():
            if line.startswith(word):
                return line.split()
        time.sleep(0.05)
    return None


def one(cluster, kind: str, fault: str, cap: float, code_dir: Path, n: int) -> str:
    api = cluster.client.api
    name = f"/bench/{kind}/{n}"
    servers = cluster.connect_string()
    if kind == "for-update":
        cluster.psql(f"INSERT INTO zkjepsen_lock_rows VALUES ('{name}') ON CONFLICT DO NOTHING")
    holder = start_script(cluster, 1, code_dir, "holder.py", [kind, servers, name])
    try:
        if wait_line(api, holder, "HELD", 30) is None:
            return "holder never acquired"
        # The poller polls from before the fault, so its start-up time is not counted.
        poller = start_script(cluster, 2, code_dir, "poller.py", [kind, servers, name, str(cap)])
        if wait_line(api, poller, "READY", 30) is None:
            return "poller never connected"
        time.sleep(0.5)  # the holder sits idle in its critical section
        if fault == "isolate":
            ip = cluster.nodes[0].ip
            rules = f"iptables -I INPUT -s {ip} -j DROP && iptables -I OUTPUT -d {ip} -j DROP"
            image = cluster.client_endpoint(1).image  # has iptables
            code, out = netns.netns_exec(
                cluster.client, holder, image, ["sh", "-c", rules], cluster.run_id
            )
            assert code == 0, out
        else:
            api.pause(holder)
        t_fault = time.monotonic()  # the rules are in place (the sidecar has exited)
        got = wait_line(api, poller, "GOT", cap + 30)
        api.remove_container(poller, force=True)
        if got is None:
            return f"> {cap:g}"
        return f"{float(got[1]) - t_fault:.1f}"
    finally:
        api.remove_container(holder, force=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cap", type=float, default=30.0)
    args = ap.parse_args()
    client = resources.docker_client()
    plan = [
        ("tuned", "isolate"),
        ("os-default", "isolate"),
        ("tuned", "pause"),
        ("idle-tx-3s", "pause"),
    ]
    with tempfile.TemporaryDirectory() as d:
        code_dir = Path(d)
        (code_dir / "holder.py").write_text(HOLDER)
        (code_dir / "poller.py").write_text(POLLER)
        server_image = ensure_image(client, None, recipe=postgres_image()).tag
        for setting, fault in plan:
            cluster = make_backend(
                "postgres",
                SimpleNamespace(nodes=1, params=SETTINGS[setting], tick_ms=500, service=None),
                code_dir / setting,
                client=client,
                engine=resources.DEFAULT_ENGINE,
                server_image=server_image,
                client_image=zookeeper_tag(),
            )
            with cluster as c:
                for kind in ("for-update", "advisory"):
                    got = [one(c, kind, fault, args.cap, code_dir, i) for i in range(args.runs)]
                    nums = [float(g) for g in got if g[0].isdigit()]
                    med = f"median {statistics.median(nums):.1f} s" if nums else "no release"
                    print(f"{setting:10} {fault:7} {kind:10}: lock free after {got} ({med})")
                log = c.logs(c.nodes[0])
                ended = [
                    ln
                    for ln in log.splitlines()
                    if "could not receive" in ln
                    or "terminating connection" in ln
                    or "timeout" in ln.lower()
                ]
                for ln in ended[:4]:
                    print(f"    server log: {ln[:150]}")


if __name__ == "__main__":
    main()
