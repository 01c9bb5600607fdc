"""The `zkjepsen` command: the only code that prints to the terminal or exits.

Each command group lives in its own module (`cli.app` maps names to modules) and is imported only
when that command runs; `zkjepsen check` does not even load click, so it starts about as fast as
a bare Python.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from zkjepsen.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, ZkJepsenError

if TYPE_CHECKING:
    from zkjepsen.run.outcome import ManyCut, Teardown


def exit_interrupted(message: str, code: int) -> None:
    """Say what the interrupt left and exit, ignoring any further signal: a second Ctrl-C that
    arrives after the teardown must not turn the exit into a KeyboardInterrupt at shutdown."""
    import signal

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    print(message, file=sys.stderr)
    sys.exit(code)


def interrupted_message(e: BaseException, what: str = "interrupted") -> str:
    """What an interrupt left: the runner raises it as its typed twin (run/outcome.py's
    `Stopped`) carrying the teardown (run id, store, what the engine still has of the run,
    asked after the teardown, and the phase), a command of many runs what finished and what
    was cut (`many`), and cli/matrix.py the matrix's own store; the run's folder says what in
    it is complete."""
    from zkjepsen.run.outcome import stopped_by  # not at the top: `check` never needs it

    carried = stopped_by(e)  # (click wraps a KeyboardInterrupt in an Abort)
    td = carried.teardown if carried else None
    matrix = carried.matrix_note if carried else None
    many = carried.many if carried else None
    if many is not None:  # a command of many runs (run/outcome.py ManyCut)
        return many_message(what, many, matrix)
    if td is None:
        return f"zkjepsen: {what}" + (f"; {matrix}." if matrix else ".")
    during = f" during the {td.phase}" if td.phase else ""
    if td.left:
        engine = (
            f"run {td.run_id} left {', '.join(td.left)} behind (`zkjepsen cleanup` removes them)"
        )
    else:
        engine = f"everything run {td.run_id} started was removed"
    run = f"zkjepsen: {what}{during}; {engine}; {folder_state(td)}"
    return f"{run}; {matrix}" if matrix else run


def many_message(what: str, many: ManyCut, matrix: str | None) -> str:
    """The last line of an interrupted command of many runs, as `test`'s is of one: how many
    finished and where, each run cut short and what its folder holds, and how to go on."""
    n = len(many.finished)
    text = f"zkjepsen: {what}; {n} run{'' if n == 1 else 's'} finished"
    if many.finished:
        text += f" (folders: {', '.join(str(p) for p in many.finished)})"
    for td in many.cut:
        during = f" during the {td.phase}" if td.phase else ""
        text += f"; a run cut short{during}: {folder_state(td)}"
    left = [td for td in many.cut if td.left]
    if left:
        text += "; " + ", ".join(f"run {td.run_id} left {', '.join(td.left)}" for td in left)
        text += " behind (`zkjepsen cleanup` removes them)"
    elif many.cut:
        text += "; everything those runs started was removed"
    return text + (f"; {matrix}" if matrix else "") + "."


def folder_state(td: Teardown) -> str:
    """`its folder DIR has test.json, history.jsonl; `zkjepsen analyze DIR` writes
    results.json, ...`: where the run is and what in it is complete."""
    from zkjepsen.store import RunDir

    if not str(td.store_dir) or str(td.store_dir) == ".":
        return "it has no folder here"
    present, missing = RunDir(td.store_dir).inventory()
    hist = RunDir(td.store_dir).history.name
    whole = td.phase in ("teardown", "check", "report")
    has = [n + ("" if whole or n != hist else " (up to the interrupt)") for n in present]
    text = f"its folder {td.store_dir} has {', '.join(has) or 'nothing yet'}"
    if not missing:
        return text + " (complete)"
    if hist not in present:
        return text + "; no history was written"
    return text + f"; `zkjepsen analyze {td.store_dir}` writes {', '.join(missing)}"


def fast_check(argv: list[str]) -> None:
    """`zkjepsen check ...` without loading click: a corpus of small files is checked one
    process each, so start-up time is most of the cost."""
    from zkjepsen.cli.check import run

    try:
        code = run(argv)
    except ZkJepsenError as e:
        print(f"zkjepsen: {e}", file=sys.stderr)
        code = e.exit_code
    except KeyboardInterrupt:
        code = 130
    except Exception as e:  # noqa: BLE001 - last resort: one line, not a traceback
        print(
            f"zkjepsen: internal error: {type(e).__name__}: {e} (please report it)", file=sys.stderr
        )
        code = EXIT_INTERNAL
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Entry point: turn every expected error into one sentence and an exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["check"]:
        fast_check(args[1:])
    import click

    from zkjepsen.cli.app import cli
    from zkjepsen.docker.signals import Terminated
    from zkjepsen.store import RUN_LOG

    try:
        rv = cli.main(args=args, standalone_mode=False)
    except click.exceptions.Abort as e:
        exit_interrupted(interrupted_message(e), 130)
    except click.ClickException as e:
        # Bad options and arguments: click's own message, our exit status.
        click.echo(f"zkjepsen: {e.format_message()}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except ZkJepsenError as e:
        click.echo(f"zkjepsen: {e}", err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt as e:
        exit_interrupted(interrupted_message(e), 130)
    except Terminated as e:
        exit_interrupted(interrupted_message(e, str(e)), 143)
    except Exception as e:  # noqa: BLE001 - last resort: one line, not a traceback
        click.echo(
            f"zkjepsen: internal error: {type(e).__name__}: {e} "
            f"(please report it with the run's {RUN_LOG})",
            err=True,
        )
        sys.exit(EXIT_INTERNAL)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
