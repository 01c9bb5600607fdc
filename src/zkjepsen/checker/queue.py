"""Queue checker: nothing lost, nothing duplicated, nothing invented, FIFO where promised.

Ops: `enqueue v`, `dequeue` (ok with the value taken; fail = empty), `drain` (ok with the list of
values left, taken at the end). A value is **taken** by an ok dequeue or by a drain.
- **duplicated**: taken more than once (values are assumed unique per enqueue).
- **unexpected**: taken but never enqueued (neither ok nor info).
- **lost**: enqueued ok but never taken; only decided when the history has a drain (without it a
  value may still be in the queue) - else reported as `lost: null`.
- **recovered**: enqueued with info (unknown) and taken: it did happen; not an error.
- **FIFO** (`fifo=True`): if the enqueue of a completed before the enqueue of b was invoked, the
  take of b must not complete before the take of a is invoked. Checked by a sweep over enqueues
  in invoke order with a running maximum of the take-start of enqueues already completed.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from zkjepsen.checker import Result, Violation
from zkjepsen.checker.linear.models import freeze
from zkjepsen.history import History


class QueueChecker:
    KINDS = ("duplicated", "unexpected", "lost", "fifo")

    def __init__(
        self,
        fifo: bool = False,
        enqueue: str = "enqueue",
        dequeue: str = "dequeue",
        drain: str = "drain",
        max_reported: int = 50,
    ) -> None:
        self.fifo = fifo
        self.names = (enqueue, dequeue, drain)
        self.max_reported = max_reported

    def check(self, history: History) -> Result:
        enq_f, deq_f, drain_f = self.names
        enq, taken, takes, drained = self._enqueues_and_takes(history)
        cap = self.max_reported
        duplicated = sorted((v for v, n in takes.items() if n > 1), key=repr)
        unexpected = sorted((v for v in takes if v not in enq), key=repr)
        lost = (
            sorted((v for v, e in enq.items() if e[2] == "ok" and v not in takes), key=repr)
            if drained
            else None
        )
        recovered = sum(1 for v, e in enq.items() if e[2] != "ok" and v in takes)
        fifo_violations = self._fifo(enq, taken) if self.fifo else []
        details = {
            "enqueued": len(enq),
            "taken": sum(takes.values()),
            "drained": drained,
            "duplicated_count": len(duplicated),
            "duplicated": duplicated[:cap],
            "unexpected_count": len(unexpected),
            "unexpected": unexpected[:cap],
            "lost_count": None if lost is None else len(lost),
            "lost": None if lost is None else lost[:cap],
            "recovered": recovered,
            "fifo_checked": self.fifo,
            "fifo_violation_count": len(fifo_violations),
            "fifo_violations": fifo_violations[:cap],
        }
        violations = _violations(duplicated, unexpected, lost, fifo_violations, cap)
        if violations:
            counts = {
                "duplicated": len(duplicated),
                "unexpected": len(unexpected),
                "lost": len(lost or ()),
                "fifo": len(fifo_violations),
            }
            return Result(False, details, violations, counts={k: n for k, n in counts.items() if n})
        # An empty queue loses nothing: without an enqueue and a take nothing was tested.
        if not any(e[2] == "ok" for e in enq.values()):
            return Result(
                "unknown", {**details, "reason": f"no {enq_f} succeeded: the queue was not tested"}
            )
        if not takes:
            return Result(
                "unknown",
                {
                    **details,
                    "reason": f"no {deq_f} or {drain_f} took a "
                    "value: nothing shows what the queue kept",
                },
            )
        return Result(True, details)

    def _enqueues_and_takes(
        self, history: History
    ) -> tuple[dict[Any, tuple[int, float, str]], dict[Any, tuple[int, int]], Counter[Any], bool]:
        """Each enqueued value's (start, end, status), each taken value's first take (start,
        end), how many times each value was taken, and whether the history has a drain."""
        enq_f, deq_f, drain_f = self.names
        enq: dict[Any, tuple[int, float, str]] = {}  # value -> (start, end, status)
        taken: dict[Any, tuple[int, int]] = {}  # value -> first take (start, end)
        takes: Counter[Any] = Counter()
        drained = False
        for call in history.calls(validate=False):
            inv, comp = call.invoke, call.complete
            status = call.status
            if inv.f == enq_f and status != "fail":
                end = comp.time if comp is not None and status == "ok" else float("inf")
                enq[freeze(inv.value)] = (inv.time, end, status)
            elif comp is None or status != "ok":
                continue
            elif inv.f == deq_f:
                v = freeze(comp.value)
                takes[v] += 1
                taken.setdefault(v, (inv.time, comp.time))
            elif inv.f == drain_f:
                drained = True
                for x in comp.value or ():
                    v = freeze(x)
                    takes[v] += 1
                    taken.setdefault(v, (inv.time, comp.time))
        return enq, taken, takes, drained

    @staticmethod
    def _fifo(
        enq: dict[Any, tuple[int, float, str]], taken: dict[Any, tuple[int, int]]
    ) -> list[dict[str, Any]]:
        both = [(v, enq[v], taken[v]) for v in enq if v in taken]
        # events: enqueue completion of a makes a "certainly earlier" candidate for later b
        events = sorted(
            [(e[1], 0, k) for k, (_, e, _) in enumerate(both)]
            + [(e[0], 1, k) for k, (_, e, _) in enumerate(both)]
        )
        out = []
        top = None  # index into both: among completed enqueues, the one taken latest (by start)
        for _, kind, k in events:
            if kind == 0:
                if top is None or both[k][2][0] > both[top][2][0]:
                    top = k
            elif top is not None and both[k][2][1] < both[top][2][0] and top != k:
                a, b = both[top], both[k]
                out.append(
                    {
                        "first_enqueued": a[0],
                        "taken_after": b[0],
                        "enqueue_windows": [a[1][:2], b[1][:2]],
                        "take_windows": [a[2], b[2]],
                    }
                )
        return out


def _violations(
    duplicated: list[Any],
    unexpected: list[Any],
    lost: list[Any] | None,
    fifo_violations: list[dict[str, Any]],
    cap: int,
) -> list[Violation]:
    """The reported findings, at most `cap` of each kind, as typed violations."""
    return (
        [Violation("duplicated", evidence={"value": v}) for v in duplicated[:cap]]
        + [Violation("unexpected", evidence={"value": v}) for v in unexpected[:cap]]
        + [Violation("lost", evidence={"value": v}) for v in (lost or ())[:cap]]
        + [
            Violation(
                "fifo",
                start=min(x["enqueue_windows"][0][0], x["enqueue_windows"][1][0]),
                end=max(x["take_windows"][0][1], x["take_windows"][1][1]),
                evidence=x,
            )
            for x in fifo_violations[:cap]
        ]
    )
