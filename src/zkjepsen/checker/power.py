"""How much a verdict is worth: the faults that landed where the lock could break, and the
upper bound on the per-fault violation rate that their outcome allows (docs/verdicts.md).

A run in which no pause ever froze a holder says nothing about pauses; one in which 27 froze a
holder past its session timeout and none split says the per-pause split rate is at most 10.5 %
(95 %, exact). Pure: a function of the history, the violations a checker found and the session
timeout the run asked for (each client's negotiated one wins when its `session` event has it).

An **opportunity** is one executed fault (an attempt: a triggered fault re-armed after a miss
counts each attempt) that landed where the property could break. Its **at-risk clients** are
its target clients (`c3`) while they were in the lock path (from an acquire invoke to their
release invoke: waiting, holding; a failed acquire, a SIGKILL or the program's death ends it),
or, for a fault on servers, every client while it held (a definite belief). Per kind:
- **silence** (pauses, cuts, packet loss, a proxy dropping pings or holding the session): an
  at-risk client was so for at least its session (or lease) timeout T of the fault window -
  long enough for the service to expire its session while it still waited or believed.
- **instant** (client and server kills, PostgreSQL ending the lock's connection, a clock step):
  an at-risk client was so at the fault's start.
- **during** (clock strobes and rates, client clock skews, the wire proxy's one-shot faults on
  the next op): an at-risk client was so at some time in the fault window. Also the rule for a
  kind this module does not know.
Only a fault that **landed** counts: its effect was observed at its target, and the nemesis
recorded the observation (`zkjepsen.faultkinds.landing`, one predicate for the nemesis and this
module). A **missed** one - never seen frozen, no packet dropped, a roll that failed, an apply
that raised, a trigger's state that had ended, a history without observations - is counted
apart, per kind, with why, and the power line says how many and why.

An opportunity is **violated** when a violation of the property judged (`prop`: belief
overlaps; effect overlaps and fencing's findings; or any kind) has a window [start, end] that
meets [fault start, fault end + T] (a split begins while the holder is frozen; a stale write
lands just after the thaw), whoever it names (a waiter's death lets two others hold at once),
unless it is on another lock than a client fault's at-risk clients were after. A fault that
breaks the servers' state is violated by any kind lost state can cause that meets it or that
its checker names as following it. The rule, stated once: checker/attribution.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from zkjepsen.checker import Violation
from zkjepsen.checker.attribution import LOST_STATE_KINDS, counts_against, locks_of
from zkjepsen.checker.bounds import upper_bound
from zkjepsen.checker.lease import FaultSpan, Sessions, client_of, fault_spans, lease_s
from zkjepsen.checker.lock_observe import observe
from zkjepsen.checker.power_table import FaultPower, Opportunity, Power, ranked
from zkjepsen.faultkinds import UNKNOWN_RULE, client_killers, power_rule
from zkjepsen.history import NEMESIS, History, Op

S = 1_000_000_000

# The violation kinds that count as the property breaking (any: every kind).
EFFECTS = frozenset({"effect", "backwards", "reused-token", "foreign-token"})
PROPERTY_KINDS = {"belief": frozenset({"belief"}), "effect": EFFECTS}
# What counts against a fault that breaks the servers' state (PowerRule.state), whatever the
# property judged: every kind lost state can cause (a lock's, a fence's, a counter's).
STATE_KINDS = LOST_STATE_KINDS


def rule_of(kind: str) -> str:
    """Which definition of an opportunity applies to a fault kind (module docstring): the one
    its declaration names (zkjepsen.faultkinds), `during` for a kind none declares."""
    return (power_rule(kind) or UNKNOWN_RULE).landed


def power_of(
    history: History | Iterable[Op],
    *,
    violations: Iterable[Violation] = (),
    session_timeout_s: float,
    acquire: Iterable[str] = ("acquire",),
    release: Iterable[str] = ("release",),
    prop: str = "any",
    confidence: float = 0.95,
    method: str = "exact",
) -> Power:
    """The opportunities of every fault kind in the history, and how many a violation followed
    (module docstring). `session_timeout_s`: the run's requested timeout, for clients whose
    history has no `session` event saying what they negotiated."""
    ops = history.ops if isinstance(history, History) else list(history)
    acq, rel = tuple(acquire), tuple(release)
    obs = observe(ops, acq, rel, ())
    last = obs.last_time
    beliefs: dict[Any, list[tuple[int, float]]] = {}
    for h in obs.holds:
        if not h.maybe:
            beliefs.setdefault(h.client, []).append((h.start, min(h.end, last)))
    timeouts, paths = _sessions_and_paths(ops, frozenset(acq), frozenset(rel), last)
    violations = [v for v in violations if v.start is not None]
    kinds = PROPERTY_KINDS.get(prop)
    found = [v for v in violations if kinds is None or v.kind in kinds]
    locks = locks_of(ops, acq)
    # A fault that breaks the servers' state (a power loss) is judged by every kind lost state
    # can cause, whoever they name: it takes a lock node, a token or increments, and a reused
    # token or a read out of bounds shows it, long after and between clients it never hit.
    lost_state = [v for v in violations if v.kind in STATE_KINDS]
    counts: dict[str, list[int]] = {}
    landed: list[Opportunity] = []
    executed = fault_spans(ops, last)
    for fault in executed:
        tally = counts.setdefault(fault.kind, [0, 0, 0])  # faults, opportunities, violated
        tally[0] += 1
        opp = _opportunity(fault, beliefs, paths, timeouts, session_timeout_s)
        if opp is None:
            continue
        state = (power_rule(fault.kind) or UNKNOWN_RULE).state
        on_clients = any(client_of(t) is not None for t in fault.targets)
        hit = any(
            counts_against(v, opp, state=state, on_clients=on_clients, locks=locks)
            for v in (lost_state if state else found)
        )
        opp = replace(opp, violated=hit)
        landed.append(opp)
        tally[1] += 1
        tally[2] += hit
    missed = _missed(executed)
    per_kind = tuple(
        FaultPower(kind, n, k, upper_bound(k, n, confidence, method), faults, *missed[kind])
        for kind, (faults, n, k) in sorted(counts.items())
    )
    return Power(per_kind, tuple(landed), prop, confidence, method)


def _missed(faults: list[FaultSpan]) -> dict[str, tuple[int, tuple[tuple[str, int], ...]]]:
    """kind -> (how many of its faults missed, (why, how many) the commonest first)."""
    whys: dict[str, dict[str, int]] = {f.kind: {} for f in faults}
    for f in faults:
        if not f.landing.landed:
            whys[f.kind][f.landing.why] = whys[f.kind].get(f.landing.why, 0) + 1
    return {kind: (sum(w.values()), ranked(w)) for kind, w in whys.items()}


def _sessions_and_paths(
    ops: list[Op], acq: frozenset[str], rel: frozenset[str], last: int
) -> tuple[Sessions, dict[Any, list[tuple[int, int]]]]:
    """client -> [(time, negotiated timeout s, None)] from its `session` events (lease.py
    `Sessions`: the power line does not read a renewal period); client -> the spans
    it was in the lock path: from an acquire invoke to its release invoke (when it stopped
    believing), a failed acquire's completion, its SIGKILL or its program's death."""
    timeouts: Sessions = {}
    paths: dict[Any, list[tuple[int, int]]] = {}
    began: dict[Any, int] = {}  # client -> when its current path began
    pending: dict[Any, str] = {}  # process -> the op it invoked
    killers = client_killers()  # the fault kinds whose start ends their target clients

    def leave(c: Any, t: int) -> None:
        if c in began:
            paths.setdefault(c, []).append((began.pop(c), t))

    for op in ops:
        v = op.value
        if op.process == NEMESIS:
            if op.f in killers and isinstance(v, dict) and v.get("phase") == "start":
                for c in map(client_of, v.get("targets") or ()):
                    leave(c, op.time)
            continue
        c = op.actor
        if op.type == "event":
            if op.f == "session" and isinstance(v, dict) and v.get("timeout_ms"):
                timeouts.setdefault(c, []).append((op.time, v["timeout_ms"] / 1000, None))
            elif op.f == "client-error":
                leave(c, op.time)
        elif op.type == "invoke":
            pending[op.process] = op.f
            if op.f in acq and c not in began:
                began[c] = op.time
            elif op.f in rel:
                leave(c, op.time)
        elif pending.pop(op.process, None) in acq and op.type == "fail":
            leave(c, op.time)
    for c in list(began):
        leave(c, last)
    return timeouts, paths


def _timeout(fault: FaultSpan, client: Any, timeouts: dict, default: float) -> float:
    """The session (lease) timeout the fault had to exceed for `client` (checker/lease.py)."""
    t = lease_s(fault, client, timeouts, default)
    return default if t is None else t


def _vetoed(fault: FaultSpan) -> bool:
    """It missed (faultkinds.landing): not seen at its target, never went in, or it went in
    outside the state it aimed at."""
    return not fault.landing.landed


def _opportunity(
    fault: FaultSpan,
    beliefs: dict[Any, list[tuple[int, float]]],
    paths: dict[Any, list[tuple[int, int]]],
    timeouts: Sessions,
    default_timeout_s: float,
) -> Opportunity | None:
    if _vetoed(fault):
        return None
    s, e = fault.start, fault.end if fault.end is not None else fault.start
    targeted = [c for c in (client_of(t) for t in fault.targets) if c is not None]
    rule = rule_of(fault.kind)
    spans = paths if targeted else beliefs  # a client's lock path; on servers, who held
    at_risk: list[Any] = []
    limits: list[float] = []
    for c in targeted or sorted(spans, key=repr):
        t_s = _timeout(fault, c, timeouts, default_timeout_s)
        for a, b in spans.get(c, ()):
            overlap = min(b, e) - max(a, s)
            if (
                (rule == "silence" and overlap >= t_s * S)
                or (rule == "instant" and a <= s <= b)
                or (rule == "during" and overlap >= 0 and b > a)
            ):
                at_risk.append(c)
                limits.append(t_s)
                break
    d = fault.end_value.get("detail") or fault.start_value.get("detail") or {}
    if rule == "instant" and isinstance(d, dict) and isinstance(d.get("holders_at_kill"), list):
        # Read from the clients' own files the instant before the kill: exacter than the
        # beliefs at the fault's start record (the kill goes in 0.1-1 s later).
        at_risk = [c for c in map(client_of, d["holders_at_kill"]) if c is not None]
        limits = [_timeout(fault, c, timeouts, default_timeout_s) for c in at_risk]
    if not at_risk:
        return None
    return Opportunity(fault.kind, fault.fault_id, s, e, tuple(at_risk), max(limits))


__all__ = ["FaultPower", "Opportunity", "Power", "power_of", "rule_of", "upper_bound"]
