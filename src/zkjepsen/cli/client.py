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
    help="Check a registered recipe's program instead of CMD (in the client image).",
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
    help="Use this running ensemble (ip:2181,...) instead of starting one.",
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
    in_image: bool,
    client_dir: str | None,
    hosts: str | None,
    session_timeout: str,
    request_timeout: str,
    image: str | None,
) -> None:
    """Drive CMD (run by /bin/sh -c, here or with --in-image in a client container) through the
    protocol against a live ensemble; print one sentence per thing it got wrong. Exit 0
    conforms, 1 does not."""
    from zkjepsen.cli.options import check_hosts, positive_duration
    from zkjepsen.errors import BadInput

    if (cmd is None) == (recipe is None):
        raise BadInput("give a command to check, or --recipe NAME, not both")
    if cmd is not None and not cmd.strip():
        raise BadInput("the command to check is empty; give the program's command line")
    # Every option is checked here, before an image is built or a server started.
    st = positive_duration(session_timeout, "--session-timeout")
    rt = positive_duration(request_timeout, "--request-timeout")
    if hosts is not None:
        hosts = check_hosts(hosts)
    if client_dir is not None and (not client_dir.strip() or not Path(client_dir).is_dir()):
        raise BadInput(f"--client-dir {client_dir!r} is not a directory")
    argv = ["/bin/sh", "-c", cmd or ""] if recipe is None else recipe_argv(recipe)
    in_image = in_image or recipe is not None  # a recipe's program runs in the client image
    label = f"recipe {recipe}" if recipe else repr(cmd)
    need_docker = in_image or not hosts
    if not hosts:
        from zkjepsen.store import check_root

        check_root(None)  # the check's server writes its logs into the store
    docker, image_tag = None, ""  # both set when in_image (it needs Docker)
    if need_docker:
        from zkjepsen.backends.zookeeper.image import zookeeper_recipe
        from zkjepsen.cli.cluster import ensure_image
        from zkjepsen.docker import resources

        docker = resources.docker_client()
        image_tag = ensure_image(docker, image, recipe=zookeeper_recipe()).tag
    from zkjepsen.docker import resources

    run_id = resources.new_run_id()
    try:
        if in_image:
            _require_shared_files(docker, image_tag, run_id)
            argv = in_container(argv, image_tag, run_id, client_dir)
        if hosts:
            _check(argv, hosts, client_dir, st, rt, label)
        else:
            with one_server(docker, image_tag, run_id) as connect:
                _check(argv, connect, client_dir, st, rt, label)
    finally:
        if docker is not None:  # the program's containers (a killed `docker run` leaves them)
            flt = {"label": f"{resources.RUN_LABEL}={run_id}"}
            for c in docker.containers.list(all=True, filters=flt):
                try:
                    c.remove(force=True)
                except Exception:  # noqa: BLE001 - already gone
                    pass


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


@contextmanager
def one_server(docker, image: str | None, run_id: str) -> Iterator[str]:
    """A one-server ZooKeeper ensemble for the check (its connect string), stopped afterwards
    and on a signal."""
    from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
    from zkjepsen.docker import signals
    from zkjepsen.store import new_run_dir

    ens = ZooKeeperEnsemble(
        EnsembleSpec(nodes=1, image=image),
        new_run_dir("client-check", None).path,
        run_id=run_id,
        client=docker,
    )
    with signals.teardown_on_signals():
        try:
            with console.status("starting a ZooKeeper server for the check"):
                ens.start()
            yield ens.connect_string()
        finally:
            ens.stop()


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
    clients (our package and kazoo read-only, the program's directory read-only) and confined
    as a run's program is (client/seal.py: its uid, no capability); host network, which reaches
    the ensemble's bridge addresses."""
    from zkjepsen.client import seal
    from zkjepsen.client.command import PROGRAM_DIR
    from zkjepsen.client.pool import KAZOO_DIR, SITE_DIR, SRC_DIR, package_bind
    from zkjepsen.docker import resources

    out = ["docker", "run", "--rm", "-i", "--network", "host", "--entrypoint", argv[0]]
    out += seal.docker_run_args()
    for k, v in resources.labels(run_id, "client-check").items():
        out += ["--label", f"{k}={v}"]
    ((pkg, bind),) = package_bind().items()
    out += [
        "-v",
        f"{pkg}:{bind['bind']}:ro",
        "-v",
        f"{KAZOO_DIR}:{SITE_DIR}/kazoo:ro",
        "-e",
        f"PYTHONPATH={SRC_DIR}:{SITE_DIR}",
        "-e",
        "PYTHONUNBUFFERED=1",
    ]
    if client_dir is not None:
        out += ["-v", f"{Path(client_dir).resolve()}:{PROGRAM_DIR}:ro", "-w", PROGRAM_DIR]
    return [*out, image, *argv[1:]]


def _check(
    argv: list[str], hosts: str, client_dir: str | None, st: float, rt: float, label: str
) -> None:
    from zkjepsen.client.conformance import Conformance

    t = time.monotonic()
    cwd = None if argv[0] == "docker" else client_dir
    report = Conformance(
        argv,
        hosts,
        cwd=cwd,
        env=dict(os.environ),
        session_timeout_s=st,
        request_timeout_s=rt,
        connect=_connect(st),
    ).run()
    for note in report.notes:
        console.print(f"note: {note}")
    if report.ok:
        console.print(
            f"[bold green]conforms[/]: {label}: {report.steps} "
            f"requests answered as the protocol says ({time.monotonic() - t:.1f} s)"
        )
        raise SystemExit(0)
    for p in report.problems:
        click.echo(f"- {p}")
    console.print(f"[bold red]does not conform[/]: {len(report.problems)} problem(s)")
    raise SystemExit(1)


def _connect(session_timeout_s: float):
    def connect(hosts: str):
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=hosts, timeout=session_timeout_s)
        zk.start(timeout=15)
        return zk

    return connect
