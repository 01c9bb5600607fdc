"""The counter checker's out-of-bounds reads (`checker.counter`), found while the history is
written (see `checker.online` for sources and progress).

A read invoked at s and completed at e with value v must lie in [lower, upper]: lower = the adds
that completed `ok` before s, upper = the adds invoked at or before e and not `fail`ed.
- **below the lower bound**: records still to come can only add to `lower` (an add's `ok` is
  final), so v < the lower bound of what has been fed is certain at once.
- **above the upper bound**: later records add to `upper` only if they are add invokes at or
  before e, which every source fed past e rules out; after that `upper` can only shrink (an
  add still pending may fail). So v > upper is certain once every client's source (those the
  run has, `clients`, and any that wrote) has been fed past e; a read within it is kept until
  no add it counts is pending any more.
The lost-update check needs the final read: offline only. Its violations are placed (the faults
met, the disk fault before: checker/attribution.py) by whoever holds the nemesis records, the
live follower (run/online.py), as the offline checker places its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from zkjepsen.checker import OnlineFindings, Violation
from zkjepsen.checker.lock_observe import INF
from zkjepsen.history import NEMESIS


class _Add:
    __slots__ = ("invoked", "value", "status", "completed")

    def __init__(self, invoked: int, value: Any) -> None:
        self.invoked, self.value = invoked, value
        self.status: str | None = None
        self.completed: float = INF


class OnlineCounterChecker(OnlineFindings):
    """`feed`, `advance`, `confirmed`, `finish` as `checker.online.OnlineLockChecker`."""

    kinds = frozenset({"read-out-of-bounds"})

    def __init__(self, add: str = "add", read: str = "read", clients: Iterable[Any] = ()) -> None:
        self.add, self.read = add, read
        self.known: dict[Any, float] = {c: -INF for c in clients}
        self.pending: dict[Any, tuple[Mapping[str, Any], _Add | None]] = {}
        self.adds: list[_Add] = []
        self.reads: list[dict[str, Any]] = []  # completed ok reads whose upper bound is open
        self.found: list[Violation] = []
        self._reported = 0

    def feed(self, rec: Mapping[str, Any]) -> None:
        p, t, typ = rec.get("process"), rec.get("time", 0), rec.get("type")
        if p == NEMESIS:
            return
        c = rec.get("client")
        client = p if c is None else c
        if t > self.known.get(client, -INF):
            self.known[client] = t
        if typ == "invoke":
            entry = None
            if rec.get("f") == self.add:
                v = rec.get("value")
                entry = _Add(t, 1 if v is None else v)
                self.adds.append(entry)
            self.pending[p] = (rec, entry)
            return
        if typ == "event" or p not in self.pending:
            return
        inv, entry = self.pending.pop(p)
        if entry is not None:
            entry.status, entry.completed = typ, t
        elif inv.get("f") == self.read and typ == "ok" and rec.get("value") is not None:
            read = {"client": client, "start": inv.get("time", 0), "end": t, "value": rec["value"]}
            lower = self._lower(read["start"])
            if read["value"] < lower:  # more records can only raise the lower bound
                self._report(read, lower, None)
            else:
                self.reads.append(read)

    def advance(self, source: Any, t: float) -> None:
        if source != NEMESIS and t > self.known.get(source, -INF):
            self.known[source] = t

    def _lower(self, start: int) -> Any:
        return sum(a.value for a in self.adds if a.status == "ok" and a.completed < start)

    def _decide(self) -> None:
        if not self.reads:
            return
        past = min(self.known.values(), default=-INF)
        left = []
        for read in self.reads:
            if past <= read["end"]:
                left.append(read)
                continue
            lower = self._lower(read["start"])
            counted = [a for a in self.adds if a.invoked <= read["end"] and a.status != "fail"]
            upper = sum(a.value for a in counted)
            if not lower <= read["value"] <= upper:
                self._report(read, lower, upper)
            elif past < INF and any(a.status is None for a in counted):
                left.append(read)  # an add still pending may fail and lower the upper bound
        self.reads = left

    def _report(self, read: dict[str, Any], lower: Any, upper: Any) -> None:
        self.found.append(
            Violation(
                "read-out-of-bounds",
                (read["client"],),
                read["start"],
                read["end"],
                evidence={"value": read["value"], "lower": lower, "upper": upper},
            )
        )
