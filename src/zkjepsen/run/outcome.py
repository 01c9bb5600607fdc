"""What a run gives back: its verdict and folder, or, when interrupted, what its teardown left.
(Its own module so that the runner and the fan-outs, which run a run elsewhere, share them.)"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkjepsen import errors
from zkjepsen.run.spec import TestSpec


@dataclass
class RunResult:
    spec: TestSpec
    store_dir: Path
    valid: bool | str
    results: dict[str, Any]
    stats: dict[str, Any]

    @property
    def exit_code(self) -> int:
        return {True: errors.EXIT_VALID, False: errors.EXIT_INVALID}.get(
            self.valid, errors.EXIT_UNKNOWN
        )


@dataclass
class Teardown:
    """How an interrupted run ended, for the one sentence the CLI prints: attached to the
    interrupting exception as `.teardown`."""

    run_id: str | None
    store_dir: Path
    left: list[str]  # what the engine still has of this run (empty: all removed)
    phase: str = ""  # where the run was when interrupted ("main phase", "check", "report"...)


@dataclass
class ManyCut:
    """What an interrupt left of a command of many runs (gate, matrix, scenario run, replay,
    shrink): the folders of the runs that finished, and how each run it cut short ended.
    Attached to the interrupting exception as `.many` (added to as it goes up: a command that
    runs several batches adds each batch's), for the CLI's last line."""

    finished: list[Path]
    cut: list[Teardown]


def note_many(e: BaseException, finished: list[Path], cut: list[Teardown]) -> None:
    """Add these runs to what the interrupt `e` left (`e.many`)."""
    many = getattr(e, "many", None)
    if many is None:
        many = ManyCut([], [])
        e.many = many  # type: ignore[attr-defined]
    had = {str(p) for p in many.finished} | {str(t.store_dir) for t in many.cut}
    many.finished += [p for p in finished if _real(p) and str(p) not in had]
    many.cut += [t for t in cut if _real(t.store_dir) and str(t.store_dir) not in had]


def _real(p: Path | str) -> bool:
    return str(p) not in ("", ".")
