"""Where a lock breaks along one magnitude of a fault: the boundary a sweep's points show, and
what they cannot show.

A point is a magnitude and, of the runs there that were judged (valid or invalid; an unknown
run says nothing either way), how many showed the violation. Its Wilson 95 % interval
(report/stats.py) decides what it says:

- **broken**: the interval's lower end is above 0, which is the case exactly when at least one
  run showed the violation: one violation proves the lock can break at that magnitude;
- **safe**: the interval's upper end is below the target rate: with 95 % confidence, fewer
  than that share of runs break there (never "it cannot break": no number of clean runs says
  that);
- **undecided**: neither (no run judged, or too few clean runs for the target rate).

The boundary lies above the last safe point below the first broken one, and at or below the
first broken one. The estimate assumes the violation rate grows with the magnitude; a safe or
undecided point above the first broken one is reported as non-monotone, never smoothed away.

A falling axis is read the other way: the break grows as the magnitude falls (a slow clock: a
rate below 1, whose lag grows as the rate drops). Its boundary lies below the last safe point
above the first broken one, and at or above the first broken one: the same estimate on the
mirrored axis, with its words mirrored, so both directions share one rule.
Pure: no I/O, nothing of zkjepsen but the interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from zkjepsen.report.stats import wilson


@dataclass(frozen=True)
class Point:
    magnitude: float
    violated: int  # judged runs that showed the violation
    judged: int  # runs judged valid or invalid

    def interval(self) -> tuple[float, float]:
        return wilson(self.violated, self.judged)

    def broken(self) -> bool:
        return self.interval()[0] > 0

    def safe(self, target: float) -> bool:
        return self.judged > 0 and self.interval()[1] < target


@dataclass(frozen=True)
class Words:
    """How the estimate's sentences name the directions of its axis."""

    above: str  # further from the fault's break: "above" (rising), "below" (falling)
    below: str
    smallest: str  # the least fault swept
    lower: str  # toward less fault
    higher: str
    up_to: str


RISING = Words("above", "below", "smallest", "lower", "higher", "up to")
FALLING = Words("below", "above", "largest", "higher", "lower", "down to")


@dataclass(frozen=True)
class Boundary:
    """What the points conclude. `above` < boundary <= `at_most` (either None when the points
    do not bound that side); on a falling axis `at_most` <= boundary < `above`: `above` is
    always the safe side, `at_most` the broken one. `said`: each conclusion and each limit,
    one sentence each."""

    above: float | None  # the last safe magnitude before the first broken one
    at_most: float | None  # the first broken magnitude
    non_monotone: tuple[float, ...]  # safe or undecided magnitudes past the first broken one
    said: tuple[str, ...]
    falling: bool = False  # the break grows as the magnitude falls

    @property
    def width(self) -> float | None:
        if self.above is None or self.at_most is None:
            return None
        return abs(self.at_most - self.above)

    def to_json(self) -> dict:
        return {
            "above": self.above,
            "at_most": self.at_most,
            "width": self.width,
            "non_monotone": list(self.non_monotone),
            "said": list(self.said),
            "falling": self.falling,
        }


def estimate(points: list[Point], target: float, unit: str = "", falling: bool = False) -> Boundary:
    """The boundary the points show (any order; one point per magnitude) at target rate
    `target` (0 < target <= 1); `falling`: the break grows as the magnitude falls."""
    if not 0 < target <= 1:
        raise ValueError(f"target rate {target!r} is not in (0, 1]")
    if len({p.magnitude for p in points}) != len(points):
        raise ValueError("one point per magnitude")
    if not points:
        return Boundary(None, None, (), ("no point was run: nothing can be concluded",), falling)
    sign = -1.0 if falling else 1.0
    # A falling axis is the rising one mirrored: estimated on -magnitude, named and returned
    # on the magnitude itself.
    mirrored = [Point(sign * p.magnitude + 0.0, p.violated, p.judged) for p in points]

    def m(x: float) -> str:
        return f"{sign * x + 0.0:g}{unit}"

    b = _rising(
        sorted(mirrored, key=lambda p: p.magnitude), target, m, FALLING if falling else RISING
    )

    def back(x: float | None) -> float | None:
        return None if x is None else sign * x + 0.0

    return Boundary(
        back(b.above),
        back(b.at_most),
        tuple(sign * x + 0.0 for x in b.non_monotone),
        b.said,
        falling,
    )


def _rising(pts: list[Point], target: float, m, w: Words) -> Boundary:
    """The estimate on an axis along which the break grows (`pts` sorted by magnitude), its
    sentences in the words `w` and magnitudes named by `m`."""
    broken = [p for p in pts if p.broken()]
    if not broken:
        return _never_broken(pts, target, m, w)
    first = broken[0]
    below = [p for p in pts if p.magnitude < first.magnitude]
    safe_below = [p for p in below if p.safe(target)]
    last_safe = safe_below[-1] if safe_below else None
    above_first = [p for p in pts if p.magnitude > first.magnitude]
    odd = tuple(p.magnitude for p in above_first if not p.broken())
    said = [f"broken at {m(first.magnitude)} ({first.violated}/{first.judged} runs)"]
    if last_safe is not None:
        said.append(
            f"the boundary lies {w.above} {m(last_safe.magnitude)} (rate < {target:.0%} there, "
            f"95 %) and at or {w.below} {m(first.magnitude)}"
        )
        gap = [p.magnitude for p in below if p.magnitude > last_safe.magnitude]
        if gap:
            said.append(
                "undecided between them (no violation, too few judged runs for the target "
                f"rate): {', '.join(m(x) for x in gap)}"
            )
    elif below:
        said.append(
            f"no point {w.below} {m(first.magnitude)} is safe at the target rate {target:.0%}: "
            f"the boundary lies at or {w.below} {m(first.magnitude)}, how far {w.below} is not "
            "known"
        )
    else:
        said.append(
            f"broken at the {w.smallest} magnitude swept: the boundary lies at or {w.below} "
            f"{m(first.magnitude)}; sweep {w.lower} to find it"
        )
    if odd:
        said.append(
            "non-monotone: no violation at "
            + ", ".join(m(x) for x in odd)
            + f", {w.above} the first broken {m(first.magnitude)} (chance with few runs, or a "
            "fault whose effect does not grow with its size)"
        )
    return Boundary(last_safe.magnitude if last_safe else None, first.magnitude, odd, tuple(said))


def _never_broken(pts: list[Point], target: float, m, w: Words) -> Boundary:
    safe = [p for p in pts if p.safe(target)]
    top = pts[-1]
    said = [f"no violation at any magnitude {w.up_to} {m(top.magnitude)}"]
    if safe:
        said.append(
            f"safe (rate < {target:.0%}, 95 %) {w.up_to} {m(safe[-1].magnitude)}; the boundary, "
            f"if there is one, lies {w.above} it: sweep {w.higher}, or more runs bound the rate "
            "lower"
        )
    else:
        said.append(f"too few judged runs to call any point safe at the target rate {target:.0%}")
    return Boundary(safe[-1].magnitude if safe else None, None, (), tuple(said))


def next_probe(boundary: Boundary, width: float, grain: float) -> tuple[float | None, str]:
    """(the magnitude to run next, why) for `--until-boundary WIDTH`: the midpoint between the
    last safe and the first broken point, on the axis's `grain` (offsets are whole seconds),
    while the interval is `width` or wider; None and why it stops otherwise."""
    if boundary.at_most is None:
        return None, "no point is broken: there is no boundary to narrow"
    if boundary.above is None:
        return None, "no safe point lies below the first broken one: nothing to bisect"
    gap = abs(boundary.at_most - boundary.above)
    if gap < width:
        return None, f"the boundary's interval ({gap:g}) is narrower than {width:g}"
    mid = snap((boundary.above + boundary.at_most) / 2, grain)
    lo, hi = sorted((boundary.above, boundary.at_most))
    if not lo < mid < hi:
        return None, f"no magnitude on the axis's grain ({grain:g}) lies between them"
    return mid, f"bisecting {interval_text(boundary)}"


def interval_text(boundary: Boundary, unit: str = "") -> str:
    """`(2, 4]` (rising) or `[0.5, 0.75)` (falling): the safe end open, the broken end closed;
    only when both ends are known."""
    assert boundary.above is not None and boundary.at_most is not None
    a, b = f"{boundary.above:g}{unit}", f"{boundary.at_most:g}{unit}"
    return f"[{b}, {a})" if boundary.falling else f"({a}, {b}]"


def snap(value: float, grain: float) -> float:
    """`value` to the nearest multiple of `grain`, without float dust (0.30000000000000004)."""
    if grain <= 0:
        return value
    places = max(0, -math.floor(math.log10(grain)) + 3)
    return round(round(value / grain) * grain, places)
