"""The `zkjepsen` command. Each subcommand is thin: it parses options and calls the library."""

from __future__ import annotations

import sys

import click

from zkjepsen.cli_check import check
from zkjepsen.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, ZkJepsenError
from zkjepsen.harness.resources import Terminated


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Show, with evidence, where ZooKeeper locks break atomicity."""


def _register() -> None:
    from zkjepsen.cli_cluster import cleanup, cluster_group, demo, image_group
    from zkjepsen.cli_matrix import list_command, matrix_command
    from zkjepsen.cli_reproduce import replay_command, scenario_group, shrink_command
    from zkjepsen.cli_test import analyze_command, test_command

    for command in (image_group, cluster_group, cleanup, demo, test_command, analyze_command,
                    list_command, matrix_command, replay_command, shrink_command,
                    scenario_group):
        cli.add_command(command)


_register()
cli.add_command(check)


def main(argv: list[str] | None = None) -> None:
    """Entry point: turn every expected error into one sentence and an exit status."""
    try:
        rv = cli.main(args=argv, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("zkjepsen: interrupted; everything this run started was removed.", err=True)
        sys.exit(130)
    except click.ClickException as e:
        # Bad options and arguments: click's own message, our exit status.
        click.echo(f"zkjepsen: {e.format_message()}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except ZkJepsenError as e:
        click.echo(f"zkjepsen: {e}", err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo("zkjepsen: interrupted; everything this run started was removed.", err=True)
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
