"""What a catalogue scenario is: a test spec plus, per recipe, the outcome it expects.

"As expected" is judged from the history's checker results only (`Expectation.judge`); the
scenario never tells a checker what fault it injected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zkjepsen.checker import Result, as_result
from zkjepsen.nemesis.generator import Gen, schedule_text
from zkjepsen.reproduce.replay import violation_kinds
from zkjepsen.run.spec import read_spec
from zkjepsen.spec import TestSpec


@dataclass(frozen=True)
class Expectation:
    present: frozenset[str] = frozenset()  # every one of these must be found
    absent: frozenset[str] = frozenset()  # none of these may be found
    valid: bool = False  # True: the run must be judged valid outright

    def judge(self, valid: Any, results: Result | dict) -> tuple[bool, str]:
        kinds = violation_kinds(results)
        if valid not in (True, False):
            # A run that could not be judged (it tested nothing, or a check gave up) shows
            # neither the presence nor the absence of anything.
            res = as_result(results)
            why = (
                "; ".join(
                    f"{n}: {p.reason}" for n, p in res.parts.items() if p.valid not in (True, False)
                )
                or res.reason
            )
            return False, f"verdict unknown ({why or 'no reason given'})"
        if self.valid:
            return valid is True, f"expected valid, got {valid} {sorted(kinds)}"
        missing, unwanted = self.present - kinds, self.absent & kinds
        ok = not missing and not unwanted
        why = (
            f"found {sorted(kinds) or 'nothing'}"
            + (f"; missing {sorted(missing)}" if missing else "")
            + (f"; unexpected {sorted(unwanted)}" if unwanted else "")
        )
        return ok, why

    def describe(self) -> str:
        if self.valid:
            return "valid (no violation)"
        parts = [f"shows {', '.join(sorted(self.present))}"] if self.present else []
        parts += [f"never {', '.join(sorted(self.absent))}"] if self.absent else []
        return "; ".join(parts)


def expect(
    present: tuple[str, ...] = (), absent: tuple[str, ...] = (), valid: bool = False
) -> Expectation:
    """What a recipe's runs must show (`present`), never show (`absent`), or that they must be
    valid outright."""
    return Expectation(frozenset(present), frozenset(absent), valid)


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    why: str
    settings: dict[str, Any]  # TestSpec fields
    expect: dict[str, Expectation] = field(default_factory=dict)  # recipe -> outcome
    source: str = ""  # the ticket or issue this failure mode was reported in
    schedule: Gen | None = None  # a fixed (triggered) schedule instead of the spec's nemesis

    def schedule_text(self) -> str:
        return schedule_text(self.schedule) if self.schedule is not None else ""

    def spec(self, recipe: str, seed: int = 1) -> TestSpec:
        return read_spec(  # its settings may hold a service's table
            {
                "nodes": 3,
                "clients": 5,
                "time_limit_s": 40.0,
                "recovery_s": 5.0,
                "session_timeout_s": 3.0,
                "interval_s": 8.0,
                **self.settings,
                "recipe": recipe,
                "seed": seed,
                "name": f"scenario-{self.name}",
            }
        )
