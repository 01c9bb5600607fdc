"""The herd effect: watch notifications and `get_children` calls per release, children-watch lock
(`herd`) against predecessor-watch lock (`predecessor`), as the number of waiters grows.

For each recipe and each n in --waiters: n+1 host sessions, each with its own CountingClient (a
proxy counting calls and delivered watch notifications). One session takes the lock, the n
others queue up behind it; then the counters are zeroed and the queue drains (each waiter, once
it holds, releases at once). Per release = totals / (n + 1) releases. The article claims O(n)
for the children watch and O(1) for the predecessor watch.

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
        t0 = time.monotonic()
        locks[0].release()
        for t in threads:
            t.join(120)
        elapsed = time.monotonic() - t0
        snaps = [c.snapshot() for _, c in sessions]
        releases = n + 1
        notes = sum(s["notifications"] for s in snaps)
        lists = sum(s.get("get_children", 0) for s in snaps)
        return {
            "recipe": recipe,
            "waiters": n,
            "acquired": len(done),
            "notifications_per_release": round(notes / releases, 2),
            "get_children_per_release": round(lists / releases, 2),
            "drain_s": round(elapsed, 2),
        }
    finally:
        for zk, _ in sessions:
            zk.stop()
            zk.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", help="connect string of a running ensemble (default: start one)")
    ap.add_argument("--waiters", default="5,20,50")
    ap.add_argument("--recipes", default="herd,predecessor")
    args = ap.parse_args()
    with contextlib.ExitStack() as stack:
        hosts = args.hosts
        if not hosts:
            from zkjepsen.harness.ensemble import DockerEnsemble, EnsembleSpec
            from zkjepsen.store import new_run_dir

            ens = stack.enter_context(
                DockerEnsemble(EnsembleSpec(nodes=3), new_run_dir("bench-herd").path)
            )
            hosts = ens.connect_string()
        rows = [
            measure(hosts, r, int(n))
            for n in args.waiters.split(",")
            for r in args.recipes.split(",")
        ]
    cols = [
        "waiters",
        "acquired",
        "notifications_per_release",
        "get_children_per_release",
        "drain_s",
    ]
    print(f"{'recipe':12}" + "".join(f"{c:>28}" for c in cols))
    for row in rows:
        print(f"{row['recipe']:12}" + "".join(f"{row[c]!s:>28}" for c in cols))


if __name__ == "__main__":
    main()
