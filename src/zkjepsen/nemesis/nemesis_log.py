"""The nemesis's own history file, nemesis.jsonl: a `start` and an `end` record per fault (the
values nemesis/schedule.py's FaultNemesis writes), merged with the clients' histories into the
run's one history."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from zkjepsen.history.jsonl import Appender

NEMESIS = "nemesis"


class NemesisLog:
    """nemesis.jsonl: one write(2) per line, O_APPEND, times on the host's real monotonic clock
    (never faked: the recorder runs outside the skewed JVMs)."""

    def __init__(self, path: Path, t0_ns: int) -> None:
        self.out = Appender(path)
        self.t0_ns = t0_ns

    def now(self) -> int:
        return time.monotonic_ns() - self.t0_ns

    def record(self, at_ns: int, f: str, value: dict[str, Any]) -> None:
        self.out.write({"time": at_ns, "process": NEMESIS, "type": "info", "f": f, "value": value})

    def close(self) -> None:
        self.out.close()
