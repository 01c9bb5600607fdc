"""What a command in a client's network namespace costs: a one-shot sidecar (created, started,
waited for, removed) against a sidecar kept for the run (docker/netns.py), each command an exec
in it or a line on its shell's attach stream (the channel). Prints figures, asserts nothing.
Needs the ZooKeeper node image (`zkjepsen image build`).

    .venv/bin/python benchmarks/sidecar.py [--image NAME] [--n 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from zkjepsen.docker import netns, resources


def timed(f) -> float:
    t = time.monotonic()
    code, out = f()
    assert code == 0, out  # a failed command's time would mean nothing
    return time.monotonic() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", default=None, help="default: the ZooKeeper node image")
    ap.add_argument("--n", type=int, default=5)
    a = ap.parse_args()
    if a.image is None:
        from zkjepsen.backends.zookeeper.image import zookeeper_tag

        a.image = zookeeper_tag()
    run_id = "bench-sidecar-" + os.urandom(3).hex()  # labels all it makes: cleanup finds them
    c = resources.docker_client()
    target = c.containers.run(
        a.image, ["600"], entrypoint=["sleep"], detach=True,
        labels=resources.labels(run_id, "client"),
    )  # fmt: skip
    argv = ["iptables", "-w", "-S"]
    try:
        one = [
            timed(lambda: netns.netns_exec(c, target.id, a.image, argv, run_id)) for _ in range(a.n)
        ]
        shell = netns.NetnsShell(c, target.id, a.image, run_id)
        first = timed(lambda: shell.exec(argv))
        assert shell.channel is not None, "no channel: the kept sidecar fell back to execs"
        channel, execs = [], []
        for _ in range(a.n):  # interleaved: the same load for both
            channel.append(timed(lambda: shell.exec(argv)))
            kept, shell.channel = shell.channel, None  # this one as an exec
            execs.append(timed(lambda: shell.exec(argv)))
            shell.channel = kept
        shell.close()
        print(
            f"one-shot sidecar: median {statistics.median(one):.2f} s (max {max(one):.2f}); "
            f"kept: the first {first:.2f} s (makes it), then an exec: median "
            f"{statistics.median(execs):.2f} s (max {max(execs):.2f}), a line on its channel: "
            f"median {statistics.median(channel):.3f} s (max {max(channel):.3f}); "
            f"load {os.getloadavg()}"
        )
    finally:
        for x in c.containers.list(all=True, filters={"label": f"{resources.RUN_LABEL}={run_id}"}):
            x.remove(force=True)


if __name__ == "__main__":
    main()
