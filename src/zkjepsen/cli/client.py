"""`zkjepsen client check CMD`: does a program speak the client wire protocol correctly?"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from zkjepsen.cli.display import console
from zkjepsen.cli.options import image_ref


@click.group("client")
def client_group() -> None:
    """Programs under test that speak the client wire protocol (docs/client-protocol.md)."""


@client_group.command("check")
@click.argument("cmd", required=False)
@click.option(
    "--recipe",
    default=None,
    metavar="NAME",
    help="Check a registered recipe's program instead of CMD (in the client image), on the "
    "service it runs on.",
)
@click.option(
    "--backend",
    default=None,
    metavar="NAME",
    help="The service to check against: zookeeper (default), etcd, redis, postgres, ... "
    "(`zkjepsen list backends`); default for --recipe: the recipe's own.",
)
@click.option(
    "--in-image",
    is_flag=True,
    help="Run CMD in a container of zkjepsen's client image, as a run does "
    "(--client-dir mounted read-only at /opt/zkjepsen/program).",
)
@click.option(
    "--client-dir",
    default=None,
    metavar="DIR",
    help="Run CMD in this directory (default: the current one).",
)
@click.option(
    "--hosts",
    default=None,
    metavar="CONNECT",
    help="Use these running servers (the service's connect string: ip:2181,... for "
    "ZooKeeper, ip:2379,... for etcd, redis://ip:6379, ...) instead of starting one.",
)
@click.option("--session-timeout", default="4s", show_default=True)
@click.option(
    "--request-timeout",
    default="15s",
    show_default=True,
    help="How long to wait for each answer (init: 20 s).",
)
@click.option("--image", default=None, metavar="NAME", callback=image_ref)
def client_check(
    cmd: str | None,
    recipe: str | None,
    backend: str | None,
    in_image: bool,
    client_dir: str | None,
    hosts: str | None,
    session_timeout: str,
    request_timeout: str,
    image: str | None,
) -> None:
    """Drive CMD (run by /bin/sh -c, here or with --in-image in a client container) through the
    protocol against a live server of the service (--backend; ZooKeeper by default); print one
    sentence per thing it got wrong. Exit 0 conforms, 1 does not. The check's folder in the
    store (client-check/) holds its run.log."""
    from zkjepsen.cli.options import positive_duration
    from zkjepsen.errors import BadInput

    if (cmd is None) == (recipe is None):
        raise BadInput("give a command to check, or --recipe NAME, not both")
    if cmd is not None and not cmd.strip():
        raise BadInput("the command to check is empty; give the program's command line")
    # Every option is checked here, before an image is built or a server started.
    backend = _backend(recipe, backend)
    st = positive_duration(session_timeout, "--session-timeout")
    rt = positive_duration(request_timeout, "--request-timeout")
    if hosts is not None:
        hosts = service_hosts(hosts, backend)
    if client_dir is not None and (not client_dir.strip() or not Path(client_dir).is_dir()):
        raise BadInput(f"--client-dir {client_dir!r} is not a directory")
    argv = ["/bin/sh", "-c", cmd or ""] if recipe is None else recipe_argv(recipe)
    in_image = in_image or recipe is not None  # a recipe's program runs in the client image
    label = f"recipe {recipe}" if recipe else repr(cmd)
    from zkjepsen.docker import resources
    from zkjepsen.store import check_root, new_run_dir

    check_root(None)  # the check's folder (run.log, the server's logs) is in the store
    # The engine first: without one, nothing is created (no folder, `latest` where it was).
    docker = resources.docker_client() if in_image or not hosts else None
    run_dir = new_run_dir("client-check", None)
    Check(argv, backend, label, run_dir, st, rt).run(hosts, in_image, client_dir, image, docker)


def _backend(recipe: str | None, backend: str | None) -> str:
    from zkjepsen.backends.registry import DEFAULT_BACKEND, backend_info
    from zkjepsen.recipes import resolve_backend, validate_recipe

    if recipe is None:
        return backend_info(backend).name if backend is not None else DEFAULT_BACKEND
    validate_recipe(recipe)
    return resolve_backend(recipe, backend)


def service_hosts(text: str, backend: str) -> str:
    """--hosts checked as the service's connect string (the scheme and a Sentinel master's
    name aside, a host[:port] list), before anything connects to it."""
    import re

    from zkjepsen.backends.registry import backend_info
    from zkjepsen.backends.session import session_class
    from zkjepsen.cli.options import check_hosts
    from zkjepsen.errors import BadInput

    family = backend_info(backend).family
    if family == "zookeeper":
        return check_hosts(text)
    m = re.match(r"^\s*([a-z-]+://)?(\w[\w.-]*@)?(.*)$", text)
    if m and (m.group(1) or m.group(2)) and family != "redis":  # only Redis's form has them
        raise BadInput(f"--hosts {text!r}: {backend} takes host:port[,host:port...], no scheme")
    servers = m.group(3) if m else text
    check_hosts(servers.split("/")[0] or text, f"--hosts (for {backend})")
    try:  # read as the service's own session reads it (it parses, it does not connect)
        session_class(family)(text.strip(), timeout=1.0)
    except (ValueError, TypeError) as e:
        raise BadInput(
            f"--hosts {text!r} is not a connect string of {backend} ({e}); see "
            "`zkjepsen client check --help` for each service's form"
        ) from None
    return text.strip()


def recipe_argv(recipe: str) -> list[str]:
    """The command line of a registered recipe's program (BadInput when it names none)."""
    from zkjepsen.errors import BadInput
    from zkjepsen.recipes import validate_recipe
    from zkjepsen.run.resolve import program_for

    validate_recipe(recipe)
    plan = program_for(recipe, "lock")
    if plan is None or recipe == "exec" or recipe.startswith("exec:"):
        raise BadInput(f"recipe {recipe} names no program; give the command instead")
    return list(plan.argv)


class Check:
    """One `client check`: the servers (started here, or --hosts), the program (here, or in a
    client container), the script (client/conformance.py), its run.log and its verdict."""

    def __init__(self, argv, backend: str, label: str, run_dir, st: float, rt: float) -> None:
        from zkjepsen.backends.registry import backend_info, service_of
        from zkjepsen.run.runner import RunLog

        self.argv, self.backend, self.label, self.run_dir = argv, backend, label, run_dir
        self.info = backend_info(backend)
        self.service = service_of(backend).label  # "ZooKeeper", "etcd", ...
        self.st, self.rt = st, rt
        self.log = RunLog(run_dir.run_log)

    def run(self, hosts: str | None, in_image: bool, client_dir: str | None, image, docker) -> None:
        """`docker`: the engine's client (connected before the check's folder was made), or
        None for a check of a program here against --hosts."""
        from zkjepsen.docker import resources

        client_image = servers = None
        if docker is not None:
            server_image, client_image = self._images(docker, image)
            if not hosts:
                servers = self._servers(docker, server_image, client_image)
        run_id = servers.run_id if servers is not None else resources.new_run_id()
        self.log(f"run {run_id}: client check of {self.label} on {self.backend}")
        console.print(
            f"client check {run_id}: {self.label} on {self.backend} ({self.run_dir.path})"
        )
        try:
            argv = self.argv
            if in_image:
                assert client_image is not None  # made above for an in-image check
                _require_shared_files(docker, client_image, run_id)
                argv = in_container(argv, client_image, run_id, client_dir)
            self.log(f"program: {' '.join(argv)}")
            if servers is None:
                assert hosts is not None  # no servers of our own: the user's
                self._check(argv, hosts, client_dir, None)
            else:
                with self._serving(servers):
                    self._check(argv, servers.connect_string(), client_dir, servers)
        finally:
            if docker is not None:  # the program's containers (a killed `docker run` leaves them)
                flt = {"label": f"{resources.RUN_LABEL}={run_id}"}
                for c in docker.containers.list(all=True, filters=flt):
                    try:
                        c.remove(force=True)
                    except Exception:  # noqa: BLE001 - already gone
                        pass

    def _images(self, docker, image: str | None) -> tuple[str, str]:
        """The servers' image and the program's (the client image the service's clients run:
        zkjepsen's shared one, or the servers' own, etcd's). `--image`: the client image's."""
        from zkjepsen.backends.registry import client_recipe, image_recipe
        from zkjepsen.cli.cluster import ensure_image

        clients = client_recipe(self.backend)
        server = ensure_image(
            docker, image if clients is None else None, recipe=image_recipe(self.backend)
        ).tag
        if clients is None:
            return server, server
        return server, ensure_image(docker, image, recipe=clients).tag

    def _servers(self, docker, server_image: str, client_image: str):
        """The service's smallest cluster (one server where it can be one), not started."""
        from zkjepsen.backends.registry import make_backend, settings_for
        from zkjepsen.docker import resources
        from zkjepsen.spec import TestSpec

        nodes = self.info.nodes or 1
        return make_backend(
            self.backend,
            TestSpec(nodes=nodes, service=settings_for(self.backend, None)),
            self.run_dir.path,
            client=docker,
            engine=resources.DEFAULT_ENGINE,
            server_image=server_image,
            client_image=client_image,
        )

    @contextmanager
    def _serving(self, servers) -> Iterator[None]:
        """The servers up for the check, removed afterwards and on a signal."""
        from zkjepsen.docker import signals

        with signals.teardown_on_signals():
            try:
                with console.status(f"starting {self.service} for the check"):
                    servers.start()
                self.log(f"servers up: {servers.connect_string()}")
                yield
            finally:
                servers.stop()
                self.log("servers removed")

    def _view(self, hosts: str, servers):
        from zkjepsen.client.serverview import ServiceView, ZooKeeperView

        if self.info.family == "zookeeper":
            return ZooKeeperView(hosts, self.st)
        if servers is not None:
            session = servers.host_session(self.st)
        else:
            from zkjepsen.backends.session import session_class

            session = session_class(self.info.family)(hosts, timeout=self.st)
        return ServiceView(self.service, session)

    def _check(self, argv: list[str], hosts: str, client_dir: str | None, servers) -> None:
        from zkjepsen.client.conformance import Conformance

        t = time.monotonic()
        cwd = None if argv[0] == "docker" else client_dir
        report = Conformance(
            argv,
            hosts,
            cwd=cwd,
            env=dict(os.environ),
            session_timeout_s=self.st,
            request_timeout_s=self.rt,
            view=self._view(hosts, servers),
            log=self.log,
            log_dir=self.run_dir.path,  # the programs' stderr: their logs, not the console's
        ).run()
        for note in report.notes:
            self.log(f"note: {note}")
            console.print(f"note: {note}")
        took = time.monotonic() - t
        if report.ok:
            self.log(f"conforms: {report.steps} requests answered as the protocol says")
            console.print(
                f"[bold green]conforms[/]: {self.label} on {self.backend}: {report.steps} "
                f"requests answered as the protocol says ({took:.1f} s)"
            )
            raise SystemExit(0)
        for p in report.problems:
            self.log(f"problem: {p}")
            click.echo(f"- {p}")
        self.log(f"does not conform: {len(report.problems)} problem(s)")
        console.print(
            f"[bold red]does not conform[/]: {len(report.problems)} problem(s); the programs' "
            f"logs: {self.run_dir.path}/program-A.log, program-B.log"
        )
        raise SystemExit(1)


def _require_shared_files(docker, image: str, run_id: str) -> None:
    """`docker run -v` below needs this machine's files on the engine. Runs copy them through
    the engine's API when it lacks them (docker/mounts.py); this one-off check says so."""
    import tempfile

    from zkjepsen.docker.mounts import shares_filesystem
    from zkjepsen.errors import EnvironmentProblem

    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        if not shares_filesystem(docker, image, run_id, Path(d)):
            raise EnvironmentProblem(
                "the program check in a client container bind-mounts this machine's files, "
                "and the Docker engine (DOCKER_HOST) does not see them; check against an "
                "engine on this machine's filesystem, or run the program here without the image"
            )


def in_container(argv: list[str], image: str, run_id: str, client_dir: str | None) -> list[str]:
    """`docker run -i` of argv in the client image, mounted as client/pool.py mounts a run's
    clients (our package and the client libraries read-only, the program's directory
    read-only) and confined as a run's program is (client/seal.py: its uid, no capability);
    host network, which reaches the servers' bridge addresses."""
    from zkjepsen.client import seal
    from zkjepsen.client.command import PROGRAM_DIR
    from zkjepsen.client.pool import SITE_DIR, SRC_DIR, client_library_binds, package_bind
    from zkjepsen.docker import resources

    out = ["docker", "run", "--rm", "-i", "--network", "host", "--entrypoint", argv[0]]
    out += seal.docker_run_args()
    for k, v in resources.labels(run_id, "client-check").items():
        out += ["--label", f"{k}={v}"]
    ((pkg, bind),) = package_bind().items()
    out += ["-v", f"{pkg}:{bind['bind']}:ro"]
    for host, lib in client_library_binds().items():  # kazoo, redis, psycopg: as a run's clients
        out += ["-v", f"{host}:{lib['bind']}:ro"]
    out += [
        "-e",
        f"PYTHONPATH={SRC_DIR}:{SITE_DIR}",
        "-e",
        "PYTHONUNBUFFERED=1",
    ]
    if client_dir is not None:
        out += ["-v", f"{Path(client_dir).resolve()}:{PROGRAM_DIR}:ro", "-w", PROGRAM_DIR]
    return [*out, image, *argv[1:]]
