"""Semaphore checker: at most `permits` clients believed they held a permit at once.

The holds are the lock checker's (checker/lock_observe.py: a belief runs from the acquire's ok
to the client's next release invoke, its kill, or the end of the history; an `info` acquire is a
maybe hold from its invoke). A sweep over each lock's hold endpoints in time order (at equal
times an end before a start, as the lock checker does) counts the definite holders of distinct
clients; each moment the count passes `permits` is an **excess** (invalid), naming the clients
then holding and the window until the count fell back. Counting maybe holds too gives the
**possible** excesses, reported but never invalid on their own. With `permits` 1 this is the
lock checker's belief overlap, counted by holders instead of by pairs. No hold succeeded:
unknown (nothing was tested). Cost: a sort and a sweep, O(n log n).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zkjepsen.checker import Result, Violation
from zkjepsen.checker.lock_observe import Hold, observe
from zkjepsen.history import History, Op, fault_windows, faults_during


def peak(holds: Iterable[Hold]) -> int:
    """The most distinct clients holding one lock at once (0: no hold)."""
    found = excesses(holds, 0)
    return max((r["most"] for r in found), default=0)


def excesses(holds: Iterable[Hold], permits: int) -> list[dict[str, Any]]:
    """Each stretch in which more than `permits` distinct clients held the same lock: its
    start, end (None: to the end of the history), the clients and the most at once."""
    by_key: dict[Any, list[tuple[float, int, Hold]]] = {}
    for h in holds:
        if h.end > h.start:
            events = by_key.setdefault(h.key, [])
            events.append((h.start, 1, h))
            events.append((h.end, 0, h))  # 0 sorts first: an end closes before a start opens
    out: list[dict[str, Any]] = []
    for key, events in by_key.items():
        events.sort(key=lambda e: (e[0], e[1]))
        active: dict[Any, int] = {}  # client -> its open holds
        open_: dict[str, Any] | None = None
        for t, is_start, h in events:
            if is_start:
                active[h.client] = active.get(h.client, 0) + 1
            else:
                active[h.client] -= 1
                if not active[h.client]:
                    del active[h.client]
            if len(active) > permits:
                if open_ is None:
                    open_ = {"key": key, "start": t, "clients": set(), "most": 0}
                open_["clients"].update(active)
                open_["most"] = max(open_["most"], len(active))
            elif open_ is not None:
                out.append({**open_, "end": t, "clients": sorted(open_["clients"], key=str)})
                open_ = None
        if open_ is not None:
            out.append({**open_, "end": None, "clients": sorted(open_["clients"], key=str)})
    return sorted(out, key=lambda r: r["start"])


class SemaphoreChecker:
    """`permits` holders at most (belief); `acquire`/`release` name the ops."""

    KINDS = ("excess",)

    def __init__(
        self,
        permits: int,
        acquire: Iterable[str] = ("acquire",),
        release: Iterable[str] = ("release",),
        max_reported: int = 50,
    ) -> None:
        if permits < 1:
            raise ValueError(f"a semaphore has at least 1 permit, not {permits}")
        self.permits = permits
        self.names = (tuple(acquire), tuple(release))
        self.max_reported = max_reported

    def check(self, history: History | list[Op]) -> Result:
        obs = observe(history, *self.names)
        definite = [h for h in obs.holds if not h.maybe]
        found = excesses(definite, self.permits)
        possible = [p for p in excesses(obs.holds, self.permits) if p not in found]
        faults = fault_windows(obs.nemesis)
        cap = self.max_reported
        for rec in found[:cap]:
            rec["faults"] = faults_during(faults, rec["start"], rec["end"])
        details: dict[str, Any] = {
            "permits": self.permits,
            "holds": len(obs.holds),
            "maybe_holds": len(obs.holds) - len(definite),
            "most_at_once": peak(definite),  # permits really in use, or more
            "excess_count": len(found),
            "excesses": found[:cap],
            "possible_excess_count": len(possible),
        }
        if found:
            violations = [
                Violation(
                    "excess",
                    tuple(r["clients"]),
                    int(r["start"]),
                    None if r["end"] is None else int(r["end"]),
                    tuple(r["faults"]),
                    {"most": r["most"], "permits": self.permits},
                )
                for r in found[:cap]
            ]
            return Result(False, details, violations, counts={"excess": len(found)})
        if not definite:
            return Result(
                "unknown",
                {**details, "reason": "no acquire succeeded: the permits were never held"},
            )
        return Result(True, details)
