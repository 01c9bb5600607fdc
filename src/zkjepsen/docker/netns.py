"""Commands in another container's network namespace, from outside it, and container limits.

Client containers run the code under test, so they drop every capability (client/seal.py;
in particular NET_ADMIN and NET_RAW): a client that runs `iptables -F` must not be able to undo
the fault isolating it, nor send around it through a raw or packet socket. The nemesis instead runs
iptables in a short-lived *sidecar*: a container of the same image with NET_ADMIN that joins
the client's network namespace (`network_mode=container:<id>`), runs one command and is
removed. The rules it writes live in the client's netns (in the run's own chain), where the
client cannot change them.

Why a sidecar rather than `nsenter --net=/proc/<pid>/ns/net` on the host: nsenter needs the
zkjepsen process to be root on the Docker host itself (not a user in the `docker` group, not a
remote DOCKER_HOST, not Docker Desktop's VM); the sidecar needs only the Docker API that
everything else uses, and the image's own iptables (the same binary and backend the servers
use). A one-shot sidecar costs ~0.3-0.45 s per command idle and 1-4 s on a loaded 2-core
machine (a container created, started, waited for and removed). A triggered client cut must go
in while its target still holds, so the nemesis keeps one sidecar per client for the run
(`NetnsShell`: it sleeps, each command is a `docker exec` in it) and falls back to a one-shot
sidecar when that one is gone. A kept sidecar is in the netns the client had when it was made:
a client that is restarted gets a new one, so its handle drops the sidecar then.

A `docker exec` is three API calls and a `runc exec` (a process spawned into the namespaces)
per command: 0.2-1.8 s at load 20, 2-9.5 s at load 49. So the kept sidecar is a shell that reads
commands on its stdin, through one attach stream held open for the run (`Channel`): a command
is a line written on it, its answer the output up to a marker line with its exit status. The
stream is the engine's own (the client cannot reach it: it shares the sidecar's network, not
its processes or its stdin). If it breaks, the command runs as an exec, else in a one-shot
sidecar.

Limits: every container gets a memory and a pids limit, so a runaway client (or server) hits
its own ceiling instead of the machine's. Sizes come from what the processes use (measured with
`docker stats` during a 3-node, 3-client lock run): a ZooKeeper node with ZK_HEAP=128m holds
~61-67 MiB and 38-45 threads; a kazoo client ~13 MiB and 4 threads.
"""

from __future__ import annotations

import re
import secrets
import shlex
import socket
import struct
import threading

from zkjepsen.docker import resources

# A JVM's footprint beyond its heap (metaspace, code cache, thread stacks, GC, direct buffers):
# observed ~60 MiB in all with a mostly empty 128 MiB heap; 256 MiB above the heap leaves room.
SERVER_OVERHEAD_MB = 256
SERVER_PIDS = 512  # ~45 threads observed; NIO workers and connection threads grow with clients
CLIENT_MEMORY = "256m"  # ~13 MiB observed; room for a user recipe's own state and threads
CLIENT_PIDS = 256  # 4 observed; a recipe may start threads or shell out
SIDECAR_MEMORY = "64m"  # one iptables invocation
SIDECAR_PIDS = 32


def server_memory(heap: str) -> str:
    """The memory limit of a ZooKeeper node whose JVM heap is `heap` (e.g. "128m", "1g")."""
    m = re.fullmatch(r"(\d+)([kmg]?)", heap.strip().lower())
    if m is None:  # not a size we understand: the JVM decides; give a generous ceiling
        return "1g"
    per_unit = {"": 1 / 2**20, "k": 1 / 1024, "m": 1, "g": 1024}[m.group(2)]  # -Xmx units
    return f"{int(int(m.group(1)) * per_unit) + SERVER_OVERHEAD_MB}m"


def limits(memory: str, pids: int) -> dict:
    """host_config keywords: a hard memory ceiling with no swap beyond it, and a pids cap."""
    return {"mem_limit": memory, "memswap_limit": memory, "pids_limit": pids}


def netns_exec(
    client, container_id: str, image: str, argv: list[str], run_id: str, timeout_s: float = 60.0
) -> tuple[int, str]:
    """Run argv with NET_ADMIN in the network namespace of `container_id` (a sidecar).

    The sidecar carries the run's labels, so `cleanup` removes it if we die mid-command. Raises
    docker's APIError when the target is not running (it has no network namespace then)."""
    api = client.api
    host_config = api.create_host_config(
        network_mode=f"container:{container_id}",
        cap_add=["NET_ADMIN", "NET_RAW"],
        **limits(SIDECAR_MEMORY, SIDECAR_PIDS),
    )
    cid = api.create_container(
        image,
        entrypoint=argv[:1],
        command=argv[1:],
        labels=resources.labels(run_id, "sidecar"),
        host_config=host_config,
    )["Id"]
    try:
        api.start(cid)
        code = api.wait(cid, timeout=timeout_s)["StatusCode"]
        out = api.logs(cid, stdout=True, stderr=True)
        return code, (out or b"").decode(errors="replace")
    finally:
        try:
            api.remove_container(cid, force=True)
        except Exception:  # noqa: BLE001 - labelled: `remove_run` at teardown takes it
            pass


# The kept sidecar's shell: each line on stdin is a command (shell words), run in a subshell;
# then a line with the marker ($1) and the command's exit status.
CHANNEL_SCRIPT = r"""
while IFS= read -r c; do
  (eval "$c") </dev/null 2>&1
  printf '\n%s %s\n' "$1" "$?"
done
"""
CHANNEL_TIMEOUT_S = 60.0


class Channel:
    """Commands to a kept sidecar's shell (CHANNEL_SCRIPT) over its attach stream: the
    engine's stream protocol (no TTY), an 8-byte header (stream, size) before each frame."""

    def __init__(self, api, cid: str, marker: str) -> None:
        params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        stream = api.attach_socket(cid, params=params)
        self.stream = stream  # kept: closing it would close the socket
        self.sock: socket.socket = getattr(stream, "_sock", stream)
        self.sock.settimeout(CHANNEL_TIMEOUT_S)
        self.end = b"\n" + marker.encode() + b" "

    def run(self, argv: list[str]) -> tuple[int, str]:
        line = shlex.join(argv)
        if "\n" in line:  # one command a line
            raise ValueError("a command with a newline goes by exec")
        self.sock.sendall(line.encode() + b"\n")
        data = b""
        while (at := data.find(self.end)) < 0 or not data.endswith(b"\n"):
            _, size = struct.unpack(">BxxxL", self._read(8))
            data += self._read(size)
        return int(data[at + len(self.end) :].strip()), data[:at].decode(errors="replace")

    def _read(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the sidecar's stream closed")
            out += chunk
        return out

    def close(self) -> None:
        try:
            self.stream.close()
        except Exception:  # noqa: BLE001 - the sidecar is being removed anyway
            pass


class NetnsShell:
    """A sidecar kept in one container's network namespace (module docstring): commands go to
    its shell through a `Channel`, or as execs in it if the channel breaks. Made on the first
    command; `close()` removes it (teardown's label sweep takes it too). Any failure of the
    kept one runs the command in a one-shot sidecar instead."""

    def __init__(self, client, container_id: str, image: str, run_id: str) -> None:
        self.client, self.target, self.image, self.run_id = client, container_id, image, run_id
        self.cid: str | None = None
        self.channel: Channel | None = None
        self.lock = threading.Lock()

    def exec(self, argv: list[str]) -> tuple[int, str]:
        try:
            with self.lock:  # one command at a time on the channel
                if self.cid is None:
                    self.cid, self.channel = self._start()
                if self.channel is not None:
                    try:
                        return self.channel.run(argv)
                    except ValueError:
                        pass
                    except Exception:  # noqa: BLE001 - broken mid-command: execs from now on
                        self.channel.close()
                        self.channel = None
                cid = self.cid
            api = self.client.api
            exec_id = api.exec_create(cid, argv, stdout=True, stderr=True)["Id"]
            out = api.exec_start(exec_id)
            code = api.exec_inspect(exec_id)["ExitCode"]
            if code is None:  # not finished (cannot happen for a non-detached exec): unsure
                raise RuntimeError("exec still running")
            return code, (out or b"").decode(errors="replace")
        except Exception:  # noqa: BLE001 - the kept sidecar is gone or broken: one-shot
            self.close()
            return netns_exec(self.client, self.target, self.image, argv, self.run_id)

    def _start(self) -> tuple[str, Channel | None]:
        api = self.client.api
        host_config = api.create_host_config(
            network_mode=f"container:{self.target}",
            cap_add=["NET_ADMIN", "NET_RAW"],
            init=True,  # a shell as PID 1 would not die on SIGTERM: removal stays quick
            **limits(SIDECAR_MEMORY, SIDECAR_PIDS),
        )
        marker = "zkj-done-" + secrets.token_hex(8)
        cid = api.create_container(
            self.image,
            entrypoint=["/bin/sh", "-c", CHANNEL_SCRIPT, "zkj-channel", marker],
            stdin_open=True,
            labels=resources.labels(self.run_id, "sidecar"),
            host_config=host_config,
        )["Id"]
        try:
            api.start(cid)
        except Exception:
            api.remove_container(cid, force=True)
            raise
        try:
            return cid, Channel(api, cid, marker)
        except Exception:  # noqa: BLE001 - no attach stream here: execs in the kept sidecar
            return cid, None

    def close(self) -> None:
        with self.lock:
            cid, self.cid = self.cid, None
            if self.channel is not None:
                self.channel.close()
                self.channel = None
        if cid is not None:
            try:
                self.client.api.remove_container(cid, force=True)
            except Exception:  # noqa: BLE001 - labelled: the run's teardown takes it
                pass
