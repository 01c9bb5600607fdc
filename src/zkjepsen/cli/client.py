"""`zkjepsen client check CMD`: does a program speak the client wire protocol correctly?"""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from zkjepsen.cli.display import console


@click.group("client")
def client_group() -> None:
    """Programs under test that speak the client wire protocol (docs/client-protocol.md)."""


@client_group.command("check")
@click.argument("cmd")
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
@click.option("--image", default=None, metavar="NAME")
def client_check(
    cmd: str,
    client_dir: str | None,
    hosts: str | None,
    session_timeout: str,
    request_timeout: str,
    image: str | None,
) -> None:
    """Drive CMD (run by /bin/sh -c on this machine) through the protocol against a live
    ensemble; print one sentence per thing it got wrong. Exit 0 conforms, 1 does not."""
    from zkjepsen.cli.options import parse_duration
    from zkjepsen.client.conformance import Conformance
    from zkjepsen.errors import BadInput

    if client_dir is not None and not Path(client_dir).is_dir():
        raise BadInput(f"client dir {client_dir} is not a directory")
    st = parse_duration(session_timeout, "--session-timeout")
    rt = parse_duration(request_timeout, "--request-timeout")

    def check(connect_string: str) -> None:
        t = time.monotonic()
        report = Conformance(
            ["/bin/sh", "-c", cmd],
            connect_string,
            cwd=client_dir,
            env=dict(os.environ),
            session_timeout_s=st,
            request_timeout_s=rt,
            connect=_connect(st),
        ).run()
        for note in report.notes:
            console.print(f"note: {note}")
        if report.ok:
            console.print(
                f"[bold green]conforms[/]: {report.steps} requests answered as the "
                f"protocol says ({time.monotonic() - t:.1f} s)"
            )
            raise SystemExit(0)
        for p in report.problems:
            click.echo(f"- {p}")
        console.print(f"[bold red]does not conform[/]: {len(report.problems)} problem(s)")
        raise SystemExit(1)

    if hosts:
        check(hosts)
        return
    from zkjepsen.cli.cluster import ensure_image
    from zkjepsen.harness import resources, signals
    from zkjepsen.harness.ensemble import DockerEnsemble, EnsembleSpec
    from zkjepsen.store import new_run_dir

    client = resources.docker_client()
    info = ensure_image(client, image)
    ens = DockerEnsemble(
        EnsembleSpec(nodes=1, image=info.tag), new_run_dir("client-check", None).path, client=client
    )
    with signals.teardown_on_signals():
        try:
            with console.status("starting a ZooKeeper server for the check"):
                ens.start()
            check(ens.connect_string())
        finally:
            ens.stop()


def _connect(session_timeout_s: float):
    def connect(hosts: str):
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=hosts, timeout=session_timeout_s)
        zk.start(timeout=15)
        return zk

    return connect
