"""`zkjepsen image|cluster|cleanup|demo`: the harness on the command line."""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble
from zkjepsen.backends.zookeeper.image import zookeeper_recipe
from zkjepsen.cli.attach import attach
from zkjepsen.cli.options import STORE_PATH, image_ref, not_empty, run_ids
from zkjepsen.cli.versions import service_options, service_tables, settings_of
from zkjepsen.docker import image as image_lib
from zkjepsen.docker import resources, signals
from zkjepsen.docker.image import ImageInfo, default_tag, image_exists
from zkjepsen.errors import BadInput, EnvironmentProblem
from zkjepsen.store import RunDir, check_root, new_run_dir

console = Console(stderr=True, soft_wrap=True)  # a log line stays one line (CI logs, grep)


def ensure_image(client, image: str | None, force: bool = False, *, recipe) -> ImageInfo:
    """`docker.image.ensure_image` with a spinner and a closing line on the terminal
    (`recipe`: the ZooKeeper node image's or another backend's server image)."""
    if image or (image_exists(client, default_tag(recipe)) and not force):
        return image_lib.ensure_image(client, image, force=force, recipe=recipe)
    tag = default_tag(recipe)
    console.print(f"building {tag} (first time only; docs/services.md has each image's time)")
    with image_lib.Heartbeat(console.print) as progress:  # a line per phase, one every 15 s
        info = image_lib.ensure_image(
            client, None, force=force, on_progress=progress, recipe=recipe
        )
    console.print(f"built {info.tag}: {info.size_bytes / 1e6:.0f} MB in {info.build_seconds:.0f} s")
    return info


def image_option(f):
    return click.option(
        "--image",
        default=None,
        metavar="NAME",
        callback=image_ref,
        help="Use this local image instead of building zkjepsen's own.",
    )(f)


@click.group("image")
def image_group() -> None:
    """The servers' images, built locally from Debian packages, no registry: ZooKeeper's node
    image (also the client image), etcd's, Redis's, PostgreSQL's (--backend)."""


def backend_option(f):
    return click.option(
        "--backend",
        default="zookeeper",
        show_default=True,
        help="zookeeper, etcd, redis, redis-sentinel, redlock, postgres, mariadb, memcached "
        "(`zkjepsen list backends`).",
    )(f)


@image_group.command("build")
@click.option("--force", is_flag=True, help="Rebuild even if the image for these inputs exists.")
@backend_option
@service_options("image")
def image_build(force: bool, backend: str, **service_opts) -> None:
    """Build the node image (or a backend's server image) with debootstrap + docker import."""
    from zkjepsen.backends.registry import image_recipe

    # Of the version its service's options name (ZooKeeper's default 3.8, etcd's 3.4...).
    recipe = image_recipe(backend, settings_of(backend, service_tables("image", service_opts)))
    info = ensure_image(resources.docker_client(), None, force=force, recipe=recipe)
    click.echo(
        f"{info.tag}\t{info.size_bytes / 1e6:.0f} MB"
        + (f"\tbuilt in {info.build_seconds:.1f} s" if info.built else "\t(cached)")
    )
    # The setup step every user runs once: the place to say the checker is not compiled (pip
    # shows no build output unless -v; `zkjepsen --version` says it too).
    from zkjepsen.cli.app import fast_paths_note

    note = fast_paths_note()
    if note:
        click.echo(f"zkjepsen: note: {note}", err=True)


@click.group("cluster")
def cluster_group() -> None:
    """Bring a cluster of any service up (ZooKeeper, etcd, Redis, PostgreSQL), look at it,
    take it down."""


@cluster_group.command("up")
@click.option("--nodes", default=3, show_default=True, type=click.IntRange(1, 9))
@click.option(
    "--store",
    "store_root",
    default=None,
    type=STORE_PATH,
    help="Store root (default ./store).",
)
@image_option
@backend_option
@service_options("cluster")
def cluster_up(
    nodes: int, store_root: Path | None, image: str | None, backend: str, **service_opts
) -> None:
    """Start a cluster of any service's servers (ZooKeeper, etcd, Redis, PostgreSQL) and leave
    it running (take it down with `cluster down`)."""
    from zkjepsen.backends.registry import (
        backend_info,
        check_nodes,
        client_recipe,
        image_recipe,
        make_backend,
    )
    from zkjepsen.spec import TestSpec

    b = backend_info(backend)
    settings = settings_of(backend, service_tables("cluster", service_opts))
    nodes = b.nodes or nodes
    check_nodes(backend, nodes)
    check_root(store_root)
    client = resources.docker_client()
    server_image = ensure_image(client, image, recipe=image_recipe(backend, settings)).tag
    clients = client_recipe(backend, settings)
    client_image = (
        server_image if clients is None else ensure_image(client, None, recipe=clients).tag
    )
    ens = make_backend(
        backend,
        TestSpec(nodes=nodes, service=settings),
        new_run_dir("cluster", store_root).path,
        client=client,
        engine=resources.DEFAULT_ENGINE,
        server_image=server_image,
        client_image=client_image,
    )
    t0 = time.monotonic()
    with signals.teardown_on_signals():
        try:
            with console.status(f"starting {nodes} {backend} servers ({ens.run_id})"):
                ens.start()
            ens.detach()
        except BaseException:
            ens.stop()
            raise
    leader = ens.leader()
    what = f" ({settings.describe()})" if settings.describe() else ""
    console.print(
        f"{nodes} {backend} servers{what} serving in {time.monotonic() - t0:.1f} s"
        + (f"; leader {leader.name}" if leader else "")
    )
    click.echo(f"{ens.run_id}\t{ens.connect_string()}")


def _pick_run(client, run_id: str | None, action: str) -> str:
    """The run `cluster status|down` act on. Without a run id only a cluster started by
    `cluster up` (detached) qualifies: never another process's `test`, which would hang or
    fail when its ensemble vanished. A named run that a live process owns (a `test`, or a
    `cluster up` still starting) is not taken down under it either."""
    runs = resources.find_runs(client)
    if run_id:
        run = runs.get(run_id)
        if action == "down" and run is not None and not run.detached and run.owner_alive:
            raise BadInput(
                f"run {run_id} belongs to a running zkjepsen process ("
                f"{_owner_pids(run)}); stop that process (Ctrl-C) instead"
            )
        return run_id
    running = sorted(r.run_id for r in runs.values() if r.containers and r.detached)
    if not running:
        raise BadInput(
            "no cluster started by `zkjepsen cluster up` is running; start one "
            "with `zkjepsen cluster up` (runs of `zkjepsen test` are not clusters)"
        )
    if len(running) > 1:
        raise BadInput(
            f"{len(running)} clusters are running ({', '.join(running)}); name one by its run id"
        )
    return running[0]


def _owner_pids(run: resources.RunResources) -> str:
    pids = sorted({o.partition(":")[0] for o in run.owners if resources.owner_alive(o)})
    return "pid " + ", ".join(pids)


@cluster_group.command("status")
@click.argument("run_id", required=False, callback=run_ids)
def cluster_status(run_id: str | None) -> None:
    """Show each node's mode, log position (ZooKeeper's zxid, etcd's raft term and index),
    connection count and the version its server says it runs."""
    client = resources.docker_client()
    ens = attach(client, _pick_run(client, run_id, "status"))
    table = Table(title=f"{ens.run_id}  {ens.connect_string()}")
    columns = ("node", "ip", "container", "mode", "position", "connections", "version")
    for col in columns:
        table.add_column(col)
    for row in ens.status():
        table.add_row(*("" if row.get(k) is None else str(row[k]) for k in columns))
    Console().print(table)


@cluster_group.command("down")
@click.argument("run_id", required=False, callback=run_ids)
def cluster_down(run_id: str | None) -> None:
    """Remove a cluster's containers and network (its logs stay in the store)."""
    client = resources.docker_client()
    ens = attach(client, _pick_run(client, run_id, "down"))
    ens.stop()
    click.echo(f"removed {ens.run_id} (logs in {ens.store_dir})")


@click.command("cleanup")
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Also remove detached clusters and runs whose owner is still alive.",
)
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.option(
    "--engine",
    "engines",
    multiple=True,
    callback=not_empty,
    metavar="ENGINE",
    help="Clean up this engine (context name or DOCKER_HOST URL; repeatable) instead "
    "of the environment's.",
)
@click.argument("run_ids", nargs=-1, callback=run_ids)
def cleanup(everything: bool, dry_run: bool, engines: tuple, run_ids: tuple) -> None:
    """Remove what crashed zkjepsen runs left behind (containers, networks, scratch files,
    a killed image build's folder); with RUN_IDS, only those runs'.

    Only resources labelled by zkjepsen are touched. Faults die with them: partitions live in the
    containers' own network namespaces, paused containers are killed, faketime files are in the
    run's scratch directory.
    """
    from zkjepsen.docker.engine import parse_engines

    for engine in parse_engines(engines):
        client = engine.client()
        on = f" on {engine.name}" if engines else ""
        runs = resources.find_runs(client, engine.key)
        if run_ids:
            runs = {k: v for k, v in runs.items() if k in run_ids}
        for run in sorted(runs.values(), key=lambda r: r.run_id):
            if not (everything or run.orphaned):
                reason = (
                    "detached cluster"
                    if run.detached
                    else "still starting"
                    if run.starting
                    else "owner still running"
                )
                click.echo(f"kept    {run.run_id}{on} ({reason}; use --all to remove)")
                continue
            if dry_run:
                click.echo(
                    f"would remove {run.run_id}{on}: {len(run.containers)} containers, "
                    f"{len(run.networks)} networks"
                )
                continue
            nc, nn = resources.remove_run(client, run.run_id)
            click.echo(f"removed {run.run_id}{on}: {nc} containers, {nn} networks")
        if not runs:
            click.echo(f"nothing to clean up{on}")
    if not run_ids:  # this machine's, whatever the engines: a killed image build's folders
        for d in image_lib.remove_unfinished_builds(dry_run):
            click.echo(f"{'would remove' if dry_run else 'removed'} unfinished image build {d}")


@click.command("demo")
@click.option("--nodes", default=5, show_default=True, type=click.IntRange(1, 9))
@click.option(
    "--time-limit",
    default=40.0,
    show_default=True,
    type=float,
    help="Length of the lock run's main phase (seconds).",
)
@image_option
def demo(nodes: int, time_limit: float, image: str | None) -> None:
    """The main job: an ensemble round trip, then a short kazoo-Lock run with a frozen holder."""
    from zkjepsen.cli.display import LiveDisplay
    from zkjepsen.cli.run import print_verdict
    from zkjepsen.run.runner import run_test
    from zkjepsen.spec import TestSpec

    spec = TestSpec(  # made first: a bad --time-limit is refused before anything starts
        recipe="kazoo",
        workload="counter",
        nemesis=["pause-client"],
        nodes=3,
        clients=5,
        time_limit_s=time_limit,
        recovery_s=5.0,
        session_timeout_s=3.0,
        seed=1,
        image=image,
        interval_s=8.0,
        name="demo-kazoo-pause-client",
    )
    check_root(None)
    client = resources.docker_client()
    info = ensure_image(client, image, recipe=zookeeper_recipe())
    _round_trip(client, nodes, info.tag)
    console.print(
        f"\nNow a {time_limit:g} s run: 5 clients increment a counter under kazoo's Lock "
        "on 3 servers while the lock holder is frozen for 1.5x its session timeout."
    )
    run = run_test(spec, display=LiveDisplay())
    print_verdict(run)
    console.print(f"open {RunDir(run.store_dir).timeline} to see who held the lock when")


def _round_trip(client, nodes: int, image: str) -> None:
    """Bring up an ensemble, write through one server, read through another, tear down."""
    from kazoo.client import KazooClient

    spec = EnsembleSpec(nodes=nodes, image=image)
    t0 = time.monotonic()
    with (
        signals.teardown_on_signals(),
        ZooKeeperEnsemble(spec, new_run_dir("demo-ensemble").path, client=client) as ens,
    ):
        console.print(
            f"{nodes} servers serving in {time.monotonic() - t0:.1f} s "
            f"(run {ens.run_id}); leader {ens.leader().name}"
        )
        first, last = ens.nodes[0], ens.nodes[-1]
        writer = KazooClient(hosts=first.address, timeout=4)
        reader = KazooClient(hosts=last.address, timeout=4)
        writer.start(timeout=10)
        reader.start(timeout=10)
        try:
            value = f"written through {first.name} at {time.time():.3f}".encode()
            writer.ensure_path("/zkjepsen")
            writer.create("/zkjepsen/demo", value)
            reader.sync("/zkjepsen/demo")  # a follower may lag the leader without sync()
            got, _ = reader.get("/zkjepsen/demo")
        finally:
            for c in (writer, reader):
                c.stop()
                c.close()
        if got != value:
            raise EnvironmentProblem(f"read {got!r} through {last.name}, wrote {value!r}")
        console.print(f"wrote through {first.name}, read the same value through {last.name}")
    left = resources.find_runs(client).get(ens.run_id)
    console.print(
        "torn down: "
        + (
            "nothing left behind"
            if not left or not (left.containers or left.networks)
            else f"LEFTOVERS {left}"
        )
    )
