"""Power rules: what counts as a landed opportunity of a fault kind (checker/power.py's
docstring) and how the kind reads in the power line. Pure data (named tuples: `zkjepsen check`
must start light)."""

from __future__ import annotations

from typing import NamedTuple

RULES = ("silence", "instant", "during")


class PowerRule(NamedTuple):
    """What counts as a landed opportunity of a kind (checker/power.py's docstring), and how it
    reads in the power line: one, many ("client-pause", "client-pauses") and the rate's unit
    ("per-pause"); unnamed, a kind reads "<kind> fault(s)", "per-fault"."""

    landed: str  # silence | instant | during
    one: str = ""
    many: str = ""
    unit: str = "fault"
    # It breaks the servers' state, not a client's view (a power loss takes a lock node, a lease,
    # a fencing counter): any lock or fencing violation it precedes counts, whoever it names.
    state: bool = False

    def nouns(self, kind: str) -> tuple[str, str, str]:
        """(one, many, unit) of `kind` in the power line."""
        if self.one:
            return self.one, self.many or self.one + "s", self.unit
        return f"{kind} fault", f"{kind} faults", self.unit


def silence(one: str = "", many: str = "", unit: str = "fault") -> PowerRule:
    """Lands when an at-risk client stayed so for its session timeout within the fault."""
    return PowerRule("silence", one, many, unit)


def instant(
    one: str = "", many: str = "", unit: str = "fault", *, state: bool = False
) -> PowerRule:
    """Lands when a client was at risk at the fault's start (a kill, a step). `state`: what it
    breaks is the servers' data (PowerRule.state)."""
    return PowerRule("instant", one, many, unit, state)


def during(one: str = "", many: str = "", unit: str = "fault") -> PowerRule:
    """Lands when a client was at risk at some time in the fault's window."""
    return PowerRule("during", one, many, unit)


UNKNOWN_RULE = during()  # a kind no declaration knows (an old history's): the mildest rule
