"""Counter checker (Jepsen's counter semantics), plus lost updates.

Each `ok` read must lie within [lower, upper]: lower = the sum of adds that completed `ok` before
the read was invoked (they certainly happened before it); upper = the sum of adds invoked before
the read completed and not `fail`ed (`ok` or `info`: they may have happened before it). At equal
timestamps the bounds are taken in the permissive direction.

The final read is the last `ok` read. Lost updates = acknowledged adds missing from it: the sum of
`ok` adds that completed before it was invoked, minus its value, when positive (an `info` add that
did happen could hide a loss of the same size, so this is a lower bound on what was lost).

Both can show state a server lost (a power loss took acknowledged increments): each names the
faults its read met and the last disk fault before that read (`after_disk_fault`,
checker/attribution.py).
"""

from __future__ import annotations

from typing import Any

from zkjepsen.checker import Result, Violation
from zkjepsen.checker.attribution import attributed
from zkjepsen.history import History, fault_windows


class CounterChecker:
    KINDS = ("read-out-of-bounds", "lost")

    def __init__(self, add: str = "add", read: str = "read", max_reported: int = 50) -> None:
        self.add, self.read, self.max_reported = add, read, max_reported

    def check(self, history: History) -> Result:
        events, reads = self._events(history)
        acked = sum(1 for e in events if e[2] == "low")
        _bound_reads(events, reads)
        errors = [r for r in reads if not r["lower"] <= r["value"] <= r["upper"]]
        details: dict[str, Any] = {
            "reads": len(reads),
            "error_count": len(errors),
            "errors": errors[: self.max_reported],
        }
        if reads:
            final = max(reads, key=lambda r: r["end"])
            details["final_read"] = final
            details["acknowledged"] = final["lower"]
            details["lost"] = max(0, final["lower"] - final["value"])
        else:
            details["final_read"] = None
            details["lost"] = None
        violations = _violations(errors[: self.max_reported], details)
        if violations:
            faults = fault_windows(history)  # only when there is something to place
            violations = [attributed(v, faults) for v in violations]
            return Result(
                False,
                details,
                violations,
                counts={"read-out-of-bounds": len(errors)} if errors else {},
            )
        # A counter nobody added to, or nobody read, cannot show a lost update.
        if not acked:
            return Result(
                "unknown",
                {
                    **details,
                    "reason": f"no {self.add} was acknowledged: the counter was not tested",
                },
            )
        if not reads:
            return Result(
                "unknown",
                {
                    **details,
                    "reason": f"no {self.read} completed: nothing "
                    "shows whether the acknowledged adds were kept",
                },
            )
        return Result(True, details)

    def _events(self, history: History) -> tuple[list[tuple[int, int, str, Any]], list[Any]]:
        """The adds' and the ok reads' invokes and completions as events, and the reads."""
        # (time, order, kind, payload); order makes ties permissive: read invokes see the lower
        # bound before same-time add completions, read completions see the upper bound after
        # same-time add invokes.
        events: list[tuple[int, int, str, Any]] = []
        reads: list[dict[str, Any]] = []
        for call in history.calls(validate=False):
            inv, comp = call.invoke, call.complete
            status = call.status
            if inv.f == self.add:
                if status == "fail":
                    continue
                v = inv.value if inv.value is not None else 1
                events.append((inv.time, 0, "up", v))
                if comp is not None and status == "ok":
                    events.append((comp.time, 2, "low", v))
            elif (
                inv.f == self.read
                and comp is not None
                and status == "ok"
                and comp.value is not None
            ):
                r = len(reads)
                reads.append(
                    {
                        "value": comp.value,
                        "process": inv.process,
                        "client": inv.actor,
                        "start": inv.time,
                        "end": comp.time,
                    }
                )
                events.append((inv.time, 1, "read-start", r))
                events.append((comp.time, 3, "read-end", r))
        return events, reads


def _bound_reads(events: list[tuple[int, int, str, Any]], reads: list[dict[str, Any]]) -> None:
    """Sets each read's lower and upper bound, sweeping the events in time order."""
    events.sort(key=lambda e: (e[0], e[1]))
    lower = upper = 0
    for _, _, kind, x in events:
        if kind == "up":
            upper += x
        elif kind == "low":
            lower += x
        elif kind == "read-start":
            reads[x]["lower"] = lower
        else:
            reads[x]["upper"] = upper


def _violations(errors: list[dict[str, Any]], details: dict[str, Any]) -> list[Violation]:
    """The reported reads out of bounds, and the lost adds at the final read."""
    violations = [
        Violation(
            "read-out-of-bounds",
            (r["client"],),
            r["start"],
            r["end"],
            evidence={k: r[k] for k in ("value", "lower", "upper")},
        )
        for r in errors
    ]
    if details.get("lost"):
        f = details["final_read"]
        violations.append(
            Violation(
                "lost",
                (f["client"],),
                f["start"],
                f["end"],
                evidence={
                    "lost": details["lost"],
                    "acknowledged": details["acknowledged"],
                    "final_value": f["value"],
                },
            )
        )
    return violations
