"""The click application: the command groups, each imported when it is looked up."""

from __future__ import annotations

import importlib
import sys

import click

# command name -> "module:attribute" of its click command, imported on first use.
COMMANDS = {
    "analyze": "zkjepsen.cli.run:analyze_command",
    "check": "zkjepsen.cli.app:check_command",
    "cleanup": "zkjepsen.cli.cluster:cleanup",
    "client": "zkjepsen.cli.client:client_group",
    "cluster": "zkjepsen.cli.cluster:cluster_group",
    "demo": "zkjepsen.cli.cluster:demo",
    "gate": "zkjepsen.cli.gate:gate_command",
    "hunt": "zkjepsen.cli.hunt:hunt_command",
    "image": "zkjepsen.cli.cluster:image_group",
    "list": "zkjepsen.cli.matrix:list_command",
    "matrix": "zkjepsen.cli.matrix:matrix_command",
    "merge": "zkjepsen.cli.matrix:merge_command",
    "replay": "zkjepsen.cli.reproduce:replay_command",
    "report": "zkjepsen.cli.site:report_command",
    "scenario": "zkjepsen.cli.reproduce:scenario_group",
    "serve": "zkjepsen.cli.site:serve_command",
    "shrink": "zkjepsen.cli.reproduce:shrink_command",
    "sweep": "zkjepsen.cli.sweep:sweep_command",
    "test": "zkjepsen.cli.run:test_command",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported when they are looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)


# The compiled fast paths (setup.py builds them with the package when a C compiler is there).
FAST_PATHS = {
    "zkjepsen.history._fastjsonl": "the history reader",
    "zkjepsen.history._fastlog": "the Jepsen log reader",
    "zkjepsen.checker.linear._fastsweep": "the checker's sweep",
    "zkjepsen.checker.linear._fastgroup": "the checker's grouping",
}


def missing_fast_paths() -> list[str]:
    """What of FAST_PATHS this installation lacks (or cannot load), as words."""
    missing = []
    for module, what in FAST_PATHS.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(what)
    return missing


def fast_paths_note() -> str | None:
    """One sentence when zkjepsen runs (partly) in pure Python; None when all is compiled."""
    missing = missing_fast_paths()
    if not missing:
        return None
    return (
        f"{', '.join(missing)} run in pure Python here (not compiled when zkjepsen was "
        "installed: a C compiler and Python's headers are needed, e.g. apt-get install gcc "
        "python3-dev, then reinstall): the same answers, slower"
    )


def print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib import metadata

    note = fast_paths_note()
    click.echo(
        f"zkjepsen {metadata.version('zkjepsen')} (Python {sys.version.split()[0]}): "
        + (note or "the checker and the history reader are compiled")
    )
    ctx.exit(0)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=print_version,
    help="The version, and whether the checker is compiled.",
)
def cli() -> None:
    """Show, with evidence, where distributed locks break: ZooKeeper, etcd, Redis (one master,
    Sentinel, Redlock) and PostgreSQL, in Docker, with faults on servers and clients."""


@click.command(
    "check",
    add_help_option=False,
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.pass_context
def check_command(ctx: click.Context) -> None:
    """Check a history file against a model (exit 0 valid, 1 invalid, 2 unknown)."""
    from zkjepsen.cli.check import run

    ctx.exit(run(ctx.args))
