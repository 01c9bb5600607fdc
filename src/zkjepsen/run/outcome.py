"""What a run gives back: its verdict and folder, or, when interrupted, what its teardown left.
(Its own module so that the runner and the fan-outs, which run a run elsewhere, share them.)"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, NoReturn

from zkjepsen import errors
from zkjepsen.docker.signals import Terminated
from zkjepsen.spec import TestSpec


class Phase(StrEnum):
    """Where a run is, in order: the watchdog's message and an interrupt's name it, and
    whether the history is whole follows from it (from TEARDOWN on)."""

    SETUP = "setup"
    ENSEMBLE_START = "ensemble start"
    HOST_SESSION = "host session"
    WORKLOAD_SETUP = "workload setup"
    CLIENT_START = "client start"
    MAIN = "main phase"
    RECOVERY = "recovery"
    FINAL_READ = "final read"
    TEARDOWN = "teardown"
    CHECK = "check"
    REPORT = "report"


@dataclass
class RunResult:
    spec: TestSpec
    store_dir: Path
    valid: bool | str
    results: dict[str, Any]
    stats: dict[str, Any]

    @property
    def exit_code(self) -> int:
        if self.valid is True:
            return errors.EXIT_VALID
        return errors.EXIT_INVALID if self.valid is False else errors.EXIT_UNKNOWN


@dataclass
class Teardown:
    """How an interrupted run ended, for the one sentence the CLI prints: carried by the
    interrupt's typed twin (`Stopped`)."""

    run_id: str | None
    store_dir: Path
    left: list[str]  # what the engine still has of this run (empty: all removed)
    phase: Phase | None = None  # where the run was when interrupted


@dataclass
class ManyCut:
    """What an interrupt left of a command of many runs (gate, matrix, scenario run, replay,
    shrink): the folders of the runs that finished, and how each run it cut short ended.
    Carried by the interrupt's typed twin as `many` (added to as it goes up: a command that
    runs several batches adds each batch's), for the CLI's last line."""

    finished: list[Path]
    cut: list[Teardown]


class Stopped:
    """What an interrupted run (`teardown`), command of many runs (`many`) or matrix
    (`matrix_note`: where its finished runs are) left, for the CLI's one sentence. Mixed into
    the interrupt's own class (`Interrupted`, `TerminatedRun`), so every
    `except KeyboardInterrupt` / `except Terminated` still catches it."""

    teardown: Teardown | None
    matrix_note: str | None
    many: ManyCut | None

    def _carry(
        self, teardown: Teardown | None, matrix_note: str | None, many: ManyCut | None
    ) -> None:
        self.teardown, self.matrix_note, self.many = teardown, matrix_note, many


class Interrupted(KeyboardInterrupt, Stopped):
    def __init__(
        self,
        teardown: Teardown | None = None,
        matrix_note: str | None = None,
        many: ManyCut | None = None,
    ):
        super().__init__()
        self._carry(teardown, matrix_note, many)


class TerminatedRun(Terminated, Stopped):
    def __init__(
        self,
        message: str,
        teardown: Teardown | None = None,
        matrix_note: str | None = None,
        many: ManyCut | None = None,
    ):
        super().__init__(message)
        self._carry(teardown, matrix_note, many)


def stopped(
    e: BaseException, teardown: Teardown | None = None, matrix_note: str | None = None
) -> BaseException | None:
    """The interrupt `e` as its typed twin carrying what was left (what `e` carried already
    kept unless given anew); None when `e` is no interrupt (nothing to say about it)."""
    many = None
    if isinstance(e, Stopped):
        teardown = teardown or e.teardown
        matrix_note = matrix_note or e.matrix_note
        many = e.many
    if isinstance(e, KeyboardInterrupt):
        return Interrupted(teardown, matrix_note, many)
    if isinstance(e, Terminated):
        return TerminatedRun(str(e), teardown, matrix_note, many)
    return None


def stopped_by(e: BaseException) -> Stopped | None:
    """What `e` (or what it wraps: click's Abort wraps a KeyboardInterrupt) carries."""
    for x in (e, e.__cause__):
        if isinstance(x, Stopped):
            return x
    return None


def note_many(e: BaseException, finished: list[Path], cut: list[Teardown]) -> BaseException:
    """Add these runs to what the interrupt `e` left; returns what to raise: `e` when it is
    a typed twin already (or no interrupt: nothing to say), else its twin carrying them."""
    twin = e if isinstance(e, Stopped) else stopped(e)
    if not isinstance(twin, Stopped):
        return e
    many = twin.many = twin.many or ManyCut([], [])
    had = {str(p) for p in many.finished} | {str(t.store_dir) for t in many.cut}
    many.finished += [p for p in finished if _real(p) and str(p) not in had]
    many.cut += [t for t in cut if _real(t.store_dir) and str(t.store_dir) not in had]
    return twin


def reraise(e: BaseException, twin: BaseException) -> NoReturn:
    """Raise `twin` in place of `e` (from it), or `e` itself when there is no twin."""
    if twin is e:
        raise e
    raise twin from e


def _real(p: Path | str) -> bool:
    return str(p) not in ("", ".")
