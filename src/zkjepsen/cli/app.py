"""The click application: the command groups, each imported when it is looked up."""

from __future__ import annotations

import importlib

import click

# command name -> "module:attribute" of its click command, imported on first use.
COMMANDS = {
    "analyze": "zkjepsen.cli.run:analyze_command",
    "check": "zkjepsen.cli.app:check_command",
    "cleanup": "zkjepsen.cli.cluster:cleanup",
    "client": "zkjepsen.cli.client:client_group",
    "cluster": "zkjepsen.cli.cluster:cluster_group",
    "demo": "zkjepsen.cli.cluster:demo",
    "image": "zkjepsen.cli.cluster:image_group",
    "list": "zkjepsen.cli.matrix:list_command",
    "matrix": "zkjepsen.cli.matrix:matrix_command",
    "merge": "zkjepsen.cli.matrix:merge_command",
    "replay": "zkjepsen.cli.reproduce:replay_command",
    "scenario": "zkjepsen.cli.reproduce:scenario_group",
    "shrink": "zkjepsen.cli.reproduce:shrink_command",
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


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Show, with evidence, where ZooKeeper locks break atomicity."""


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
