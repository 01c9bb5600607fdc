"""A family of fault kinds, as a Jepsen nemesis package is one: what it brings besides its kinds'
resolve, apply and undo. Each family module (process, partition, clock, proxy, pg, disk,
membership) declares one; `faults.families()` lists them and the executor (schedule.py) calls
them without naming any."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from zkjepsen.nemesis.targets import NemesisContext

# A fault's detail: its family's own record of how it hit (schedule.json's and nemesis.jsonl's
# `detail`), which resolve draws, apply and undo add what they observed to, and
# faultkinds.landing reads. Its fields are each family's (nemesis/<family>.py says them); a JSON
# table rather than a type because it is stored as the family wrote it and read back as it was
# written by a replay of any later version.
Detail = dict[str, Any]
# What a fault is told beyond its kind and target: the run's --param magnitudes and its item's
# own (read-only: a fault never changes what it was asked).
Params = Mapping[str, Any]


def _nothing_to_prepare(ctx: NemesisContext) -> None:
    """Most families act on containers the harness already made."""


@dataclass(frozen=True)
class FaultFamily:
    """How to make ready for the family's kinds before the first fault (`prepare`) and how to
    undo all of them at once (`heal`), whatever state a run left them in (an undo that
    failed, a run interrupted mid-apply). `heal(ctx, everything)` returns what it could not
    heal; `everything`: also what nobody remembers touching (a crashed run's leftovers).
    `rank`: heals run in rank order (a frozen container must be thawed before iptables can
    run in it)."""

    name: str
    heal: Callable[[NemesisContext, bool], list[str]]
    rank: int
    prepare: Callable[[NemesisContext], None] = _nothing_to_prepare
