"""`zkjepsen check HISTORY --model MODEL`: check a history file and print one verdict.

Exit status: 0 valid, 1 invalid, 2 unknown, 254 bad input (a malformed line: one sentence with
the line number; nothing written). On a linearizability failure the counterexample is written as
one HTML file (--html PATH, default `<history>.counterexample.html` next to the history).

Parsed with argparse and importing only the checker it runs, so that `zkjepsen check` over a
corpus of many small files costs little more than the checks themselves (`cli.main` calls
`run` directly, without loading click).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import math
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NoReturn

from zkjepsen.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID, BadInput

if TYPE_CHECKING:
    import argparse

# Paths stay strings on this path: pathlib (and the urllib.parse it imports) is ~8 ms of start-up.

# Checkers that are not linearizability models, selectable with --model too: module:class.
OTHER_CHECKERS = {
    "lock": "zkjepsen.checker.lock:LockChecker",
    "fencing": "zkjepsen.checker.fencing:FencingChecker",
    "jepsen-counter": "zkjepsen.checker.counter:CounterChecker",
    "queue": "zkjepsen.checker.queue:QueueChecker",
}
# What `zkjepsen list models` says of each of them (the models describe themselves).
OTHER_CHECKERS_ABOUT = {
    "lock": "belief and effect overlap of acquire/release (and write) ops: a split holder",
    "fencing": "accepted writes follow lock order: no token goes backwards, each one its holder's",
    "jepsen-counter": "every read within the bounds of the adds before it; lost updates",
    "queue": "nothing lost, duplicated or invented by enqueue/dequeue/drain",
}
FORMATS = ("auto", "jsonl", "edn", "json", "porcupine-kv", "jepsen-log")


def parser() -> argparse.ArgumentParser:
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:  # one sentence and 254, as every bad input
            raise BadInput(f"check: {message} (see `zkjepsen check --help`)")

    ap = Parser(
        prog="zkjepsen check",
        description="Check HISTORY and print a verdict "
        "(exit 0 valid, 1 invalid, 2 unknown, 254 bad input).",
    )
    ap.add_argument("history")
    ap.add_argument(
        "--model",
        dest="model_name",
        required=True,
        help="linearizability model (`zkjepsen list models`), or another checker: "
        + ", ".join(OTHER_CHECKERS),
    )
    ap.add_argument("--format", dest="fmt", choices=FORMATS, default="auto")
    ap.add_argument("--initial", default=None, help='initial model state as JSON (null, 0, "")')
    ap.add_argument(
        "--time-limit",
        type=float,
        default=60.0,
        help="seconds before the search gives up with 'unknown' (default 60)",
    )
    ap.add_argument(
        "--html",
        dest="html_path",
        default=None,
        help="where to write the counterexample on failure",
    )
    ap.add_argument(
        "--json", dest="as_json", action="store_true", help="print the full result as JSON"
    )
    ap.add_argument(
        "--memory-limit",
        type=int,
        default=2048,
        metavar="MIB",
        help="memory the check may use, reading included (default 2048 MiB); "
        "past it the verdict is 'unknown'",
    )
    return ap


# --option: (attribute, conversion); a flag has no conversion.
_OPTIONS: dict[str, tuple[str, Any]] = {
    "--model": ("model_name", str),
    "--format": ("fmt", str),
    "--initial": ("initial", str),
    "--time-limit": ("time_limit", float),
    "--html": ("html_path", str),
    "--json": ("as_json", None),
    "--memory-limit": ("memory_limit", int),
}


def quick_parse(argv: list[str]) -> dict[str, Any] | None:
    """The common command lines without argparse (its import and its help formatter, made at
    every add_argument, were a fifth of the start-up): full option names, `--opt VALUE` or
    `--opt=VALUE`, one history. None for anything else (help, abbreviations, a value that
    looks like an option, a bad value, ...): argparse then parses it and words any error."""
    a: dict[str, Any] = {
        "model_name": None,
        "fmt": "auto",
        "initial": None,
        "time_limit": 60.0,
        "html_path": None,
        "as_json": False,
        "memory_limit": 2048,
    }
    history = None
    it = iter(argv)
    for tok in it:
        if not tok.startswith("-"):
            if history is not None:
                return None
            history = tok
            continue
        name, eq, value = tok.partition("=")
        spec = _OPTIONS.get(name)
        if spec is None:
            return None
        attr, conv = spec
        if conv is None:
            if eq:
                return None
            a[attr] = True
            continue
        if not eq:
            given = next(it, None)
            if given is None or given.startswith("-"):
                return None
            value = given
        try:
            a[attr] = conv(value)
        except ValueError:
            return None
    if history is None or a["model_name"] is None or a["fmt"] not in FORMATS:
        return None
    a["history"] = history
    return a


def limit_memory(mib: int) -> None:
    """A real ceiling on this process's memory (address space above what it uses now), so a
    huge history ends as `unknown` instead of swapping the machine to a halt."""
    import resource

    if mib <= 0:
        raise BadInput(f"--memory-limit {mib} must be a positive number of MiB")
    try:
        with open("/proc/self/statm") as fh:
            now = int(fh.read().split()[0]) * resource.getpagesize()
    except OSError:
        now = 0
    limit = now + (mib << 20)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _parse_initial(text: str | None) -> Any:
    if text is None:
        return None
    if text.strip() == "nil":
        return None
    from zkjepsen.store.regular import parse_json

    try:
        return parse_json(text, "--initial")  # nested at most 64 levels, as every input
    except json.JSONDecodeError:
        raise BadInput(
            f"--initial must be JSON (e.g. 0, null, '\"\"', '{{\"x\": 0}}'), got {text!r}"
        ) from None


def _summary(result: Any) -> str:
    d = result.details
    if result.valid is True:
        return "valid"
    if result.valid == "unknown":
        return f"unknown: {d.get('reason') or d.get('error') or 'undecided'}"
    if "cannot_place" in d:
        return "NOT linearizable: " + _not_linearizable(d)
    counts = {k[: -len("_count")]: v for k, v in d.items() if k.endswith("_count") and v}
    return "invalid: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items())


def _not_linearizable(d: dict[str, Any]) -> str:
    """The headline of a refutation: the op to blame first (checker/blame.py), then, if it is
    another, the op that cannot follow the counterexample's prefix."""

    def named(op: dict[str, Any]) -> str:
        return f"{op['op']} by process {op['process']}"

    stuck = d["cannot_place"]
    blamed = d.get("blamed") or stuck
    of = {
        "read-from": " of the conflict (read-from path)",
        "overwritten": " (an overwritten read)",
    }.get(str(d.get("refuted_by")), "")
    placed = (
        f"{named(stuck)} cannot be placed after a linearizable prefix of "
        f"{d['longest_prefix_length']} ops{of}"
    )
    if blamed.get("invoke_index") != stuck.get("invoke_index"):
        text = f"{named(blamed)}: without it the partition is linearizable ({placed})"
    elif d.get("blamed_because") == "removal":
        text = f"{placed}; without it the partition is linearizable"
    else:
        text = placed
    return text + (f" (partition {d['partition']!r})" if d.get("partition") is not None else "")


def _models() -> list[str]:
    from zkjepsen.checker.linear import MODELS

    return list(MODELS)


def _echo(text: str, err: bool = False) -> None:
    print(text, file=sys.stderr if err else sys.stdout)


def run(argv: list[str]) -> int:
    """Parse `argv` (what follows `check`), check, print; returns the exit status."""
    a = quick_parse(argv)
    if a is None:
        a = vars(parser().parse_args(argv))
    if a["html_path"] is not None:  # asked for by name: refused now, not after the search
        from zkjepsen.store.writable import check_output_file

        check_output_file(a["html_path"], "--html")
    limit_memory(a["memory_limit"])
    collecting = gc.isenabled()  # check_file may pause the collector; on again after it
    try:
        with time_limit_guard(a["time_limit"]):
            return check_file(
                a["history"],
                a["model_name"],
                a["fmt"],
                a["initial"],
                a["time_limit"],
                a["html_path"],
                a["as_json"],
            )
    except OutOfTime:
        reason = (
            f"the time limit of {a['time_limit']:g}s ran out before the check finished "
            "(reading the history counts too; raise it with --time-limit)"
        )
        return _unknown(a, reason)
    except MemoryError:
        reason = (
            f"the memory limit of {a['memory_limit']} MiB was reached "
            "(raise it with --memory-limit)"
        )
        return _unknown(a, reason)
    finally:
        if collecting:  # (the history is freed by now: the collection has little to walk)
            gc.enable()


def _unknown(a: dict[str, Any], reason: str) -> int:
    """A check that could not finish: `unknown` with its reason (stdout stays one JSON
    document under --json; the sentence goes to stderr then)."""
    if a["as_json"]:
        _echo(json.dumps({"valid": "unknown", "reason": reason}, indent=2))
    _echo(f"{a['history']}: unknown: {reason}", err=a["as_json"])
    return EXIT_UNKNOWN


class OutOfTime(Exception):
    """The whole check (reading included) outlived --time-limit."""


# The search stops itself at the time limit and says unknown; the guard is for what the search's
# own deadline does not cover (reading a slow file), so it fires a little after the limit.
GUARD_GRACE_S = 1.0


@contextlib.contextmanager
def time_limit_guard(limit: Any) -> Iterator[None]:
    """Raise OutOfTime if the block runs past `limit` + GUARD_GRACE_S (a real-time timer: it
    interrupts a read blocked in the kernel too). Only in the main thread, where signals are."""
    import signal
    import threading

    ok = isinstance(limit, (int, float)) and math.isfinite(limit) and limit > 0
    if not ok or threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise OutOfTime

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, float(limit) + GUARD_GRACE_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def check_file(
    history: str | os.PathLike[str],
    model_name: str,
    fmt: str,
    initial: str | None,
    time_limit: float,
    html_path: str | os.PathLike[str] | None,
    as_json: bool,
) -> int:
    """Check HISTORY and print a verdict; returns 0 valid, 1 invalid, 2 unknown."""
    if not math.isfinite(time_limit) or time_limit <= 0:
        raise BadInput(f"--time-limit {time_limit} must be a positive number of seconds")
    from zkjepsen.history import fault_windows
    from zkjepsen.history.formats import read_history

    if model_name not in OTHER_CHECKERS and model_name not in _models():
        raise BadInput(
            f"unknown model {model_name!r}; choose from "
            f"{', '.join(sorted([*_models(), *OTHER_CHECKERS]))}"
        )
    from zkjepsen.store.regular import check_path

    check_path(history, "history")  # a named pipe or a device is refused, not read
    h = read_history(history, fmt)
    if model_name in OTHER_CHECKERS:
        module, _, cls = OTHER_CHECKERS[model_name].partition(":")
        checker: Any = getattr(importlib.import_module(module), cls)()
        try:
            result = checker.check(h)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            raise BadInput(
                f"the {model_name} checker cannot read this history's values: "
                f"{type(e).__name__}: {e}"
            ) from None
    else:
        from zkjepsen.checker.linear import BIG, Linearizable, make_model

        if len(h.ops) > BIG:
            # The check pauses the cyclic collector on a long history; it stays paused until
            # the history is freed (run): the collection that followed the check walked every
            # object it built again, to free none (0.5 s of CPU after checking 1 M ops).
            gc.disable()
        model = make_model(model_name, _parse_initial(initial))
        checker = Linearizable(model, time_limit=time_limit)
        result = checker.check(h)
        if result.valid is False and result.outcome is not None:
            from zkjepsen.report.counterexample import write

            # Next to the history (never silently into the current directory), or --html.
            out = html_path or f"{os.fspath(history)}.counterexample.html"
            name = os.path.basename(history)
            try:
                write(
                    out,
                    result.outcome,
                    model,
                    title=f"{name}: not linearizable",
                    partition=result.details.get("partition"),
                    faults=fault_windows(h),
                )
                result.details["html"] = str(out)
            except OSError as e:
                result.details["html_error"] = (
                    f"counterexample not written to {out} ({e.strerror}); give --html PATH"
                )
    # With --json, stdout is the one JSON document (for jq and the like); the human lines
    # go to stderr.
    if as_json:
        _echo(json.dumps(result.to_json(), indent=2, default=str))
    _echo(f"{history}: {_summary(result)}", err=as_json)
    if "html" in result.details:
        _echo(f"counterexample: {result.details['html']}", err=as_json)
    elif "html_error" in result.details:
        _echo(result.details["html_error"], err=True)
    return {True: EXIT_VALID, False: EXIT_INVALID}.get(result.valid, EXIT_UNKNOWN)
