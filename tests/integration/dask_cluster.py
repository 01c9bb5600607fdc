"""A real local Dask cluster for the `--cluster` tests: a scheduler and two workers, each a
`dask` process of its own on its own port.

Worker "a" uses the machine's engine. Worker "b" stands in for a second machine: it runs in the
network namespace of a second `dockerd` (tests/second_engine.py, `private_net`: its own
network, and a filesystem the engine does not share), with that engine as its DOCKER_HOST, and
reaches the scheduler (and is reached) over a veth pair, as a second host would over its NIC.
The node image is put into the second engine first (a host that has it; building it there
would take minutes of the test's budget).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tracked import Descendants

TESTS = Path(__file__).resolve().parents[1]
DASK = str(Path(sys.executable).parent / "dask")
HOST_IP, NS_IP = "169.254.77.1", "169.254.77.2"  # the veth pair's ends (link-local: no clash)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, engine2: str, netns: str, tmp: Path) -> None:
        self.engine2, self.netns, self.tmp = engine2, netns, tmp
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.procs: dict[str, subprocess.Popen] = {}
        self.trees: dict[str, Descendants] = {}

    def _spawn(self, name: str, argv: list[str], env: dict) -> None:
        # Dask's scratch space in the fixture's folder, not a shared /tmp/dask-scratch-space.
        env = {**env, "DASK_TEMPORARY_DIRECTORY": str(self.tmp)}
        log = open(self.tmp / f"{name}.log", "a")  # noqa: SIM115 - the process owns it
        self.procs[name] = subprocess.Popen(
            argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        self.trees[name] = Descendants(self.procs[name].pid)

    def start_scheduler(self) -> None:
        env = {
            **os.environ,
            # A lost worker's run is given to another worker once; lost twice: unknown.
            "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1",
        }
        argv = [DASK, "scheduler", "--host", "0.0.0.0", "--port", str(self.port)]
        self._spawn("scheduler", [*argv, "--dashboard-address", f":{free_port()}"], env)

    def start_worker(self, name: str) -> None:
        env = {**os.environ, "PYTHONPATH": f"{TESTS}:{os.environ.get('PYTHONPATH', '')}"}
        common = ["--no-nanny", "--nthreads", "2", "--resources", "docker=1", "--name", name]
        if name == "a":
            env.pop("DOCKER_HOST", None)
            argv = [DASK, "worker", self.address, "--host", "127.0.0.1", *common]
        else:
            env["DOCKER_HOST"] = self.engine2
            sched = f"tcp://{HOST_IP}:{self.port}"
            argv = [
                "nsenter", f"--net=/run/netns/{self.netns}",
                DASK, "worker", sched, "--host", NS_IP, *common,
            ]  # fmt: skip
        self._spawn(name, argv, env)

    # A bound against a hang, not a timing: two workers start in seconds on an idle machine and
    # took more than 60 s beside the unit tests and an image build (CI, 2026-11-26).
    def wait_for_workers(self, n: int, timeout: float = 300) -> None:
        from distributed import Client

        with Client(self.address, timeout=30, set_as_default=False) as c:
            c.wait_for_workers(n, timeout=timeout)

    def kill(self, name: str) -> None:
        """SIGKILL to the worker process alone (a crash, an OOM kill): its runs' processes
        live on, see their parent gone and tear their runs down."""
        proc = self.procs.pop(name)
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

    def stop_all(self) -> None:
        for name in [n for n in self.procs if n != "scheduler"] + ["scheduler"]:
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for t in self.trees.values():
            t.stop()


def _sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True)


@contextlib.contextmanager
def veth(netns: str) -> Iterator[None]:
    """A veth pair between this machine and `netns`: HOST_IP here, NS_IP there."""
    host, inner = f"zkv{netns[-6:]}h", f"zkv{netns[-6:]}n"
    try:
        _sh("ip", "link", "add", host, "type", "veth", "peer", "name", inner)
        _sh("ip", "link", "set", inner, "netns", netns)
        _sh("ip", "addr", "add", f"{HOST_IP}/30", "dev", host)
        _sh("ip", "link", "set", host, "up")
        _sh("ip", "-n", netns, "addr", "add", f"{NS_IP}/30", "dev", inner)
        _sh("ip", "-n", netns, "link", "set", inner, "up")
        yield
    finally:
        subprocess.run(["ip", "link", "del", host], capture_output=True)
