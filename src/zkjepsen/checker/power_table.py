"""The power table of a verdict (checker/power.py computes it from a history): per fault kind,
its executed faults, those that missed (with why), its opportunities and violated ones, and the
bound; how it reads in the verdict's power line, its JSON in results.json, and several runs'
tables pooled (a matrix cell). docs/verdicts.md says how to read it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

from zkjepsen.checker.bounds import upper_bound
from zkjepsen.faultkinds import UNKNOWN_RULE, power_rule

# What broke, by the property judged: (one, many, the rate's word).
PROPERTIES = {
    "belief": ("split holder", "split holders", "split rate"),
    "effect": ("effect overlap", "effect overlaps", "overlap rate"),
    "any": ("violation", "violations", "violation rate"),
}


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
    missed: int = 0  # of them, those not seen to land at their target (faultkinds.landing)
    missed_why: tuple[tuple[str, int], ...] = ()  # (why, how many), the commonest first

    def whys(self) -> str:
        """Why they missed: "never seen frozen", or "2 never seen frozen, 1 never went in: ..."."""
        if len(self.missed_why) == 1:
            return self.missed_why[0][0]
        shown = ", ".join(f"{n} {why}" for why, n in self.missed_why[:3])
        return shown + (", ..." if len(self.missed_why) > 3 else "")

    def fragment(self, prop: str, confidence: float) -> str:
        rule = power_rule(self.kind) or UNKNOWN_RULE
        one, many, rate = PROPERTIES.get("any" if rule.state else prop, PROPERTIES["any"])
        k_one, k_many, unit = rule.nouns(self.kind)
        missed = f" ({self.missed} missed: {self.whys()})" if self.missed else ""
        if not self.opportunities:
            some = k_one if self.faults == 1 else k_many
            return f"none of {self.faults} {some} landed where it could break{missed}"
        return (
            f"{self.violated} {one if self.violated == 1 else many} in {self.opportunities} landed "
            f"{k_one if self.opportunities == 1 else k_many}{missed}: per-{unit} {rate} "
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

    def missed(self) -> int:
        return sum(k.missed for k in self.per_kind)

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
        """Why a run without an opportunity is unknown: the faults that landed but hit nobody
        at risk, and those that missed, with why."""
        hit = [f"{k.faults - k.missed} {k.kind}" for k in self.per_kind if k.faults > k.missed]
        parts = [", ".join(hit) + ": none hit a client waiting for or holding it, for long enough"]
        parts = (parts if hit else []) + [
            f"{k.missed} {k.kind} missed: {k.whys()}" for k in self.per_kind if k.missed
        ]
        return "no fault landed where it could break the lock" + (
            f" ({'; '.join(parts)}; docs/verdicts.md)" if parts else " (no fault ran)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line(),
            "property": self.prop,
            "confidence": self.confidence,
            "method": self.method,
            "opportunities": self.opportunities(),
            "violated": self.violated(),
            "missed": self.missed(),
            "upper": self.upper(),
            "per_kind": [_table(k) for k in self.per_kind],
            "landed": [o.to_json() for o in self.landed],
        }

    @classmethod
    def from_json(cls, d: Any) -> Power | None:
        """A results.json power table back (None if it is not one)."""
        if not isinstance(d, dict) or not isinstance(d.get("per_kind"), list):
            return None
        kinds = tuple(
            _read(FaultPower, {**k, "missed_why": _whys(k.get("missed_why"))})
            for k in d["per_kind"]
            if isinstance(k, dict)
        )
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
        violated opportunities add up (and their misses, by why), and the bound is taken again
        over the sums (a matrix cell: 3 runs of 9 landed pauses each bound the rate as 27 would)."""
        powers = list(powers)
        sums: dict[str, tuple[int, int, int]] = {}
        whys: dict[str, dict[str, int]] = {}
        for k in (k for p in powers for k in p.per_kind):
            f, n, v = sums.get(k.kind, (0, 0, 0))
            sums[k.kind] = (f + k.faults, n + k.opportunities, v + k.violated)
            mine = whys.setdefault(k.kind, {})
            for why, count in k.missed_why:
                mine[why] = mine.get(why, 0) + count
        first = powers[0] if powers else cls(())
        per_kind = tuple(
            FaultPower(
                kind,
                n,
                v,
                upper_bound(v, n, first.confidence, first.method),
                f,
                sum(whys[kind].values()),
                ranked(whys[kind]),
            )  # fmt: skip
            for kind, (f, n, v) in sorted(sums.items())
        )
        return cls(per_kind, (), first.prop, first.confidence, first.method)


def _table(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def _read(cls: Any, d: dict[str, Any]) -> Any:
    """A dataclass from its table, the fields it names (a missing one keeps its default)."""
    return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


def _whys(table: Any) -> tuple[tuple[str, int], ...]:
    """`missed_why` back from its JSON (a list of [why, count])."""
    pairs = table if isinstance(table, list) else []
    return tuple((str(p[0]), int(p[1])) for p in pairs if isinstance(p, list) and len(p) == 2)


def ranked(whys: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(whys.items(), key=lambda w: (-w[1], w[0])))
