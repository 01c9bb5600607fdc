"""`zkjepsen check HISTORY --model MODEL`: check a history file and print one verdict.

Exit status: 0 valid, 1 invalid, 2 unknown, 254 bad input (a malformed line: one sentence with
the line number; nothing written). On a linearizability failure the counterexample is written as
one HTML file (--html PATH, default `<history>.counterexample.html` next to the history).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from zkjepsen.checker import Result
from zkjepsen.checker.counter import CounterChecker
from zkjepsen.checker.fencing import FencingChecker
from zkjepsen.checker.linearizability import Linearizable
from zkjepsen.checker.lock import LockChecker
from zkjepsen.checker.models import MODELS, make_model
from zkjepsen.checker.queue import QueueChecker
from zkjepsen.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID, BadInput
from zkjepsen.history import fault_windows
from zkjepsen.history.formats import FORMATS, read_history

# Checkers that are not linearizability models, selectable with --model too.
OTHER_CHECKERS = {
    "lock": LockChecker,
    "fencing": FencingChecker,
    "jepsen-counter": CounterChecker,
    "queue": QueueChecker,
}


def _parse_initial(text: str | None) -> Any:
    if text is None:
        return None
    if text.strip() == "nil":
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise BadInput(f"--initial must be JSON (e.g. 0, null, '\"\"', '{{\"x\": 0}}'), "
                       f"got {text!r}") from None


def _summary(result: Result) -> str:
    d = result.details
    if result.valid is True:
        return "valid"
    if result.valid == "unknown":
        return f"unknown: {d.get('reason') or d.get('error') or 'undecided'}"
    if "cannot_place" in d:
        stuck = d["cannot_place"]
        return (f"NOT linearizable: {stuck['op']} by process {stuck['process']} cannot be placed "
                f"after a linearizable prefix of {d['longest_prefix_length']} ops"
                + (f" (partition {d['partition']!r})" if d.get("partition") is not None else ""))
    counts = {k[:-len("_count")]: v for k, v in d.items() if k.endswith("_count") and v}
    return "invalid: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items())


@click.command("check")
@click.argument("history", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--model", "model_name", required=True,
              type=click.Choice(sorted([*MODELS, *OTHER_CHECKERS])),
              help="Linearizability model, or another checker (lock, fencing, jepsen-counter, "
                   "queue).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="auto", show_default=True)
@click.option("--initial", default=None, help="Initial model state as JSON (null, 0, \"\").")
@click.option("--time-limit", type=float, default=60.0, show_default=True,
              help="Seconds before the search gives up with 'unknown'.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Where to write the counterexample on failure.")
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@click.pass_context
def check(ctx: click.Context, history: Path, model_name: str, fmt: str, initial: str | None,
          time_limit: float, html_path: Path | None, as_json: bool) -> None:
    """Check HISTORY and print a verdict (exit 0 valid, 1 invalid, 2 unknown)."""
    h = read_history(history, fmt)
    if model_name in OTHER_CHECKERS:
        checker: Any = OTHER_CHECKERS[model_name]()
        try:
            result = checker.check(h)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            raise BadInput(f"the {model_name} checker cannot read this history's values: "
                           f"{type(e).__name__}: {e}") from None
    else:
        model = make_model(model_name, _parse_initial(initial))
        checker = Linearizable(model, time_limit=time_limit)
        result = checker.check(h)
        if result.valid is False and checker.last_outcome is not None:
            from zkjepsen.report.counterexample import write

            # Next to the history (never silently into the current directory), or --html.
            out = html_path or history.with_name(history.name + ".counterexample.html")
            try:
                write(out, checker.last_outcome, model, title=f"{history.name}: not linearizable",
                      partition=result.details.get("partition"), faults=fault_windows(h))
                result.details["html"] = str(out)
            except OSError as e:
                result.details["html_error"] = (f"counterexample not written to {out} "
                                                f"({e.strerror}); give --html PATH")
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, default=str))
    click.echo(f"{history}: {_summary(result)}")
    if "html" in result.details:
        click.echo(f"counterexample: {result.details['html']}")
    elif "html_error" in result.details:
        click.echo(result.details["html_error"], err=True)
    code = {True: EXIT_VALID, False: EXIT_INVALID}.get(result.valid, EXIT_UNKNOWN)  # type: ignore[arg-type]
    ctx.exit(code)
