"""Where a run's reports go, as the reports see it."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class ReportFiles(Protocol):
    """Where a run's reports go (a `store.RunDir`: the store names every file; named
    structurally so that the reports need no import of it)."""

    @property
    def path(self) -> Path: ...
    @property
    def test_json(self) -> Path: ...
    @property
    def timeline(self) -> Path: ...
    @property
    def latency_png(self) -> Path: ...
    @property
    def rate_png(self) -> Path: ...
