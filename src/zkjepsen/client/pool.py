"""Client processes: one container per logical client, each with its own IP and kazoo session.

Why containers: a split holder happens to a *client* (a GC pause, a cut network), so the nemesis
must pause one client (`docker pause`, the cgroup freezer: every thread stops at once, like a
stop-the-world GC) and isolate one client (iptables in that container's own network namespace).
The client code comes from the host (our package and the host's kazoo), so clients run exactly
the code under test, in the image's Python 3.11: bind-mounted, or copied in through the engine's
API on an engine that does not share this machine's filesystem (docker/mounts.py).

Least privilege, because the client runs the code under test (client/seal.py): the program runs
as an unprivileged uid that cannot open the recorder's directory (`/out`, where the history is),
every capability is dropped but the few the recorder needs to start and stop it (so no
NET_ADMIN/NET_RAW: its network faults are applied from a sidecar, see docker/netns.py), memory
and pids limits, and the program writes only small tmpfs scratch dirs; the start barrier and
the specs come read-only from the run's control directory (`/control`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import kazoo

import zkjepsen
from zkjepsen.backends.base import Backend
from zkjepsen.client import libraries, seal
from zkjepsen.client.command import PROGRAM_DIR
from zkjepsen.client.spec import (
    CONTROL_DIR,
    CONTROL_NAME,
    OUT_DIR,
    PROXY_TOKEN_ENV,
    WARP_NAME,
    ClientSpec,
)
from zkjepsen.docker import freeze, mounts, netns, resources, timewarp
from zkjepsen.history.live import LiveHistory
from zkjepsen.store import RunDir

if TYPE_CHECKING:  # docker's models load requests: only the type checker needs them here
    from docker.models.containers import Container

# Our package, wherever it is installed (a checkout's src/, or site-packages): mounted as it is,
# not its parent, which in site-packages is every installed distribution (hundreds of MB to copy
# on an engine that does not share our files, and the host's modules shadowing the image's).
PACKAGE_DIR = Path(zkjepsen.__file__).resolve().parent
SRC_DIR = "/opt/zkjepsen/src"  # on the clients' PYTHONPATH
KAZOO_DIR = Path(kazoo.__file__).resolve().parent
SITE_DIR = "/opt/zkjepsen/site"
# The client libraries a client program may import, mounted read-only from the host's own
# installation (pyproject's dependencies) into SITE_DIR, so clients run the very same code:
# kazoo (ZooKeeper), redis (Redis locks), psycopg (PostgreSQL locks; psycopg-binary brings its
# own libpq, built for CPython 3.11 like the image's python3). Distribution names; missing
# ones are skipped (a recipe that needs one fails to import in the container, visibly).
CLIENT_DISTRIBUTIONS = (
    "kazoo",
    "redis",
    "async-timeout",  # redis on Python < 3.11.3 (the image has 3.11.2)
    "psycopg",
    "psycopg-binary",
    "typing-extensions",
    "pymemcache",  # memcached's sessions and recipes
    "PyMySQL",  # MariaDB locks (pure Python)
    "python-redis-lock",  # the python-redis-lock recipe (imports as redis_lock)
    "pottery",  # the pottery-redlock recipe; mmh3 is pottery's C dependency (cp311 wheel)
    "mmh3",
)


def package_bind() -> dict[str, dict]:
    """Host path -> bind of our package in a client container (read-only)."""
    return {str(PACKAGE_DIR): {"bind": f"{SRC_DIR}/zkjepsen", "mode": "ro"}}


def client_library_binds() -> dict[str, dict]:
    """Host path -> bind of every top-level package or module of CLIENT_DISTRIBUTIONS."""

    binds: dict[str, dict] = {}
    for name in CLIENT_DISTRIBUTIONS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        tops = {f.parts[0] for f in dist.files or () if len(f.parts) >= 1}
        for top in sorted(tops):
            if top.endswith((".dist-info", ".pth")) or top in ("..", "__pycache__"):
                continue
            host = Path(str(dist.locate_file(top))).resolve()
            if host.exists():
                binds[str(host)] = {"bind": f"{SITE_DIR}/{top}", "mode": "ro"}
    binds.setdefault(str(KAZOO_DIR), {"bind": f"{SITE_DIR}/kazoo", "mode": "ro"})
    return binds


@dataclass
class ClientHandle:
    index: int  # logical client number, 1..N
    ip: str
    hosts: str
    container: Container
    run_id: str = ""  # labels the sidecars, so teardown removes any left behind
    image: str = ""  # the sidecars' image: the client's own, so it has iptables
    faketime_file: str = ""  # on the host: its program's libfaketime control file
    files: mounts.Files | None = None  # puts a rewritten control file into the containers
    proxy_token: str = ""  # its wire proxy obeys commands that carry it (nemesis/proxy.py)
    warp_file: str = ""  # on the host: its program's zkj-timewarp control file, if it has one
    shell: netns.NetnsShell | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return f"c{self.index}"

    def pause(self) -> None:
        freeze.pause(self.container)

    def resume(self) -> None:
        self.container.unpause()

    def kill(self) -> None:
        self.container.kill(signal="SIGKILL")
        self.forget_netns()

    def restart(self) -> None:
        """A killed client comes back as a new process with a new session."""
        self.forget_netns()  # and a new network namespace: the kept sidecar's is the old one
        self.container.start()

    def forget_netns(self) -> None:
        shell, self.shell = self.shell, None
        if shell is not None:
            shell.close()

    def status(self) -> str:
        self.container.reload()
        return self.container.status

    def set_clock(self, spec: str) -> int | str | None:
        """Rewrite this client's libfaketime control file (nemesis/client_clock.py) atomically:
        the program reads it at most once a second and never half of it. Returns the control
        file's generation, as the program's `clock` events name it (client/clockwatch.py):
        zkj-timewarp's sequence number, libfaketime's spec; None: the run is gone."""
        if self.warp_file:  # rewritten in place: the program maps it (docker/timewarp.py)
            warp = Path(self.warp_file)
            if not warp.exists():
                return None
            return timewarp.apply(warp, spec)
        path = Path(self.faketime_file)
        if not path.parent.exists():
            return None  # the run is gone: nothing left to skew
        seal.write_control_file(path, spec + "\n", seal.FAKETIME_MODE)
        if self.files is not None:
            self.files.push(path)
        return spec

    def wall_lead_s(self) -> float | None:
        """How far the program's wall clock is ahead of real time now, from its zkj-timewarp
        control lines (what a step back to real time takes away); None: not under zkj-timewarp
        (libfaketime keeps its lead inside the program's process)."""
        warp = Path(self.warp_file) if self.warp_file else None
        if warp is None or not warp.exists():
            return None
        now = time.clock_gettime_ns(time.CLOCK_REALTIME)
        return (timewarp.reading(timewarp.read(warp)[0], now) - now) / 1e9

    def exec(self, argv: list[str]) -> tuple[int, str]:
        """argv inside the client, with its program's rights (its uid, no capability)."""
        res = self.container.exec_run(
            argv,
            user=f"{seal.PROGRAM_UID}:{seal.PROGRAM_UID}",
            environment={PROXY_TOKEN_ENV: ""},  # its program could read it in /proc
        )
        out = res.output if isinstance(res.output, bytes) else b""  # not streamed: bytes
        return int(res.exit_code or 0), out.decode(errors="replace")

    def net_exec(self, argv: list[str]) -> tuple[int, str]:
        """argv in the client's network namespace with NET_ADMIN, from a sidecar: how the
        nemesis changes the client's iptables, which the client itself cannot."""
        if self.shell is None:
            self.shell = netns.NetnsShell(
                self.container.client, self.container_id, self.image, self.run_id
            )
        return self.shell.exec(argv)

    @property
    def container_id(self) -> str:
        return str(self.container.id)  # set: the container was created


class ClientPool:
    """Starts, controls and collects the client containers of one run."""

    def __init__(
        self,
        backend: Backend,
        run_dir: RunDir,
        image: str | None = None,
        docker=None,
        libraries: tuple[str, ...] = (),
    ) -> None:
        self.backend = backend
        # the recipe's own Python distributions, mounted beside the shared ones (libraries.py)
        self.libraries = libraries
        self.run_dir = RunDir(Path(run_dir.path).resolve())
        # The run's ONE follower of its clients' files (and nemesis.jsonl): the pool's wait for
        # their sessions, the nemesis, the online check and the display all read through it.
        self.live = LiveHistory.of_run(self.run_dir)
        self.run_dir.control.mkdir(parents=True, exist_ok=True)
        self.image = image  # None: the image the backend names for its clients
        self.docker = docker or resources.docker_client()
        # The backend's: bind mounts, or copies through the engine's API (docker/mounts.py).
        self.files: mounts.Files = getattr(backend, "files", None) or mounts.Files(self.docker)
        self.handles: list[ClientHandle] = []
        # The proxies' control token: in the containers' environment, which the recorder takes
        # out of its own before it starts the program (client/main.py); not in the specs, which
        # the program can read.
        self.proxy_token = secrets.token_hex(16)

    def start(self, specs: list[ClientSpec]) -> list[ClientHandle]:
        """Start one container per spec, all at once. A client whose spec has a `start_file`
        connects, then waits at the start barrier until `release()`. Returns the handles."""

        with ThreadPoolExecutor(max_workers=8) as pool:
            self.handles = sorted(pool.map(self._start_one, specs), key=lambda h: h.index)
        self.files.start_live()  # a copying engine: fetch /out as the clients write it
        return self.handles

    def release(self, deadline_monotonic: float) -> None:
        """Open the start barrier: clients run until `deadline_monotonic` (shared clock)."""
        for h in self.handles:  # each in its own control directory (no client sees another's)
            barrier = self.run_dir.start_barrier(h.index)
            seal.write_control_file(barrier, repr(deadline_monotonic))
            self.files.push(barrier)

    def wait_connected(self, timeout_s: float) -> list[int]:
        """Wait until every client recorded its session (or gave up); returns the laggards."""
        deadline = time.monotonic() + timeout_s
        tails = {h.index: self.live.cursor(h.index) for h in self.handles}
        while tails and time.monotonic() < deadline:
            self.live.poll()  # once for every client
            for i, tail in list(tails.items()):
                if any(r.get("f") in ("session", "client-error") for r in tail.take()):
                    del tails[i]
            time.sleep(0.05)
        return sorted(tails)

    def _start_one(self, spec: ClientSpec) -> ClientHandle:
        api = self.docker.api
        n = spec.client
        where = self.backend.client_endpoint(n)
        image = self.image or where.image
        d = self.run_dir
        if spec.start_file:
            barrier = d.start_barrier(n).name
            spec = dataclasses.replace(spec, start_file=f"{CONTROL_DIR}/{barrier}")
        spec = dataclasses.replace(spec, out=OUT_DIR)
        if spec.command:  # the program under test runs as another uid than the recorder's
            spec = dataclasses.replace(spec, program_uid=seal.PROGRAM_UID)
        control = d.client_control(n)
        seal.seal_control_dir(control)
        seal.write_control_file(d.client_spec(n), json.dumps(spec.to_json(), indent=1))

        faketime = control / CONTROL_NAME.format(n=n)
        if not faketime.exists():  # real time until a client clock fault says more
            seal.write_control_file(faketime, "+0 x1\n", seal.FAKETIME_MODE)
        warp = control / WARP_NAME.format(n=n)
        if spec.program_warp and not warp.exists():  # a restarted client keeps its clock
            timewarp.blank(warp)
        seal.seal_out_dir(d.client_dir(n))
        binds = {
            **package_bind(),
            str(d.client_dir(n)): {"bind": OUT_DIR, "mode": "rw"},  # its own, nobody else's
            str(control): {"bind": CONTROL_DIR, "mode": "ro"},  # its own, nobody else's
        }
        code = {
            **client_library_binds(),
            **libraries.binds(self.libraries, SITE_DIR),
            **user_recipe_binds(spec.recipe),
        }
        binds.update(code)
        if spec.program_mount:  # the user's program (client wire protocol), read-only
            binds[spec.program_mount] = {"bind": PROGRAM_DIR, "mode": "ro"}
        env = {
            "PYTHONPATH": f"{SRC_DIR}:{SITE_DIR}:/opt/zkjepsen/user",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        }
        env.update(spec.env)
        env[PROXY_TOKEN_ENV] = self.proxy_token
        host_config = api.create_host_config(
            binds=self.files.binds(binds),
            **netns.limits(netns.CLIENT_MEMORY, netns.CLIENT_PIDS),
            **seal.host_config(runs_program=bool(spec.command), out_dir=d.client_dir(n)),
        )
        net = api.create_networking_config(
            {where.network: api.create_endpoint_config(ipv4_address=where.ip)}
        )
        run_id = self.backend.run_id
        cid = api.create_container(
            image,
            name=f"{run_id}-c{n}",
            hostname=f"c{n}",
            entrypoint=[
                "python3",
                "-m",
                # a program under test, or the in-process loop (no program)
                "zkjepsen.client.main" if spec.command else "zkjepsen.workloads.inprocess",
                f"{CONTROL_DIR}/{d.client_spec(n).name}",
            ],
            labels=resources.labels(run_id, "client", client=n, ip=where.ip),
            environment=env,
            host_config=host_config,
            networking_config=net,
        )["Id"]
        self.files.attach(cid, binds, out=[OUT_DIR], static={str(PACKAGE_DIR), *code}, live=True)
        api.start(cid)
        c = self.docker.containers.get(cid)
        return ClientHandle(
            n,
            where.ip,
            spec.hosts,
            c,
            run_id,
            image,
            str(faketime),
            self.files,
            self.proxy_token,
            warp_file=str(warp) if spec.program_warp else "",
        )

    def handle(self, index: int) -> ClientHandle:
        return next(h for h in self.handles if h.index == index)

    def wait(self, timeout_s: float) -> dict[int, int | None]:
        """Wait for every client to exit; returns exit codes (None: still running at timeout)."""
        deadline = time.monotonic() + timeout_s
        codes: dict[int, int | None] = {}
        for h in self.handles:
            remaining = max(0.1, deadline - time.monotonic())
            try:
                codes[h.index] = h.container.wait(timeout=remaining)["StatusCode"]
            except Exception:  # noqa: BLE001 - requests' timeout: still running
                codes[h.index] = None
        return codes

    def stop(self, grace_s: float = 5.0) -> None:
        """Ask every client to finish (SIGTERM), then save their logs. Containers stay until the
        ensemble is removed (they carry the run label)."""
        for h in self.handles:
            try:
                if h.status() == "paused":
                    h.resume()
                if h.status() == "running":
                    h.container.kill(signal="SIGTERM")
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.wait(grace_s)
        # A copying engine: their histories, complete, into the store (once: they stopped).
        self.files.collect([h.container_id for h in self.handles])
        for h in self.handles:
            try:
                self.run_dir.client_log(h.index).write_bytes(h.container.logs())
            except Exception:  # noqa: BLE001
                pass
            seal.open_out_dir(self.run_dir.client_dir(h.index))


def user_recipe_binds(recipe: str) -> dict[str, dict]:
    """`--recipe package.module:Name` must import inside the client containers too: mount the
    user's top-level package (or single module) read-only next to ours."""
    if ":" not in recipe or recipe.startswith("exec:"):
        return {}

    top = recipe.partition(":")[0].split(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None:
        return {}  # validate_spec reports an unimportable recipe before anything starts
    if spec.origin is None and spec.submodule_search_locations:
        # A namespace package (no __init__.py): mount its directory all the same, or every
        # client fails to import the recipe and the run tests nothing.
        where = Path(next(iter(spec.submodule_search_locations))).resolve()
        return {str(where): {"bind": f"/opt/zkjepsen/user/{top}", "mode": "ro"}}
    if spec.origin in (None, "built-in", "frozen"):
        return {}
    origin = Path(spec.origin).resolve()
    if origin.name == "__init__.py":
        return {str(origin.parent): {"bind": f"/opt/zkjepsen/user/{top}", "mode": "ro"}}
    return {str(origin): {"bind": f"/opt/zkjepsen/user/{origin.name}", "mode": "ro"}}
