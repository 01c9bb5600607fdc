"""What a leader kill's cycle costs on a 3-node ZooKeeper ensemble: the kill, a new leader, the
restart and the whole ensemble again (every server serving, one leading: what the gate's next
kill waits for), with the container (`docker kill` + `docker start`) or in place (the server
process under docker/supervise.py, ZooKeeper's `restart = "process"`). Prints figures, asserts
nothing; run it under the machine's timing lock, both ways back to back:

    flock /tmp/zkj-timing.lock .venv/bin/python benchmarks/kill_restart.py [--kills 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
from zkjepsen.backends.zookeeper.image import zookeeper_tag


def cycles(in_place: bool, kills: int) -> list[float]:
    spec = EnsembleSpec(3, image=zookeeper_tag(), restart_in_place=in_place)
    out = []
    with tempfile.TemporaryDirectory() as d, ZooKeeperEnsemble(spec, Path(d)) as ens:
        for _ in range(kills):
            t0 = time.monotonic()
            old = ens.leader()
            assert old is not None
            ens.kill(old)
            t_kill = time.monotonic()
            while (new := ens.leader()) is None or new.name == old.name:
                time.sleep(0.05)
            t_led = time.monotonic()
            ens.restart(old)
            t_start = time.monotonic()
            while not ens.whole():
                time.sleep(0.05)
            t_whole = time.monotonic()
            out.append(t_whole - t0)
            print(
                f"{'in place' if in_place else 'container'}: kill {t_kill - t0:.2f} s, new "
                f"leader {t_led - t_kill:.2f} s, restart {t_start - t_led:.2f} s, whole "
                f"{t_whole - t_start:.2f} s: {t_whole - t0:.2f} s (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=6)
    a = ap.parse_args()
    for in_place in (True, False):
        c = cycles(in_place, a.kills)
        print(
            f"{'in place' if in_place else 'container'}: cycle median {statistics.median(c):.2f} s "
            f"({min(c):.2f}-{max(c):.2f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
