"""A client program that fights its faults, its recorder and its neighbours: as soon as the
recipe is built, a thread keeps running `iptables -F`/`-X`/`-P ... ACCEPT` (to undo a network
fault), probes every server's client port, and tries to append to every client history it can
find besides its own (and to open the start barrier). Each round it also attacks its own
recorder (`_against_recorder`): it opens its own history for writing, appending, truncates,
renames and deletes it, writes through the recorder's descriptors and memory in /proc, reads
its environment, signals it, opens a raw ICMP and a packet socket, and tells its wire proxy
(if any) to heal. It records what it tried and what happened (`ok`,
or the errno's name) in its scratch `/tmp/attack.jsonl`, which
tests/integration/test_least_privilege.py reads through `docker exec`.

The lock itself is NoLock's (every acquire succeeds): only the attacker matters here.
"""

from __future__ import annotations

import errno
import glob
import json
import os
import signal
import socket
import subprocess
import threading
import time

from subjects.nolock import NoLock

ATTACK_LOG = "/tmp/attack.jsonl"
UNDO = [
    ["iptables", "-w", "-F"],
    ["iptables", "-w", "-X"],
    ["iptables", "-w", "-P", "INPUT", "ACCEPT"],
    ["iptables", "-w", "-P", "OUTPUT", "ACCEPT"],
]
# Where the program might leave a file on disk; only memory-backed scratch may take one.
WRITE_PROBES = ("/", "/etc", "/opt", "/out", "/control", "/var", "/tmp", "/var/tmp", "/dev/shm")
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


def _try(fn) -> str:
    """'ok', or the name of the errno it failed with."""
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # cannot even see it: truncating it will fail the same way


def _rename_and_back(path: str) -> None:
    os.rename(path, path + ".moved")
    os.rename(path + ".moved", path)  # (where it succeeds: the old setup, for the record)


def _open_close(path: str, mode: str) -> None:
    open(path, mode).close()  # noqa: SIM115


def _recorder_fds(pid: int) -> None:
    """Open every descriptor of the recorder for appending (its history is among them)."""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        if os.path.isfile(f"/proc/{pid}/fd/{fd}"):
            _open_close(f"/proc/{pid}/fd/{fd}", "ab")


def _sock(family: int, kind: int, proto: int) -> None:
    socket.socket(family, kind, proto).close()


def _writable(where: str) -> None:
    probe = os.path.join(where, f".hostile-{os.getpid()}")
    open(probe, "w").close()  # noqa: SIM115
    os.unlink(probe)


def _against_recorder(history: str) -> dict:
    """Everything this program tries against its recorder, each outcome 'ok' or an errno."""
    recorder = os.getppid()  # the Python driver is the recorder's own child
    out = {
        "open-write": _try(lambda: _open_close(history, "r+b")),
        "open-append": _try(lambda: _open_close(history, "ab")),
        "truncate": _try(lambda: os.truncate(history, _size(history))),
        "rename": _try(lambda: _rename_and_back(history)),
        "recorder-fds": _try(lambda: _recorder_fds(recorder)),
        "recorder-mem": _try(lambda: _open_close(f"/proc/{recorder}/mem", "r+b")),
        "recorder-environ": _try(lambda: _open_close(f"/proc/{recorder}/environ", "rb")),
        "signal-recorder": _try(lambda: os.kill(recorder, 0)),
        "signal-pid1": _try(lambda: os.kill(1, signal.SIGCONT)),
        "raw-icmp": _try(lambda: _sock(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
        "packet": _try(lambda: _sock(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))),
        "unlink": _try(lambda: os.unlink(history)),  # last: where it works, the rest is moot
    }
    return out


def _command_proxy() -> str:
    """Heal whatever the nemesis armed in this client's wire proxy (when it has one): 'ok',
    'refused' (the proxy wants the nemesis's token), or the errno's name (no proxy here)."""
    try:
        with socket.create_connection(("127.0.0.1", 7181), timeout=1) as s:
            s.sendall(b'{"fault": "heal"}\n')
            return "ok" if json.loads(s.makefile("rb").readline()).get("ok") else "refused"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__


def _control_view() -> dict:
    """What the program sees of /control: its listing, and each control file it might try
    (its own and client 2's or 1's: only its own client's directory is mounted)."""
    names = ("spec-c1.json", "spec-c2.json", "start", "faketime-c1", "faketime-c2")
    view = {"list": _try(lambda: os.listdir("/control"))}
    for name in names:
        view[name] = _try(lambda n=name: _open_close(f"/control/{n}", "rb"))
    return view


def _caps() -> str:
    with open("/proc/self/status") as fh:
        return next(x.split()[1] for x in fh if x.startswith("CapEff:"))


def _attack(hosts: str, own: str) -> None:
    while True:
        rcs = [subprocess.run(cmd, capture_output=True).returncode for cmd in UNDO]
        found, written = _foreign_writes(own)
        rec = {
            "t": time.monotonic(),
            "uid": os.getuid(),
            "cap_eff": _caps(),
            "recorder": _against_recorder(own),
            "proxy": _command_proxy(),
            "writable": [w for w in WRITE_PROBES if _try(lambda w=w: _writable(w)) == "ok"],
            "iptables_rc": rcs,
            "reachable": _reachable(hosts),
            "histories_seen": found,
            "foreign_writes": written,
            "control": _control_view(),
        }
        with open(ATTACK_LOG, "a") as fh:
            fh.write(json.dumps(rec) + "\n")
        time.sleep(0.2)


class Hostile(NoLock):
    def __init__(self, zk, path, hosts="", **kw):
        super().__init__(zk, path, **kw)
        if _started.acquire(blocking=False):  # one attacker per process
            own = f"/out/client-{socket.gethostname().lstrip('c')}.jsonl"  # hostname: cN
            threading.Thread(target=_attack, args=(hosts, own), daemon=True).start()
