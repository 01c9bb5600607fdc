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
A fault whose start recorded an `error` (it never went in), whose end recorded `landed: false`
(its trigger's state had ended) or whose detail says `holding_when_hit: false` never counts.

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
from dataclasses import dataclass, fields, replace
from typing import Any

from zkjepsen.checker import Violation
from zkjepsen.checker.attribution import LOST_STATE_KINDS, counts_against, locks_of
from zkjepsen.checker.bounds import upper_bound
from zkjepsen.checker.lock_observe import observe
from zkjepsen.faultkinds import UNKNOWN_RULE, client_killers, power_rule
from zkjepsen.history import NEMESIS, History, Op

S = 1_000_000_000

# What broke, by the property judged: (one, many, the rate's word).
PROPERTIES = {
    "belief": ("split holder", "split holders", "split rate"),
    "effect": ("effect overlap", "effect overlaps", "overlap rate"),
    "any": ("violation", "violations", "violation rate"),
}
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


@dataclass(frozen=True)
class Opportunity:
    """One fault that landed where the property could break."""

    kind: str
    fault_id: Any
    start: int  # history ns
    end: int
    clients: tuple[Any, ...]  # the at-risk clients that make it count
    timeout_s: float  # the session/lease timeout it had to exceed (silence) or its grace
    violated: bool = False

    def to_json(self) -> dict[str, Any]:
        return {**_table(self), "clients": list(self.clients)}


@dataclass(frozen=True)
class FaultPower:
    kind: str  # the fault kind's name (zkjepsen.faultkinds)
    opportunities: int  # faults that landed where the property could break
    violated: int  # opportunities followed by a violation
    upper: float  # one-sided upper bound on the per-opportunity violation rate
    faults: int = 0  # executed faults of this kind (attempts), landed or not

    def fragment(self, prop: str, confidence: float) -> str:
        rule = power_rule(self.kind) or UNKNOWN_RULE
        one, many, rate = PROPERTIES.get("any" if rule.state else prop, PROPERTIES["any"])
        k_one, k_many, unit = rule.nouns(self.kind)
        if not self.opportunities:
            some = k_one if self.faults == 1 else k_many
            return f"none of {self.faults} {some} landed where it could break"
        return (
            f"{self.violated} {one if self.violated == 1 else many} in {self.opportunities} landed "
            f"{k_one if self.opportunities == 1 else k_many}: per-{unit} {rate} "
            f"≤ {100 * self.upper:.1f} % ({100 * confidence:.0f} %)"
        )


@dataclass(frozen=True)
class Power:
    per_kind: tuple[FaultPower, ...]
    landed: tuple[Opportunity, ...] = ()
    prop: str = "any"  # what counts as broken: belief (split holders), effect, any
    confidence: float = 0.95
    method: str = "exact"  # exact (Clopper-Pearson) or wilson

    def opportunities(self) -> int:
        return sum(k.opportunities for k in self.per_kind)

    def violated(self) -> int:
        return sum(k.violated for k in self.per_kind)

    def faults(self) -> int:
        return sum(k.faults for k in self.per_kind)

    def upper(self) -> float:
        """The weakest per-kind bound among the kinds that landed (1.0 if none did): what a
        power target (`--until-power RATE`) must bring below RATE."""
        return max((k.upper for k in self.per_kind if k.opportunities), default=1.0)

    def line(self) -> str:
        """e.g. "0 split holders in 27 landed client-pauses: per-pause split rate ≤ 10.5 %
        (95 %)"; kinds that never landed are named after those that did."""
        kinds = sorted(self.per_kind, key=lambda k: (not k.opportunities, k.kind))
        if not self.opportunities():
            return self.reason()
        return "; ".join(k.fragment(self.prop, self.confidence) for k in kinds)

    def reason(self) -> str:
        """Why a run without an opportunity is unknown."""
        tried = ", ".join(f"{k.faults} {k.kind}" for k in self.per_kind if k.faults)
        return "no fault landed where it could break the lock" + (
            f" ({tried}: none hit a client waiting for or holding it, for long enough; "
            "docs/verdicts.md)"
            if tried
            else " (no fault ran)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line(),
            "property": self.prop,
            "confidence": self.confidence,
            "method": self.method,
            "opportunities": self.opportunities(),
            "violated": self.violated(),
            "upper": self.upper(),
            "per_kind": [_table(k) for k in self.per_kind],
            "landed": [o.to_json() for o in self.landed],
        }

    @classmethod
    def from_json(cls, d: Any) -> Power | None:
        """A results.json power table back (None if it is not one)."""
        if not isinstance(d, dict) or not isinstance(d.get("per_kind"), list):
            return None
        kinds = tuple(_read(FaultPower, k) for k in d["per_kind"] if isinstance(k, dict))
        landed = tuple(
            _read(Opportunity, {**o, "clients": tuple(o.get("clients") or ())})
            for o in d.get("landed") or ()
            if isinstance(o, dict)
        )
        return cls(
            kinds,
            landed,
            str(d.get("property") or "any"),
            float(d.get("confidence") or 0.95),
            str(d.get("method") or "exact"),
        )

    @classmethod
    def pooled(cls, powers: Iterable[Power]) -> Power:
        """Several independent runs' power as one: per kind, their faults, opportunities and
        violated opportunities add up, and the bound is taken again over the sums (a matrix
        cell: 3 runs of 9 landed pauses each bound the rate as 27 would)."""
        powers = list(powers)
        sums: dict[str, tuple[int, int, int]] = {}
        for k in (k for p in powers for k in p.per_kind):
            f, n, v = sums.get(k.kind, (0, 0, 0))
            sums[k.kind] = (f + k.faults, n + k.opportunities, v + k.violated)
        first = powers[0] if powers else cls(())
        per_kind = tuple(
            FaultPower(kind, n, v, upper_bound(v, n, first.confidence, first.method), f)
            for kind, (f, n, v) in sorted(sums.items())
        )
        return cls(per_kind, (), first.prop, first.confidence, first.method)


def _table(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def _read(cls: Any, d: dict[str, Any]) -> Any:
    """A dataclass from its table, the fields it names (a missing one keeps its default)."""
    return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


@dataclass
class _Fault:
    kind: str
    fault_id: Any
    start: int
    end: int | None
    targets: list[Any]
    start_value: dict[str, Any]
    end_value: dict[str, Any]


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
    for fault in _faults(ops, last):
        tally = counts.setdefault(fault.kind, [0, 0, 0])  # faults, opportunities, violated
        tally[0] += 1
        opp = _opportunity(fault, beliefs, paths, timeouts, session_timeout_s)
        if opp is None:
            continue
        state = (power_rule(fault.kind) or UNKNOWN_RULE).state
        on_clients = any(_client(t) is not None for t in fault.targets)
        hit = any(
            counts_against(v, opp, state=state, on_clients=on_clients, locks=locks)
            for v in (lost_state if state else found)
        )
        opp = replace(opp, violated=hit)
        landed.append(opp)
        tally[1] += 1
        tally[2] += hit
    per_kind = tuple(
        FaultPower(kind, n, k, upper_bound(k, n, confidence, method), faults)
        for kind, (faults, n, k) in sorted(counts.items())
    )
    return Power(per_kind, tuple(landed), prop, confidence, method)


def _faults(ops: list[Op], last: int) -> list[_Fault]:
    """Every executed fault from the nemesis ops, start paired with end by fault id (a re-armed
    trigger's attempts share an id and follow each other); one never ended ends at `last`."""
    open_: dict[Any, _Fault] = {}
    out: list[_Fault] = []
    for op in ops:
        if op.process != NEMESIS or op.type == "invoke" or power_rule(op.f) is None:
            continue
        v = op.value if isinstance(op.value, dict) else {}
        if v.get("phase") == "start":
            f = _Fault(op.f, v.get("fault_id"), op.time, None, list(v.get("targets") or ()), v, {})
            open_[f.fault_id] = f
            out.append(f)
        elif v.get("phase") == "end" and v.get("fault_id") in open_:
            f = open_.pop(v.get("fault_id"))
            f.end, f.end_value = op.time, v
    for f in out:
        if f.end is None:
            f.end = max(last, f.start)
    return out


def _sessions_and_paths(
    ops: list[Op], acq: frozenset[str], rel: frozenset[str], last: int
) -> tuple[dict[Any, list[tuple[int, float]]], dict[Any, list[tuple[int, int]]]]:
    """client -> [(time, negotiated timeout s)] from its `session` events; client -> the spans
    it was in the lock path: from an acquire invoke to its release invoke (when it stopped
    believing), a failed acquire's completion, its SIGKILL or its program's death."""
    timeouts: dict[Any, list[tuple[int, float]]] = {}
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
                for c in map(_client, v.get("targets") or ()):
                    leave(c, op.time)
            continue
        c = op.actor
        if op.type == "event":
            if op.f == "session" and isinstance(v, dict) and v.get("timeout_ms"):
                timeouts.setdefault(c, []).append((op.time, v["timeout_ms"] / 1000))
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


def _client(target: Any) -> Any:
    if isinstance(target, str) and target[:1] == "c" and target[1:].isdigit():
        return int(target[1:])
    return None


def _timeout(fault: _Fault, client: Any, timeouts: dict, default: float) -> float:
    """The session (lease) timeout the fault had to exceed for `client`: the fault's own record
    of it (client faults), else the client's latest negotiated one before the fault, else the
    run's."""
    for v in (fault.end_value, fault.start_value):
        d = v["detail"] if isinstance(v.get("detail"), dict) else {}
        if d.get("session_timeout_s") and [client] == [_client(t) for t in fault.targets]:
            return float(d["session_timeout_s"])
    seen = [s for t, s in timeouts.get(client, ()) if t <= fault.start]
    return seen[-1] if seen else default


def _vetoed(fault: _Fault) -> bool:
    """The nemesis saw it miss: it never went in, or it landed outside the state it aimed at."""
    if fault.start_value.get("error") or fault.end_value.get("landed") is False:
        return True
    d = fault.end_value.get("detail")
    return isinstance(d, dict) and d.get("holding_when_hit") is False


def _opportunity(
    fault: _Fault,
    beliefs: dict[Any, list[tuple[int, float]]],
    paths: dict[Any, list[tuple[int, int]]],
    timeouts: dict[Any, list[tuple[int, float]]],
    default_timeout_s: float,
) -> Opportunity | None:
    if _vetoed(fault):
        return None
    s, e = fault.start, fault.end if fault.end is not None else fault.start
    targeted = [c for c in (_client(t) for t in fault.targets) if c is not None]
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
        at_risk = [c for c in map(_client, d["holders_at_kill"]) if c is not None]
        limits = [_timeout(fault, c, timeouts, default_timeout_s) for c in at_risk]
    if not at_risk:
        return None
    return Opportunity(fault.kind, fault.fault_id, s, e, tuple(at_risk), max(limits))


__all__ = ["FaultPower", "Opportunity", "Power", "power_of", "rule_of", "upper_bound"]
