"""The herd effect: watch notifications and `get_children` calls per release, children-watch lock
(`herd`) against predecessor-watch lock (`predecessor`), as the number of waiters grows; and the
real libraries (`curator-java`: Curator's InterProcessMutex, `go-zk`: go-zookeeper's zk.Lock)
next to the ports.

For each recipe and each n in --waiters: n+1 host sessions, each with its own CountingClient (a
proxy counting calls and delivered watch notifications). One session takes the lock, the n
others queue up behind it; then the counters are zeroed and the queue drains (each waiter, once
it holds, releases at once). Per release = totals / (n + 1) releases. The article claims O(n)
for the children watch and O(1) for the predecessor watch.

A real library is a program (client wire protocol), so its watches cannot be counted from
inside: every recipe is also counted on the servers, as the watches they fired (`mntr`:
node_{created,deleted,changed,children}_watch_count, summed over the servers). For a driver,
the n+1 programs run in one container of the client image (`docker exec -i` each), the
recorder's ProgramClient on the host drives them; the `get_children` column is then "-".

    .venv/bin/python benchmarks/herd.py                       # own 3-node ensemble
    .venv/bin/python benchmarks/herd.py --hosts 10.x.y.11:2181 # an ensemble from `cluster up`

Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
import uuid

WATCH_METRICS = ("created", "deleted", "changed", "children")


def watches_fired(servers: list[tuple[str, int]]) -> int:
    """Watches the servers have fired so far (each one is a notification sent to a client)."""
    from zkjepsen.backends.zookeeper.fourlw import four_letter

    total = 0
    for ip, port in servers:
        text = four_letter(ip, port, "mntr", 5.0) or ""
        for line in text.splitlines():
            key, _, value = line.partition("\t")
            if any(key == f"zk_sum_node_{m}_watch_count" for m in WATCH_METRICS):
                total += int(float(value))
    return total


def measure(hosts: str, recipe: str, n: int) -> dict:
    from kazoo.client import KazooClient

    from zkjepsen.recipes import make_recipe
    from zkjepsen.recipes.instrument import CountingClient

    path = f"/herd/{recipe}-{n}-{uuid.uuid4().hex[:6]}"
    sessions = []
    for _ in range(n + 1):
        zk = KazooClient(hosts=hosts, timeout=10.0)
        zk.start(timeout=15)
        sessions.append((zk, CountingClient(zk)))
    try:
        locks = [
            make_recipe(recipe, c, path, hosts=hosts, identifier=f"w{i}", params={})
            for i, (_, c) in enumerate(sessions)
        ]
        assert locks[0].acquire(10) is not None
        done = []

        def waiter(lock) -> None:
            if lock.acquire(120) is not None:
                lock.release()
                done.append(1)

        threads = [threading.Thread(target=waiter, args=(lk,)) for lk in locks[1:]]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while len(sessions[0][0].get_children(path)) < n + 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # let every waiter finish its listing and sit on its watch
        for _, c in sessions:
            c.reset()
        fired0 = watches_fired(servers_of(hosts))
        t0 = time.monotonic()
        locks[0].release()
        for t in threads:
            t.join(120)
        elapsed = time.monotonic() - t0
        time.sleep(0.5)  # the last notifications reach the servers' counters
        fired = watches_fired(servers_of(hosts)) - fired0
        snaps = [c.snapshot() for _, c in sessions]
        releases = n + 1
        notes = sum(s["notifications"] for s in snaps)
        lists = sum(s.get("get_children", 0) for s in snaps)
        return {
            "recipe": recipe,
            "waiters": n,
            "acquired": len(done),
            "notifications_per_release": round(notes / releases, 2),
            "server_watches_per_release": round(fired / releases, 2),
            "get_children_per_release": round(lists / releases, 2),
            "drain_s": round(elapsed, 2),
        }
    finally:
        for zk, _ in sessions:
            zk.stop()
            zk.close()


def servers_of(hosts: str) -> list[tuple[str, int]]:
    return [(h.rpartition(":")[0], int(h.rpartition(":")[2])) for h in hosts.split(",")]


def measure_program(ens, recipe: str, n: int, tmp) -> dict:
    """As `measure`, for a registered driver (Java, Go): n+1 programs in one client-image
    container, each driven through the client wire protocol from the host."""
    import docker
    from kazoo.client import KazooClient

    from zkjepsen.client.program_client import ProgramClient
    from zkjepsen.client.recorder import Recorder
    from zkjepsen.docker import resources
    from zkjepsen.recipes import RECIPES
    from zkjepsen.workloads.context import ClientContext

    hosts = ens.connect_string()
    path = f"/herd/{recipe}-{n}-{uuid.uuid4().hex[:6]}"
    api = docker.from_env()
    # Host network reaches the ensemble's bridge addresses; labelled with the ensemble's run
    # id, so the ensemble's teardown (or `zkjepsen cleanup` after a crash) removes it.
    box = api.containers.run(
        ens.image,
        entrypoint=["sleep", "infinity"],
        network_mode="host",
        labels=resources.labels(ens.run_id, "client", client=0),
        mem_limit="8g",
        detach=True,
    )
    zk = KazooClient(hosts=hosts, timeout=10.0)
    zk.start(timeout=15)
    zk.ensure_path(path)
    clients = []
    try:
        for i in range(n + 1):
            rec = Recorder(str(tmp / f"{recipe}-{n}-{i}.jsonl"), time.monotonic_ns(), i + 1, n + 1)
            ctx = ClientContext(
                client=i + 1,
                nclients=n + 1,
                session=None,
                hosts=hosts,
                recipe=recipe,
                params={},
                recorder=rec,
                deadline=time.monotonic() + 3600,
                stop_event=threading.Event(),
            )
            argv = ["docker", "exec", "-i", box.id, *RECIPES[recipe].command]
            client = ProgramClient(
                ctx,
                argv,
                servers=hosts,
                session_timeout_s=10.0,
                workload="lock",
                lock_path=path,
                init_timeout_s=120.0,
            )
            clients.append(client)
        # A few JVMs at a time, each with a long init deadline: 51 starting at once on a busy
        # 2-core machine miss the usual 20 s and get restarted over and over.
        for k in range(0, len(clients), 4):
            starters = [threading.Thread(target=c.start) for c in clients[k : k + 4]]
            for t in starters:
                t.start()
            for t in starters:
                t.join(300)
        assert all(c.started for c in clients), "a driver did not start"
        assert clients[0].call("acquire", 30, timeout_ms=10000).ok
        done = []

        def waiter(c) -> None:
            if c.call("acquire", 200, timeout_ms=180000).ok:
                c.call("release", 30)
                done.append(1)

        threads = [threading.Thread(target=waiter, args=(c,)) for c in clients[1:]]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 120
        while len(zk.get_children(path)) < n + 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # let every waiter finish its listing and sit on its watch
        fired0 = watches_fired(servers_of(hosts))
        t0 = time.monotonic()
        clients[0].call("release", 30)
        for t in threads:
            t.join(200)
        elapsed = time.monotonic() - t0
        time.sleep(0.5)
        fired = watches_fired(servers_of(hosts)) - fired0
        return {
            "recipe": recipe,
            "waiters": n,
            "acquired": len(done),
            "notifications_per_release": "-",
            "server_watches_per_release": round(fired / (n + 1), 2),
            "get_children_per_release": "-",
            "drain_s": round(elapsed, 2),
        }
    finally:
        for c in clients:
            with contextlib.suppress(Exception):
                c.program.close()
        box.remove(force=True)
        zk.delete(path, recursive=True)
        zk.stop()
        zk.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", help="connect string of a running ensemble (default: start one)")
    ap.add_argument("--waiters", default="5,20,50")
    ap.add_argument("--recipes", default="herd,predecessor,curator,kazoo,curator-java,go-zk")
    args = ap.parse_args()
    from zkjepsen.recipes import RECIPES

    programs = [r for r in args.recipes.split(",") if RECIPES[r].command]
    if args.hosts and programs:
        ap.error(f"{', '.join(programs)} run in the client image: drop --hosts (own ensemble)")
    with contextlib.ExitStack() as stack:
        hosts, ens = args.hosts, None
        d = None
        if not hosts:
            from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
            from zkjepsen.store import new_run_dir

            d = new_run_dir("bench-herd").path
            ens = stack.enter_context(ZooKeeperEnsemble(EnsembleSpec(nodes=3), d))
            hosts = ens.connect_string()
        rows = []
        for n in args.waiters.split(","):
            for r in args.recipes.split(","):
                row = (
                    measure_program(ens, r, int(n), d)
                    if r in programs
                    else measure(hosts, r, int(n))
                )
                print(row, flush=True)
                rows.append(row)
    cols = [
        "waiters",
        "acquired",
        "notifications_per_release",
        "server_watches_per_release",
        "get_children_per_release",
        "drain_s",
    ]
    print(f"{'recipe':14}" + "".join(f"{c:>28}" for c in cols))
    for row in rows:
        print(f"{row['recipe']:14}" + "".join(f"{row[c]!s:>28}" for c in cols))


if __name__ == "__main__":
    main()
