"""What a hunt covered: the map of (state, moment, fault, target, magnitude) cells its runs
tried, the bound a clean hunt puts on a run's chance to find a violation, and the coverage
picture (coverage.html in the hunt's folder: one file, no network, light and dark).

A cell counts a run once for each abstract state that run reached (run/hunt_state.py): a run
that fired `pause-client` on an acquire and went through five states adds five cells. The
(moment, fault) pairs are the hunt's arms: what its last line counts as covered.

The bound: with 0 violations in n runs, the 95 % upper bound on the per-run rate is Wilson's
score bound z^2 / (n + z^2) (z = 1.96), close to the rule of three's 3/n for large n and
sound for small ones. It bounds a run drawn as this hunt drew them, not a bug's existence.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Z95 = 1.959964
Cell = tuple[str, str, str, str, str]  # (state, moment, fault, target, magnitude)


def upper95(violations: int, runs: int) -> float:
    """Wilson's 95 % upper score bound on a rate seen `violations` times in `runs` (1.0 when
    nothing was run)."""
    if runs <= 0:
        return 1.0
    p, z2 = violations / runs, Z95 * Z95
    centre = p + z2 / (2 * runs)
    spread = Z95 * ((p * (1 - p) + z2 / (4 * runs)) / runs) ** 0.5
    return float(min(1.0, max(p, (centre + spread) / (1 + z2 / runs))))


@dataclass
class Coverage:
    """The cells tried and the (moment, fault) arms tried, with counts."""

    arms: list[tuple[str, str]]  # every arm on the menu
    cells: Counter[Cell] = field(default_factory=Counter)
    tries: Counter[tuple[str, str]] = field(default_factory=Counter)
    states: Counter[str] = field(default_factory=Counter)  # runs that reached each state
    errors: int = 0  # runs that ended in an error, not a verdict: they cover nothing

    def add(self, arm: tuple[str, str], target: str, magnitude: str, states: Iterable[str]) -> int:
        """One run's cells; returns how many of them were new."""
        self.tries[arm] += 1
        new = 0
        for s in states:
            cell = (s, arm[0], arm[1], target, magnitude)
            new += self.cells[cell] == 0
            self.cells[cell] += 1
            self.states[s] += 1
        return new

    @property
    def covered(self) -> int:
        return sum(1 for a in self.arms if self.tries[a])

    def least(self) -> int:
        """The fewest tries of a covered arm (0 when none is)."""
        return min((self.tries[a] for a in self.arms if self.tries[a]), default=0)

    def line(self, runs: int, wall_s: float, found: bool) -> str:
        errors = f" ({self.errors} ended in an error)" if self.errors else ""
        head = (
            f"{'a violation' if found else 'no violation'} in {runs} runs{errors} / "
            f"{wall_s / 60:.1f} min, {self.covered} of {len(self.arms)} (moment, fault) pairs "
            "covered"
        )
        if found:
            return head
        k, judged = self.least(), runs - self.errors
        if not k or judged <= 0:
            return head + " (none tried: no bound)"
        return head + (
            f", each at least {k} time{'s' * (k != 1)}; {len(self.states)} lock states reached; "
            f"95 % upper bound on a run's chance to find one: {upper95(0, judged):.0%} for a run "
            f"of this hunt (0 of {judged}, Wilson), {upper95(0, k):.0%} for a pair tried {k} "
            f"time{'s' * (k != 1)}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "covered": self.covered,
            "pairs": len(self.arms),
            "least": self.least(),
            "states": len(self.states),
            "cells": len(self.cells),
            "errors": self.errors,
            "tries": {f"{m} / {f}": n for (m, f), n in sorted(self.tries.items())},
        }


STYLE = """
:root { color-scheme: light dark; --bg: #fff; --fg: #1b1b1b; --line: #ccc; --hot: 40, 110, 200; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #161616; --fg: #e4e4e4; --line: #444; --hot: 90, 160, 255; }
}
body { background: var(--bg); color: var(--fg); font: 14px system-ui, sans-serif; margin: 1.5em; }
table { border-collapse: collapse; margin: 1em 0 2em; }
th, td { border: 1px solid var(--line); padding: 2px 6px; text-align: right; }
th { font-weight: 600; } th.row { text-align: left; font-family: monospace; }
thead th { writing-mode: vertical-rl; transform: rotate(180deg); text-align: left; }
td.zero { color: var(--line); }
"""


def _cell(n: int, top: int) -> str:
    if not n:
        return '<td class="zero">0</td>'
    alpha = 0.15 + 0.75 * n / max(top, 1)
    ink = "; color: #fff" if alpha > 0.55 else ""  # light text on the deep cells
    return f'<td style="background: rgba(var(--hot), {alpha:.2f}){ink}">{n}</td>'


def _table(title: str, rows: list[str], cols: list[str], count: dict[tuple[str, str], int]) -> str:
    top = max(count.values(), default=1)
    out = [f"<h2>{html.escape(title)}</h2><table><thead><tr><th></th>"]
    out += [f"<th>{html.escape(c)}</th>" for c in cols]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append(f'<tr><th class="row">{html.escape(r)}</th>')
        out += [_cell(count.get((r, c), 0), top) for c in cols]
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def write_html(cov: Coverage, path: Path, title: str, summary: str) -> Path:
    """coverage.html: lock states x faults (runs that reached the state with that fault
    chosen), and moments x faults (runs per arm), every count in the cell."""
    faults = sorted({f for _, f in cov.arms})
    moments = sorted({m for m, _ in cov.arms})
    by_state: Counter[tuple[str, str]] = Counter()
    for (state, _m, f, _t, _s), n in cov.cells.items():
        by_state[(state, f)] += n
    tried_faults = [f for f in faults if any(cov.tries[(m, f)] for m in moments)] or faults
    arms = {(m, f): cov.tries[(m, f)] for m, f in cov.arms}
    states = sorted(cov.states, key=lambda s: -cov.states[s])
    doc = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1><p>{html.escape(summary)}</p>",
        _table("lock states reached x faults tried (runs)", states, tried_faults, by_state),
        _table("moments x faults (runs per (moment, fault) pair)", moments, faults, arms),
        "</body></html>",
    ]
    path.write_text("".join(doc))
    return path
