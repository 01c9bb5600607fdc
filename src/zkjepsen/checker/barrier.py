"""Barrier checker: nobody passes before n members entered; everybody who entered passes.

Reads the `barrier` workload's ops (`enter`, `pass`, `leave`; `key` = the round's barrier node):
- **early pass** (safety): a `pass` that completed `ok` at time t in a round where fewer than n
  distinct clients had invoked `enter` (not failed; an enter never completed, e.g. SIGKILLed
  after its create landed, counts) by t. Counting invokes (not completions) is
  generous to the barrier: only a certain violation is reported. n is the checker's `n`, else
  the `n` the members recorded in their `enter` invokes.
- **stuck** (liveness, "every member that entered eventually passed, once faults healed"): a wait
  (`pass`, or `leave` of the double barrier) that ended without passing (fail, info, the client's
  SIGKILL, or the end of the history) after it had lasted at least `grace_s` on a healthy
  system: counted from the later of its invoke and the end of the last fault before it ended plus
  a settle time (1.5x the longest session timeout the clients recorded: a dead member's child
  lives that long). A wait that gave up sooner is `cut_short` (not judged); one that was still
  waiting at the end of the run after `grace_s` in all, but with less healthy time, makes the
  verdict "unknown" (the run's recovery was too short to judge it), never valid.

Verdict: False on any early pass or stuck wait; "unknown" when no member entered, or when no
member passed and no wait could be judged; else True. Violations name the clients, the window
and the faults in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zkjepsen.checker import Result, Violation, unknown
from zkjepsen.checker.lock_observe import CLIENT_DEATHS
from zkjepsen.history import NEMESIS, History, Op, fault_windows, faults_during

S = 1_000_000_000
WAITS = ("pass", "leave")


def client_number(target: Any) -> Any:
    """Nemesis targets name clients `c3`; histories number them 3."""
    if isinstance(target, str) and target[:1] == "c" and target[1:].isdigit():
        return int(target[1:])
    return target


@dataclass
class _Seen:
    """What the clients' ops show of the barrier's rounds."""

    last: int  # time of the history's last op
    entered: dict[Any, dict[Any, int]] = field(default_factory=dict)  # round -> client -> invoke
    sizes: dict[Any, int] = field(default_factory=dict)  # round -> n recorded by its members
    passes: list[tuple[Op, Op]] = field(default_factory=list)
    waits: list[dict[str, Any]] = field(default_factory=list)  # pass/leave: end and outcome
    entered_ok: int = 0
    timeouts: list[int] = field(default_factory=lambda: [0])  # session timeouts recorded, ms


class BarrierChecker:
    KINDS = ("early-pass", "stuck")

    def __init__(self, n: int | None = None, grace_s: float = 5.0, max_reported: int = 50) -> None:
        self.n = n
        self.grace_ns = int(grace_s * S)
        self.max_reported = max_reported

    def check(self, history: History | list[Op]) -> Result:
        ops = history.ops if isinstance(history, History) else list(history)
        seen = self._observe(ops)
        if not seen.entered_ok and not seen.entered:
            return Result(
                "unknown",
                {"reason": "no member entered the barrier: nothing was exercised", "entered": 0},
            )
        faults = fault_windows(ops)
        settle = int(1.5 * max(seen.timeouts) * 1_000_000)
        early = self._early_passes(seen)
        stuck, cut_short, unjudged = self._judge_waits(seen, faults, settle)
        cap = self.max_reported
        for rec in early[:cap] + stuck[:cap]:
            rec["faults"] = faults_during(faults, rec["start"], rec["end"])
        details = {
            "rounds": len(seen.entered),
            "enters": seen.entered_ok,
            "passes": len(seen.passes),
            "early_pass_count": len(early),
            "early_passes": early[:cap],
            "stuck_count": len(stuck),
            "stuck": stuck[:cap],
            "cut_short": cut_short,
            "unjudged_long_waits": unjudged[:cap],
        }
        if early or stuck:
            typed = [_violation("early-pass", r) for r in early[:cap]]
            typed += [_violation("stuck", r) for r in stuck[:cap]]
            counts = {k: n for k, n in (("early-pass", len(early)), ("stuck", len(stuck))) if n}
            return Result(False, details, typed, counts=counts)
        if not seen.passes and not any(w["outcome"] == "ok" for w in seen.waits):
            return unknown("no member passed and no wait lasted long enough to judge", **details)
        if unjudged:
            return unknown(
                f"{len(unjudged)} member(s) still waiting when the run ended, after waiting "
                f"{max(w['end'] - w['start'] for w in unjudged) / S:.1f} s, but with too little "
                "fault-free time after the last fault to tell stuck from slow (a longer recovery "
                "decides)",
                **details,
            )
        return Result(True, details)

    def _observe(self, ops: list[Op]) -> _Seen:
        """The rounds' members, sizes, passes and waits, from the clients' ops."""
        seen = _Seen(last=ops[-1].time if ops else 0)
        pending: dict[Any, Op] = {}
        for op in ops:
            if op.process == NEMESIS:
                continue
            if op.type == "event":
                if op.f == "session" and isinstance(op.value, dict):
                    seen.timeouts.append(op.value.get("timeout_ms") or 0)
                continue
            if op.type == "invoke":
                pending[op.process] = op
                if op.f == "enter":
                    v = op.value if isinstance(op.value, dict) else {}
                    if isinstance(v.get("n"), int):
                        seen.sizes[op.key] = max(seen.sizes.get(op.key, 0), v["n"])
                continue
            inv = pending.pop(op.process, None)
            if inv is None:
                continue
            if inv.f == "enter":
                if op.type != "fail":
                    seen.entered.setdefault(inv.key, {}).setdefault(inv.actor, inv.time)
                seen.entered_ok += op.type == "ok"
            elif inv.f in WAITS:
                seen.waits.append(_wait(inv, op.time, op.type, op.extra.get("error")))
                if inv.f == "pass" and op.type == "ok":
                    seen.passes.append((inv, op))
        for inv in pending.values():  # never completed: ended by a SIGKILL, or still waiting
            if inv.f == "enter":  # its child may exist (a create that landed before the kill)
                seen.entered.setdefault(inv.key, {}).setdefault(inv.actor, inv.time)
            if inv.f in WAITS:
                seen.waits.append(_wait(inv, self._death(inv, ops, seen.last), "none", None))
        return seen

    def _early_passes(self, seen: _Seen) -> list[dict[str, Any]]:
        """The passes that completed before n distinct clients had invoked their enter."""
        early = []
        for inv, ok in seen.passes:
            n = self.n or seen.sizes.get(inv.key)
            if n is None:
                continue
            members = sorted(
                (c for c, t in seen.entered.get(inv.key, {}).items() if t <= ok.time), key=repr
            )
            if len(members) < n:
                first = min(seen.entered.get(inv.key, {inv.actor: inv.time}).values())
                early.append(
                    {
                        "round": inv.key,
                        "client": ok.actor,
                        "clients": [ok.actor, *(c for c in members if c != ok.actor)],
                        "entered_clients": members,
                        "entered": len(members),
                        "n": n,
                        "start": first,
                        "end": ok.time,
                        "count_seen": (ok.value or {}).get("count")
                        if isinstance(ok.value, dict)
                        else None,
                    }
                )
        return early

    def _judge_waits(
        self, seen: _Seen, faults: list[Any], settle: int
    ) -> tuple[list[dict[str, Any]], int, list[dict[str, Any]]]:
        """The waits that ended without passing: stuck (they lasted `grace_ns` of healthy
        time), how many were cut short, and those of them still waiting at the end after
        `grace_ns` in all (unjudged)."""
        stuck, cut_short, unjudged = [], 0, []
        last = seen.last
        for w in seen.waits:
            if w["outcome"] == "ok":
                continue
            since = w["start"]
            for f in faults:
                if f.start <= w["end"]:
                    since = max(since, (last if f.end is None else f.end) + settle)
            healthy = w["end"] - since
            if healthy >= self.grace_ns:
                stuck.append({**w, "clients": [w["client"]], "healthy_wait_s": healthy / S})
            else:
                cut_short += 1
                at_end = w["error"] == "stopped" or (w["outcome"] == "none" and w["end"] == last)
                if at_end and w["end"] - w["start"] >= self.grace_ns:
                    unjudged.append({**w, "healthy_wait_s": healthy / S})
        return stuck, cut_short, unjudged

    @staticmethod
    def _death(inv: Op, ops: list[Op], last: int) -> int:
        """When the process of a never-completed wait died: docker delivers a SIGKILL some time
        after the fault's start record (the invoke may even come after it), and before its end
        (the client restarts then); a later op of the same client from another process proves
        it too. Else the wait lasted to the end of the history."""
        end = last
        for w in fault_windows(ops):
            if w.f not in CLIENT_DEATHS or inv.actor not in {
                client_number(x) for x in w.targets or ()
            }:
                continue
            if w.end is None or w.end >= inv.time:
                end = min(end, max(w.start, inv.time))
        for op in ops:
            if op.time > inv.time and op.actor == inv.actor and op.process != inv.process:
                return min(end, op.time)
        return end


def _violation(kind: str, rec: dict[str, Any]) -> Violation:
    evidence = {k: v for k, v in rec.items() if k not in ("clients", "start", "end", "faults")}
    return Violation(
        kind, tuple(rec["clients"]), rec["start"], rec["end"], tuple(rec["faults"]), evidence
    )


def _wait(inv: Op, end: int, outcome: str, error: Any) -> dict[str, Any]:
    """A pass or leave, with its end and outcome ("none": never completed)."""
    return {
        "f": inv.f,
        "round": inv.key,
        "client": inv.actor,
        "start": inv.time,
        "end": end,
        "outcome": outcome,
        "error": error,
    }
