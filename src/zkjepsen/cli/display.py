"""The live terminal display of a running test (rich), fed by the files the run writes."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from zkjepsen.checker import Verdict
from zkjepsen.history import NEMESIS

if TYPE_CHECKING:
    from zkjepsen.history.live import LiveHistory, Subscription
    from zkjepsen.spec import TestSpec

console = Console(stderr=True, soft_wrap=True)  # a log line stays one line (CI logs, grep)
STYLES = {Verdict.VALID: "bold green", Verdict.INVALID: "bold red", Verdict.UNKNOWN: "bold yellow"}


def verdict_word(valid) -> tuple[str, str]:
    """The word a verdict prints as, and its style: VALID, INVALID, or UNKNOWN for anything else."""
    verdict = Verdict.of(valid)
    return verdict.word, STYLES[verdict]


class LiveDisplay:
    """Elapsed/remaining time, op counts and rates per type, active faults; a subscriber of the
    run's live history (the files the clients and the nemesis write: the display never talks
    to the cluster)."""

    def __init__(self) -> None:
        self.live: Live | None = None
        self.messages: list[str] = []
        self.counts: dict[str, int] = {}
        self.history: LiveHistory | None = None
        self.sub: Subscription | None = None
        self.active: dict[Any, str] = {}
        self.violations = 0

    def log(self, msg: str) -> None:
        self.messages = (self.messages + [msg])[-4:]
        if self.live is None:
            console.print(msg)

    def attach(self, live: LiveHistory, t0_ns: int, spec: TestSpec) -> None:
        self.history, self.spec = live, spec
        self.sub = live.subscribe(replay=True)  # from the first record, as it always read
        self.t0 = time.monotonic()
        self.live = Live(
            self._render(),
            console=console,
            refresh_per_second=2,
            get_renderable=self._render,
            transient=True,
        )
        self.live.start()

    def detach(self) -> None:
        if self.live:
            self.live.stop()
            self.live = None
        if self.history is not None and self.sub is not None:
            self.history.unsubscribe(self.sub)
            self.sub = None

    def _tail(self) -> None:
        if self.history is None or self.sub is None:
            return
        self.history.poll()
        for _source, records in self.sub.take():
            for r in records:
                if r.get("process") == NEMESIS:
                    v = r.get("value") or {}
                    fid = v.get("fault_id") if isinstance(v, dict) else None
                    if isinstance(v, dict) and v.get("phase") == "end":
                        self.active.pop(fid, None)
                    else:
                        targets = v.get("targets", "") if isinstance(v, dict) else ""
                        self.active[fid] = f"{r.get('f')} {targets}"
                elif r.get("type") in ("ok", "fail", "info"):
                    k = f"{r.get('f')} {r['type']}"
                    self.counts[k] = self.counts.get(k, 0) + 1

    def _render(self):
        if not hasattr(self, "t0"):
            return Text("")
        self._tail()
        elapsed = time.monotonic() - self.t0
        total = self.spec.time_limit_s + self.spec.recovery_s
        head = Text(
            f"{self.spec.test_name}  elapsed {elapsed:5.0f}s  remaining "
            f"{max(0, total - elapsed):4.0f}s  faults: "
            + (", ".join(self.active.values()) or "none active")
        )
        table = Table(show_header=True, box=None)
        table.add_column("op")
        table.add_column("count", justify="right")
        table.add_column("rate/s", justify="right")
        for k in sorted(self.counts):
            table.add_row(k, str(self.counts[k]), f"{self.counts[k] / max(elapsed, 1e-9):.1f}")
        return Group(head, table, Text("\n".join(self.messages), style="dim"))
