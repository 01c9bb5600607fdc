"""What the input-surface property tests share (issue 48): a command run in this process under a
real-time bound, the oracle's one-sentence refusal, snapshots of what a command created, hostile
file kinds put where a file should be, and the printed counts.

The oracle, for every surface: exit 254 with exactly one line on stderr and nothing created, or
the same answer as the uncorrupted input where the corruption does not matter; never 255 or a
traceback, never a hang (`hang_guard`), never VALID where the uncorrupted input was not.
(test_bad_input_properties.py and test_stored_properties.py are the older surfaces' tests, in the
same spirit.)
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import signal
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkjepsen.cli import main
from zkjepsen.store.regular import MAX_DEPTH

DEAD_ENGINE = "unix:///nonexistent/zkjepsen-hostile-input.sock"
BOUND_S = 20  # CPU seconds: a refusal takes well under one; a spin is cut here and is a failure
# A command blocked in the kernel (a FIFO opened, a lock waited on) spends no CPU: the wall
# clock cuts it, this many times the CPU bound, so that a machine busy with other work (a
# correct command that waits for the CPU, not in the kernel) never reaches it.
WALL_FACTOR = 15
KINDS = ("fifo", "dir", "loop", "device", "dangling", "binary", "sparse", "deep", "outside")


class Hung(BaseException):
    """The command spun or blocked past its bound (a BaseException: no `except Exception`
    swallows it)."""


@contextlib.contextmanager
def hang_guard(bound_s: float = BOUND_S) -> Iterator[None]:
    """Raise Hung in the body once this process has spent `bound_s` CPU seconds in it (a spin)
    or `WALL_FACTOR` times that on the wall clock (a block). Why CPU: a hang detector timed on
    the wall clock fails a correct change on a loaded machine (it did: `analyze` of a small
    run took over 20 s of wall time beside Docker runs and a checker benchmark)."""

    def fire(signum: int, frame: Any) -> None:
        raise Hung

    old = {sig: signal.signal(sig, fire) for sig in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, bound_s)
    signal.setitimer(signal.ITIMER_REAL, bound_s * WALL_FACTOR)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in old.items():
            signal.signal(sig, handler)


def hung(bound_s: float = BOUND_S) -> str:
    """What a cut command is reported as."""
    return f"still running after {bound_s} CPU-s (or {bound_s * WALL_FACTOR} s blocked)"


def cpu_bounded(bound_s: float = BOUND_S) -> dict[str, Any]:
    """`subprocess.run` keywords for the same guard around a child: the kernel stops it after
    `bound_s` CPU seconds (RLIMIT_CPU: a spin), the wall clock at WALL_FACTOR times that (a
    block)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (int(bound_s), int(bound_s) + 1))

    return {"preexec_fn": limit, "timeout": bound_s * WALL_FACTOR}


def run_bounded(argv: list[str], bound_s: float = BOUND_S) -> tuple[int | str, str, str]:
    """(exit code, or what went wrong instead; stdout; stderr) of `zkjepsen argv` in-process."""
    out, err = io.StringIO(), io.StringIO()
    limits = resource.getrlimit(resource.RLIMIT_AS)  # `check` sets its --memory-limit
    try:
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            hang_guard(bound_s),
        ):
            try:
                main(argv)
                code: int | str = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except Hung:
                code = hung(bound_s)
            except BaseException as e:  # noqa: BLE001 - a traceback is the finding
                code = f"raised {type(e).__name__}: {e}"
    except Hung:  # fired between the body's end and the guard's exit
        code = hung(bound_s)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, limits)
    return code, out.getvalue(), err.getvalue()


def snapshot(root: Path, skip: Path | None = None) -> set[str]:
    return {
        str(q.relative_to(root))
        for q in root.rglob("*")
        if skip is None or (skip not in q.parents and q != skip)
    }


def refusal_wrong(code: int | str, err: str, created: set[str]) -> str | None:
    """None for a right refusal (254, one line, nothing made); else what is wrong."""
    lines = [x for x in err.splitlines() if x.strip()]
    if not isinstance(code, int):
        return code
    if code != 254:
        return f"exit {code}: {' | '.join(lines)[-300:]}"
    if "Traceback" in err or len(lines) != 1:
        return f"{len(lines)} lines on stderr: {' | '.join(lines)[:300]}"
    if created:
        return f"created {sorted(created)[:5]}"
    return None


def nested(depth: int) -> str:
    """A JSON value nested `depth` levels (lists and tables in turn)."""
    text = "1"
    for k in range(depth):
        text = f"[{text}]" if k % 2 else f'{{"a": {text}}}'
    return text


def make_kind(path: Path, kind: str, outside: Path | None = None) -> None:
    """Put a hostile `kind` of file where `path` is (whatever was there goes)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to(path.name)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "dangling":
        path.symlink_to("nowhere-at-all")
    elif kind == "binary":
        path.write_bytes(b"\xff\xfe\x00garbage\xc3")
    elif kind == "sparse":  # bigger than any document zkjepsen reads whole; no disk used
        with open(path, "wb") as fh:
            fh.truncate(300 << 20)
    elif kind == "deep":
        path.write_text(nested(MAX_DEPTH * 40))
    elif kind == "outside":  # a link to a file elsewhere (what matters where: the caller's)
        target = outside or Path("/etc/hostname")
        path.symlink_to(target)
    else:
        raise AssertionError(kind)


@dataclass
class Tally:
    """Tried and right per what was corrupted; the first failures with what went wrong."""

    tried: Counter = field(default_factory=Counter)
    right: Counter = field(default_factory=Counter)
    failures: dict[str, str] = field(default_factory=dict)

    def add(self, what: str, case: str, wrong: str | None) -> None:
        self.tried[what] += 1
        if wrong is None:
            self.right[what] += 1
        else:
            self.failures.setdefault(case, wrong)

    def summary(self, name: str) -> str:
        total, ok = sum(self.tried.values()), sum(self.right.values())
        per = ", ".join(f"{k} {self.right[k]}/{n}" for k, n in sorted(self.tried.items()))
        return f"{name}: {total} tried, {ok} right, {total - ok} not ({per})"

    def report(self, request: Any, name: str) -> str:
        """Print the counts on the terminal (whatever -q or -s) and return the summary."""
        text = self.summary(name)
        capture = request.config.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            print(f"\n{text}", flush=True)
        return text

    def assert_none_wrong(self, summary: str) -> None:
        assert not self.failures, (
            summary
            + "\n"
            + "\n".join(f"{k}\n    -> {v}" for k, v in list(self.failures.items())[:60])
        )


def examples(env: str, default: int) -> int:
    return int(os.environ.get(env, str(default)))


def seeded(test: Callable[..., Any], env: str) -> Callable[..., Any]:
    """`test` under ZKJEPSEN_*_SEED when set (default: derandomized, for a stable CI)."""
    from hypothesis import seed

    value = os.environ.get(env)
    return seed(int(value))(test) if value is not None else test
