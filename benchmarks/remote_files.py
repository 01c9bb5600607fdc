"""What copying a run's files through the engine's API costs, against bind mounts.

Needs root (it starts a second dockerd in its own mount namespace, tests/second_engine.py with
`private_fs=True`, where none of this machine's project paths exist). Prints, with the 1-minute
load average next to each figure:
- the probe (does this engine share our filesystem?) on each engine, median of --probes;
- the tar of the client code (our package and the client libraries) and one put_archive of it;
- whole `zkjepsen test` runs (kazoo lock, 3 servers, 2 clients, 5 s, no fault), --runs of each
  configuration, interleaved: `bind` (ZKJEPSEN_FILES=bind: bind mounts, no probe, as before the
  copying existed), `auto` (the default: probe, then bind mounts on the machine's engine),
  `copy` (ZKJEPSEN_FILES=copy on the machine's engine) and `remote` (the namespaced engine,
  which must copy). Setup = from "starting" to "clients started" in the run log (servers up,
  host session, workload setup, clients connected); teardown = "tearing down" to "torn down".
No assertion: figures for docs/ci.md.

    .venv/bin/python benchmarks/remote_files.py [--runs 3] [--probes 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from second_engine import preload_image, second_engine  # noqa: E402

from zkjepsen.backends.zookeeper.image import zookeeper_recipe  # noqa: E402
from zkjepsen.docker import mounts, resources  # noqa: E402
from zkjepsen.docker.engine import Engine, provide_image  # noqa: E402

RUN = [
    "test", "--recipe", "kazoo", "--workload", "lock", "--nemesis", "none", "--nodes", "3",
    "--clients", "2", "--time-limit", "5", "--session-timeout", "3",
]  # fmt: skip


def load() -> float:
    return os.getloadavg()[0]


def probes(url: str, n: int) -> tuple[float, bool]:
    client = Engine.parse(url).client()
    image = provide_image([Engine.parse(url)], recipe=zookeeper_recipe())
    times, shared = [], None
    for _ in range(n):
        run_id = resources.new_run_id()
        with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
            t = time.monotonic()
            shared = mounts.shares_filesystem(client, image, run_id, Path(d))
            times.append(time.monotonic() - t)
        resources.remove_run(client, run_id)
    return statistics.median(times), bool(shared)


def code_copy(url: str) -> tuple[int, float, float]:
    from zkjepsen.client.pool import SRC_ROOT, client_library_binds

    binds = {str(SRC_ROOT): {"bind": "/opt/zkjepsen/src"}, **client_library_binds()}
    t = time.monotonic()
    data = mounts.tar_of(sorted((h, b["bind"]) for h, b in binds.items()))
    tar_s = time.monotonic() - t
    client = Engine.parse(url).client()
    run_id = resources.new_run_id()
    try:
        cid = client.api.create_container(
            provide_image([Engine.parse(url)], recipe=zookeeper_recipe()),
            name=f"{run_id}-bench",
            entrypoint=["true"],
            labels=resources.labels(run_id, "client"),
        )["Id"]
        t = time.monotonic()
        client.api.put_archive(cid, "/", data)
        put_s = time.monotonic() - t
    finally:
        resources.remove_run(client, run_id)
    return len(data), tar_s, put_s


def offsets(run_log: Path) -> dict[str, float]:
    out = {}
    for line in run_log.read_text().splitlines():
        m = re.match(r"\S+ \+\s*([\d.]+)s (.*)", line)
        if not m:
            continue
        t, text = float(m.group(1)), m.group(2)
        for key, prefix in (
            ("start", "run "),
            ("up", "ensemble zkj"),
            ("clients", "2 clients started"),
            ("down0", "tearing down"),
            ("down1", "ensemble torn down"),
        ):
            if text.startswith(prefix) and key not in out:
                out[key] = t
    return out


def one_run(config: str, engine2: str, store: Path) -> dict[str, float] | None:
    env = dict(os.environ)
    env[mounts.MODE_ENV] = {"bind": "bind", "copy": "copy"}.get(config, "auto")
    engine = engine2 if config == "remote" else "default"
    res = subprocess.run(
        [sys.executable, "-m", "zkjepsen.cli", *RUN, "--engine", engine, "--store", str(store)],
        env=env,
        capture_output=True,
        text=True,
    )
    logs = sorted(store.glob("*/2*/run.log"), key=lambda p: p.stat().st_mtime)
    if res.returncode != 0 or not logs:
        print(f"  {config}: exit {res.returncode}: {res.stderr.strip()[-300:]}")
        return None
    o = offsets(logs[-1])
    return {
        "up": o["up"] - o["start"],
        "setup": o["clients"] - o["start"],
        "teardown": o["down1"] - o["down0"],
        "load": load(),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--probes", type=int, default=5)
    args = ap.parse_args()
    with second_engine(private_fs=True) as engine2, tempfile.TemporaryDirectory() as work:
        preload_image(provide_image([Engine()], recipe=zookeeper_recipe()), engine2)
        for url in ("default", engine2):
            s, shared = probes(url, args.probes)
            print(
                f"probe {url}: shares our filesystem: {shared}; {s * 1000:.0f} ms "
                f"(load {load():.1f})"
            )
        size, tar_s, put_s = code_copy(engine2)
        print(
            f"client code tar: {size / 1e6:.1f} MB, built in {tar_s * 1000:.0f} ms "
            f"(once per run), put_archive {put_s * 1000:.0f} ms per client (load {load():.1f})"
        )
        configs = ["bind", "auto", "copy", "remote"]
        got: dict[str, list[dict]] = {c: [] for c in configs}
        for i in range(args.runs):
            for c in configs:
                r = one_run(c, engine2, Path(work) / c)
                if r:
                    got[c].append(r)
                    print(f"  run {i + 1} {c:<6} " + " ".join(f"{k} {v:.1f}" for k, v in r.items()))
        print(
            f"\n{'config':<8} {'runs':>4} {'servers up s':>12} {'setup s':>8} "
            f"{'teardown s':>10} {'load1':>6}"
        )
        for c in configs:
            rs = got[c]
            if not rs:
                continue
            med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            print(
                f"{c:<8} {len(rs):>4} {med['up']:>12.1f} {med['setup']:>8.1f} "
                f"{med['teardown']:>10.1f} {med['load']:>6.1f}"
            )


if __name__ == "__main__":
    main()
