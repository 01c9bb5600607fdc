"""A second, real Docker engine on this machine: the stand-in for a remote host.

Debian's own `dockerd` with its own socket, data root, exec root, pid file and bridge (and so its
own containerd), beside the machine's engine, which it must not disturb:
- an empty `--config-file`, since /etc/docker/daemon.json sets `data-root` and a flag that
  repeats a config-file setting is refused;
- `--iptables=false`: a dockerd that manages iptables flushes the DOCKER and isolation chains
  the machine's engine owns when it starts;
- so one rule of our own instead: the machine's engine sets the FORWARD policy to DROP, and with
  br_netfilter, traffic between two containers on one bridge passes FORWARD; the second engine's
  bridges need `DOCKER-USER -m physdev --physdev-is-bridged -j ACCEPT` (traffic that stays on
  one bridge, which the machine's engine accepts for its own bridges anyway).
Everything (containers, the daemon and its containerd, mounts, the bridge, the rule, the dirs)
is removed on the way out, whatever happened.

`private_fs=True` makes it a stand-in for another HOST's engine as far as files go: the daemon
(and its containerd) run in their own mount namespace (`unshare -m`, private propagation) where
/work, /tmp and /var/tmp are empty tmpfs, so no project path, no pytest tmp dir, no store and no
zkjepsen scratch dir exists for it; its data root is bound at a path only that namespace has
(/var/tmp/zkjd-data, on disk in /var/lib/zkjepsen-dockerd-*); only its socket (in /run) is shared.
`private_net=True` (implies `private_fs`) makes it a stand-in for another host's network too:
the daemon and its containerd run in their own network namespace (`ip netns`, loopback up, its
bridge inside it), so no address of its containers is routed from this machine and the runner
cannot reach them: such an engine needs a controller container (run/controller.py), which
runs with the engine's host network, i.e. that namespace. Its iptables are the namespace's own
(empty, ACCEPT), so no DOCKER-USER rule is needed; the socket is still in /run, shared.

Usable as a context manager (tests, benchmarks) or as a script: `python tests/second_engine.py`
prints the DOCKER_HOST URL and keeps the engine until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PREFIX = os.environ.get("ZKJEPSEN_DOCKERD_PREFIX", "zkjepsen-dockerd-")
HIDDEN = ("/work", "/tmp", "/var/tmp")  # what a private_fs engine does not see of this machine
PRIVATE_DATA = "/var/tmp/zkjd-data"  # its data root, a path that exists only in its namespace
NETNS: dict[str, str] = {}  # a private_net engine's URL -> its network namespace (`ip netns`)


class Unavailable(Exception):
    """dockerd cannot run here; the message says why (tests skip with it)."""


def _sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check)


def _free_bridge_net() -> ipaddress.IPv4Network:
    """A /24 for the daemon's default bridge, outside the range runs use (10.60-249)."""
    from zkjepsen.docker.subnets import host_routes

    busy = host_routes()
    for second in range(250, 255):
        for third in range(0, 256, 7):
            net = ipaddress.ip_network(f"10.{second}.{third}.0/24")
            if not any(net.overlaps(b) for b in busy):
                return net
    raise Unavailable("no free 10.250-254.x.0/24 for the second engine's bridge")


def check_possible() -> None:
    if os.geteuid() != 0:
        raise Unavailable("a second dockerd needs root")
    for tool in ("dockerd", "ip", "iptables", "unshare", "nsenter"):
        if shutil.which(tool) is None:
            raise Unavailable(f"`{tool}` is not installed (Debian: apt-get install docker.io)")


def _private_argv(disk: Path, argv: list[str]) -> list[str]:
    """`argv` (dockerd) in a new mount namespace that hides HIDDEN, data root at PRIVATE_DATA."""
    hide = " && ".join(f"mount -t tmpfs -o size=64m,mode=1777 zkjd-hidden {p}" for p in HIDDEN)
    script = (
        f"set -e; {hide} && mkdir -p {PRIVATE_DATA} && mount --bind {disk} {PRIVATE_DATA}"
        ' && exec "$@"'
    )
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv]


@contextlib.contextmanager
def second_engine(
    start_timeout_s: float = 60.0, private_fs: bool = False, private_net: bool = False
) -> Iterator[str]:
    """Start a second dockerd; yield its DOCKER_HOST URL; remove everything on exit.
    `private_fs`: one that shares no file with this machine; `private_net`: nor its network
    (module docstring)."""
    check_possible()
    private_fs = private_fs or private_net
    # A private_fs daemon's own dirs (socket, exec root, log) are in /run, which it sees too.
    d = Path(tempfile.mkdtemp(prefix=PREFIX, dir="/run" if private_fs else "/tmp"))
    disk = Path(tempfile.mkdtemp(prefix=PREFIX, dir="/var/lib")) if private_fs else None
    tag = secrets.token_hex(3)
    bridge = f"zkjd{tag}"
    netns = f"zkjd{tag}" if private_net else None
    ip = ["ip", "-n", netns] if netns else ["ip"]
    comment = f"zkjepsen-second-engine-{tag}"
    rule = [
        "DOCKER-USER",
        "-m",
        "physdev",
        "--physdev-is-bridged",
        "-m",
        "comment",
        "--comment",
        comment,
        "-j",
        "ACCEPT",
    ]
    sock = d / "docker.sock"
    url = f"unix://{sock}"
    proc = None
    rule_added = False
    try:
        net = _free_bridge_net()
        if netns:
            _sh("ip", "netns", "add", netns)
            _sh(*ip, "link", "set", "lo", "up")
        _sh(*ip, "link", "add", bridge, "type", "bridge")
        _sh(*ip, "addr", "add", f"{net.network_address + 1}/{net.prefixlen}", "dev", bridge)
        _sh(*ip, "link", "set", bridge, "up")
        (d / "empty.json").write_text("{}")
        log = open(d / "dockerd.log", "w")  # noqa: SIM115 - the daemon writes it
        argv = [
            "dockerd",
            "--config-file",
            str(d / "empty.json"),
            "--data-root",
            PRIVATE_DATA if disk else str(d / "data"),
            "--exec-root",
            str(d / "exec"),
            "-H",
            url,
            "--pidfile",
            str(d / "docker.pid"),
            "--bridge",
            bridge,
            "--iptables=false",
            "--ip-masq=false",
            "--storage-driver",
            "overlay2",
        ]
        argv = _private_argv(disk, argv) if disk else argv
        proc = subprocess.Popen(
            # nsenter, not `ip netns exec`, which remounts /sys and so hides the cgroup mounts
            ["nsenter", f"--net=/run/netns/{netns}", *argv] if netns else argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + start_timeout_s
        while not _ping(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (d / "dockerd.log").read_text(errors="replace").strip().splitlines()[-3:]
                raise Unavailable("the second dockerd did not come up: " + " | ".join(tail))
            time.sleep(0.3)
        if not netns and _sh("iptables", "-n", "-L", "DOCKER-USER", check=False).returncode == 0:
            _sh("iptables", "-I", *rule[:1], "1", *rule[1:])
            rule_added = True
        if netns:
            NETNS[url] = netns
        yield url
    finally:
        NETNS.pop(url, None)
        if proc is not None:
            _remove_everything(url)
            _stop(proc, d)
        if rule_added:
            _sh("iptables", "-D", *rule, check=False)
        _sh(*ip, "link", "del", bridge, check=False)
        if netns:
            _sh("ip", "netns", "del", netns, check=False)
        _unmount_under(d)
        shutil.rmtree(d, ignore_errors=True)
        if disk is not None:
            _unmount_under(disk)
            shutil.rmtree(disk, ignore_errors=True)


@contextlib.contextmanager
def second_engine_or_skip(**kw) -> Iterator[str]:
    """second_engine(**kw) for a pytest fixture: the test skips, saying why, where it cannot run."""
    import pytest

    try:
        with second_engine(**kw) as url:
            yield url
    except Unavailable as e:
        pytest.skip(f"no second Docker engine on this machine: {e}")


def preload_image(tag: str, engine_url: str) -> None:
    """`docker save | docker load` of `tag` into the engine at `engine_url`: a host that has
    the image (zkjepsen builds a missing one on the engine itself, which takes minutes)."""
    save = subprocess.Popen(["docker", "save", tag], stdout=subprocess.PIPE)
    subprocess.run(
        ["docker", "-H", engine_url, "load", "-q"], stdin=save.stdout, check=True,
        capture_output=True,
    )  # fmt: skip
    save.wait()


def _ping(url: str) -> bool:
    import docker

    try:
        docker.DockerClient(base_url=url, timeout=5).ping()
        return True
    except Exception:  # noqa: BLE001 - not up yet
        return False


def _remove_everything(url: str) -> None:
    import docker

    try:
        c = docker.DockerClient(base_url=url, timeout=60)
        for ct in c.api.containers(all=True):
            with contextlib.suppress(Exception):
                c.api.remove_container(ct["Id"], force=True, v=True)
        for n in c.networks.list():
            if n.name not in ("bridge", "host", "none"):
                with contextlib.suppress(Exception):
                    n.remove()
    except Exception:  # noqa: BLE001 - the daemon may be gone already
        pass


def _stop(proc: subprocess.Popen, d: Path) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    # Its containerd (and shims) outlive a killed dockerd: end exactly those, found by our dir.
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cmd = (pid_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            if str(d) in cmd and int(pid_dir.name) != os.getpid():
                os.kill(int(pid_dir.name), signal.SIGKILL)


def _unmount_under(d: Path) -> None:
    with contextlib.suppress(OSError):
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
        for m in sorted((m for m in mounts if m.startswith(str(d))), reverse=True):
            _sh("umount", "-l", m, check=False)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    with second_engine(
        private_fs="--private-fs" in sys.argv, private_net="--private-net" in sys.argv
    ) as engine_url:
        print(json.dumps({"DOCKER_HOST": engine_url}), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
