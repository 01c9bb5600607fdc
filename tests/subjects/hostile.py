"""A client program that fights its faults and its neighbours: as soon as the recipe is built, a
thread keeps running `iptables -F`/`-X`/`-P ... ACCEPT` (to undo a network fault), probes every
server's client port, and tries to append to every client history it can find besides its own
(and to open the start barrier). It records what it tried and what happened in its own
`/out/attack.jsonl`, which tests/integration/test_least_privilege.py reads.

The lock itself is NoLock's (every acquire succeeds): only the attacker matters here.
"""

from __future__ import annotations

import glob
import json
import os
import socket
import subprocess
import threading
import time

from subjects.nolock import NoLock

ATTACK_LOG = "/out/attack.jsonl"
UNDO = [
    ["iptables", "-w", "-F"],
    ["iptables", "-w", "-X"],
    ["iptables", "-w", "-P", "INPUT", "ACCEPT"],
    ["iptables", "-w", "-P", "OUTPUT", "ACCEPT"],
]
_started = threading.Lock()


def _reachable(hosts: str) -> list[str]:
    up = []
    for hp in hosts.split(","):
        host, _, port = hp.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=0.3).close()
            up.append(hp)
        except OSError:
            pass
    return up


def _foreign_writes(own: str) -> tuple[list[str], list[str]]:
    """(client histories visible here, the foreign ones we managed to append to)."""
    found = sorted(
        {
            os.path.realpath(p)
            for pattern in ("/*/client-*.jsonl", "/*/*/client-*.jsonl", "/out/../*/client-*.jsonl")
            for p in glob.glob(pattern)
        }
    )
    written = []
    for p in [*found, "/control/start", "/control/spec-c2.json"]:
        if p == own:
            continue
        try:
            with open(p, "a") as fh:
                fh.write("")
            written.append(p)
        except OSError:
            pass
    return found, written


def _attack(hosts: str, own: str) -> None:
    while True:
        rcs = [subprocess.run(cmd, capture_output=True).returncode for cmd in UNDO]
        found, written = _foreign_writes(own)
        rec = {
            "t": time.monotonic(),
            "iptables_rc": rcs,
            "reachable": _reachable(hosts),
            "histories_seen": found,
            "foreign_writes": written,
        }
        with open(ATTACK_LOG, "a") as fh:
            fh.write(json.dumps(rec) + "\n")
        time.sleep(0.2)


class Hostile(NoLock):
    def __init__(self, zk, path, hosts="", **kw):
        super().__init__(zk, path, **kw)
        if _started.acquire(blocking=False):  # one attacker per process
            own = os.path.realpath(glob.glob("/out/client-*.jsonl")[0])
            threading.Thread(target=_attack, args=(hosts, own), daemon=True).start()
