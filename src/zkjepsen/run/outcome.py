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
        if self.valid is True:
            return errors.EXIT_VALID
        return errors.EXIT_INVALID if self.valid is False else errors.EXIT_UNKNOWN


@dataclass
class Teardown:
    """How an interrupted run ended, for the one sentence the CLI prints: attached to the
    interrupting exception as `.teardown`."""

    run_id: str | None
    store_dir: Path
    left: list[str]  # what the engine still has of this run (empty: all removed)
    phase: str = ""  # where the run was when interrupted ("main phase", "check", "report"...)
