"""What a run gives back: its verdict and folder, or, when interrupted, what its teardown left.
(Its own module so that the runner and the fan-outs, which run a run elsewhere, share them.)"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from zkjepsen import errors
from zkjepsen.docker.signals import Terminated
from zkjepsen.run.spec import TestSpec


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


class Stopped:
    """What an interrupted run (`teardown`) or matrix (`matrix_note`: where its finished runs
    are) left, for the CLI's one sentence. Mixed into the interrupt's own class (`Interrupted`,
    `TerminatedRun`), so every `except KeyboardInterrupt` / `except Terminated` still
    catches it."""

    teardown: Teardown | None
    matrix_note: str | None

    def _carry(self, teardown: Teardown | None, matrix_note: str | None) -> None:
        self.teardown, self.matrix_note = teardown, matrix_note


class Interrupted(KeyboardInterrupt, Stopped):
    def __init__(self, teardown: Teardown | None = None, matrix_note: str | None = None):
        super().__init__()
        self._carry(teardown, matrix_note)


class TerminatedRun(Terminated, Stopped):
    def __init__(
        self, message: str, teardown: Teardown | None = None, matrix_note: str | None = None
    ):
        super().__init__(message)
        self._carry(teardown, matrix_note)


def stopped(
    e: BaseException, teardown: Teardown | None = None, matrix_note: str | None = None
) -> BaseException | None:
    """The interrupt `e` as its typed twin carrying what was left (what `e` carried already
    kept unless given anew); None when `e` is no interrupt (nothing to say about it)."""
    if isinstance(e, Stopped):
        teardown = teardown or e.teardown
        matrix_note = matrix_note or e.matrix_note
    if isinstance(e, KeyboardInterrupt):
        return Interrupted(teardown, matrix_note)
    if isinstance(e, Terminated):
        return TerminatedRun(str(e), teardown, matrix_note)
    return None


def stopped_by(e: BaseException) -> Stopped | None:
    """What `e` (or what it wraps: click's Abort wraps a KeyboardInterrupt) carries."""
    for x in (e, e.__cause__):
        if isinstance(x, Stopped):
            return x
    return None
