"""The `zkjepsen` command: the only code that prints to the terminal or exits.

Each command group lives in its own module and is imported only when that command runs, so
`zkjepsen check` starts about as fast as a bare Python (no Docker client, kazoo or rich).
"""

from __future__ import annotations

import importlib
import sys

import click

from zkjepsen.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, ZkJepsenError

# command name -> "module:attribute" of its click command, imported on first use.
COMMANDS = {
    "analyze": "zkjepsen.cli.run:analyze_command",
    "check": "zkjepsen.cli.check:check",
    "cleanup": "zkjepsen.cli.cluster:cleanup",
    "cluster": "zkjepsen.cli.cluster:cluster_group",
    "demo": "zkjepsen.cli.cluster:demo",
    "image": "zkjepsen.cli.cluster:image_group",
    "list": "zkjepsen.cli.matrix:list_command",
    "matrix": "zkjepsen.cli.matrix:matrix_command",
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


INTERRUPTED = "zkjepsen: interrupted; everything this run started was removed."


def main(argv: list[str] | None = None) -> None:
    """Entry point: turn every expected error into one sentence and an exit status."""
    from zkjepsen.harness.signals import Terminated

    try:
        rv = cli.main(args=argv, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo(INTERRUPTED, err=True)
        sys.exit(130)
    except click.ClickException as e:
        # Bad options and arguments: click's own message, our exit status.
        click.echo(f"zkjepsen: {e.format_message()}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except ZkJepsenError as e:
        click.echo(f"zkjepsen: {e}", err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo(INTERRUPTED, err=True)
        sys.exit(130)
    except Terminated as e:
        click.echo(f"zkjepsen: {e}; everything this run started was removed.", err=True)
        sys.exit(143)
    except Exception as e:  # noqa: BLE001 - last resort: one line, not a traceback
        click.echo(f"zkjepsen: internal error: {type(e).__name__}: {e} "
                   "(please report it with the run's run.log)", err=True)
        sys.exit(EXIT_INTERNAL)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
