"""Liveness of a lock after the faults: once every fault has healed, the lock must make progress.

Safety checkers cannot see a lock that stops granting: an orphan lock node (a create whose
response was lost, by a recipe that cannot find its own node again) or a watch set on a node
that vanished leaves waiters blocked forever, and an empty history of holds is trivially
exclusive. Definition: the *quiet period* starts a grace time after the last fault ended (or at
the start of the history when there were none) and runs to the last client op; the grace is
`grace_s` or 1.5x the longest session timeout the clients recorded, whichever is longer (a
stale holder's lock node may live that long). If clients invoked `acquire` in the quiet period,
it lasted at least `min_quiet_s`, and no acquire completed `ok` in it, the lock is stuck:
invalid. A quiet period too short to judge is reported as `judged: false` and does not change
the verdict (the recovery phase of the run was too short for this check).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zkjepsen.checker import Result, Violation
from zkjepsen.history import NEMESIS, History, Op, fault_windows

S = 1_000_000_000


class LivenessChecker:
    def __init__(self, acquire: Iterable[str] = ("acquire",), grace_s: float = 5.0,
                 min_quiet_s: float = 3.0) -> None:
        self.acquire = frozenset(acquire)
        self.grace_ns = int(grace_s * S)
        self.min_quiet_ns = int(min_quiet_s * S)

    def check(self, history: History | list[Op]) -> Result:
        ops = history.ops if isinstance(history, History) else list(history)
        client_ops = [op for op in ops if op.process != NEMESIS and op.type != "event"]
        if not client_ops:
            return Result("unknown", {"reason": "no client ops: progress was not tested"})
        windows = fault_windows(ops)
        timeouts = [op.value.get("timeout_ms") or 0 for op in ops if op.type == "event"
                    and op.f == "session" and isinstance(op.value, dict)]
        grace_ns = max(self.grace_ns, int(1.5 * max(timeouts, default=0) * 1_000_000))
        healed = max((w.end if w.end is not None else client_ops[-1].time for w in windows),
                     default=client_ops[0].time)
        quiet_start = healed + grace_ns if windows else client_ops[0].time
        quiet_end = client_ops[-1].time
        details: dict[str, Any] = {"quiet_start": quiet_start, "quiet_end": quiet_end}
        waiting = sorted({op.actor for op in client_ops if op.type == "invoke"
                          and op.f in self.acquire and quiet_start <= op.time}, key=str)
        granted = sum(1 for op in client_ops if op.type == "ok" and op.f in self.acquire
                      and quiet_start <= op.time)
        details |= {"acquires_granted_after_heal": granted, "clients_waiting": waiting}
        if not waiting:
            return Result(True, {**details, "reason": "no acquire attempted after the heal"})
        if quiet_end - quiet_start < self.min_quiet_ns:
            return Result(True, {**details, "judged": False, "reason": "the quiet period "
                                 "after the last fault is too short to judge progress"})
        if granted == 0:
            stuck = {"clients": waiting, "start": quiet_start, "end": quiet_end,
                     "reason": f"no acquire succeeded in the {(quiet_end - quiet_start) / S:.1f}"
                               " s after every fault healed, though clients kept asking"}
            return Result(False, {**details, "stuck": [stuck]}, [Violation(
                "stuck", tuple(waiting), quiet_start, quiet_end,
                evidence={"reason": stuck["reason"]})])
        return Result(True, {**details, "judged": True})
