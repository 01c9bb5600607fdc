"""What a skewed ZooKeeper clock does to client sessions (libfaketime in the server JVMs).

For each case: a fresh client session (timeout 6 s, connected to a follower, idle but for kazoo's
own pings), then one clock change on one server, then how long (real seconds) until the client
sees its session LOST (None: it survived the observation window). Between cases every clock is
reset by restarting the skewed server (its new JVM starts on real time) and the ensemble must
serve again.

    .venv/bin/python benchmarks/nemesis_clock.py [--repeat 2]

The `pause` cases run the client in a host subprocess and SIGSTOP it for a fraction of its
session timeout (below it), to show a fast leader turning a harmless pause into an expiry.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
from zkjepsen.nemesis import clock
from zkjepsen.nemesis.targets import NemesisContext

TIMEOUT_S = 6.0
WINDOW_S = 15.0

CLIENT = r"""
import sys, time
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=float(sys.argv[2]))
zk.add_listener(lambda s: print(f"{time.monotonic():.3f} {s}", flush=True))
zk.start(timeout=10)
print(f"{time.monotonic():.3f} STARTED", flush=True)
while True:
    time.sleep(0.1)
"""

# (label, target "leader"|"follower", faketime text, pause seconds before watching or 0)
CASES = [
    ("control 1x", "leader", "+0 x1", 0),
    ("leader x1.5", "leader", "+0 x1.5", 0),
    ("leader x2", "leader", "+0 x2", 0),
    ("leader x3", "leader", "+0 x3", 0),
    ("leader x5", "leader", "+0 x5", 0),
    ("follower x5", "follower", "+0 x5", 0),
    ("leader +30s step", "leader", "+30", 0),
    ("leader -30s step", "leader", "-30", 0),
    ("pause 0.6T, leader 1x", "leader", "+0 x1", 0.6 * TIMEOUT_S),
    ("pause 0.6T, leader x2", "leader", "+0 x2", 0.6 * TIMEOUT_S),
]


def run_case(ens, ctx, script: Path, target: str, text: str, pause_s: float) -> float | None:
    leader = ens.leader()
    followers = [n for n in ens.nodes if n != leader]
    # The client sits on a follower that is NOT the skewed node.
    victim = leader if target == "leader" else followers[0]
    host = followers[-1]
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    p = subprocess.Popen(
        [sys.executable, str(script), host.address, str(TIMEOUT_S)],
        stdout=log,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while "STARTED" not in Path(log.name).read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        clock.write_faketime(ens, victim, text)
        ctx.dirty_clocks.add(victim.name)
        time.sleep(clock.CACHE_S)  # let the JVM read it before the clock starts to matter
        t = time.monotonic()
        if pause_s:
            os.kill(p.pid, signal.SIGSTOP)
            time.sleep(pause_s)
            os.kill(p.pid, signal.SIGCONT)
        while time.monotonic() - t < WINDOW_S:
            for line in Path(log.name).read_text().splitlines():
                stamp, _, state = line.partition(" ")
                if state == "LOST" and float(stamp) >= t:
                    return round(float(stamp) - t, 2)
            time.sleep(0.05)
        return None
    finally:
        p.kill()
        p.wait()
        os.unlink(log.name)
        # Cases must not leak into each other: stepping a clock back stalls the leader's
        # session expiry for as long as the lead was, so restart the skewed JVM on real time.
        clock.write_faketime(ens, victim, clock.REAL)
        ctx.dirty_clocks.clear()
        ens.kill(victim)
        ens.restart(victim)
        ens.wait_for_quorum(60)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    from zkjepsen.store import new_run_dir

    script = Path(tempfile.mkdtemp()) / "client.py"
    script.write_text(CLIENT)
    with ZooKeeperEnsemble(EnsembleSpec(nodes=3), new_run_dir("bench-nemesis-clock").path) as ens:
        ctx = NemesisContext(ens, None, TIMEOUT_S)
        print(
            f"session timeout {TIMEOUT_S:g}s, window {WINDOW_S:g}s; seconds until LOST "
            "(None = survived), measured from when the JVM has certainly read the change"
        )
        for label, target, text, pause in CASES:
            took = [run_case(ens, ctx, script, target, text, pause) for _ in range(a.repeat)]
            print(f"{label:24s} {text:8s} -> {took}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
