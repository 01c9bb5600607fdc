"""`zkjepsen sweep`: one fault, one of its magnitudes swept over a range, runs at each point.

`--over NAME=START:STOP:STEP` names a parameter the fault reads (its declaration's `params`:
offset_s, rate) or its `duration`, and the points; `x` after every number (`0.5x:3x:0.25x`)
makes them multiples of the lock's own timing (`lock_timing`: the session timeout, or a Redis
or etcd3 lock's `lock_ttl_s`), so curves of different locks share an axis. Everything is
refused here, in one sentence, before anything is created.

Each point's runs are ordinary runs: the standard schedule of the fault (its seed, interval and
trigger, as `test` would run it), every fault of it carrying the point's magnitude, recorded in
test.json's `generator` (nemesis/recorded.py), so a point's run replays and shrinks as any
other. Run k of every point has seed + k - 1: the points differ in the magnitude alone (the
same gaps, the same triggers), which keeps the noise between neighbouring points down.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zkjepsen.backends.registry import backend_info, service
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import KINDS
from zkjepsen.recipes import resolve_backend
from zkjepsen.report.sweep import TWO_SIDED, falling
from zkjepsen.run.resolve import default_fault_trigger, fault_generator
from zkjepsen.run.spec import TestSpec
from zkjepsen.workloads.params import KNOWN, RECIPE_PARAMS, validate_params

if TYPE_CHECKING:
    import random

    from zkjepsen.nemesis.generator import Env, Gen, Item

MAX_POINTS = 40  # a sweep of more points is a typo in its step, or hours of runs
DURATION = "duration"  # every fault has a length; it is not one of its declared params
GRAIN = 0.001  # the finest step a bisection takes on an axis without a unit of its own
FORM = "--over NAME=START:STOP:STEP, e.g. offset_s=0:12:2 or duration=0.5x:3x:0.25x"


def sweepable(fault: str) -> tuple[str, ...]:
    """What `--over` may name for `fault`: its declared magnitudes that are typed `--param`s,
    and its duration."""
    kind = KINDS[fault]
    return (*(p for p in kind.params if p in KNOWN), DURATION)


# The services whose locks live as long as a connection (no lease, no session timeout).
CONNECTION_LOCKS = ("postgres", "mariadb")


def lock_timing(spec: TestSpec) -> tuple[float | None, str]:
    """(the lock's own timing in seconds, what it is) of a run, or (None, why it has none):
    what `x` multiplies. The lease of a Redis or etcd3 lock is its `lock_ttl_s` (default: the
    session timeout, as the recipe reads it); a ZooKeeper session's and an etcd session's
    lease is the session timeout."""
    recipe = spec.recipe
    if ":" in recipe or recipe == "exec":
        return (
            None,
            f"recipe {recipe} is a program of your own, whose timing zkjepsen does not know",
        )
    family = backend_info(resolve_backend(recipe, spec.backend)).family
    if family in CONNECTION_LOCKS:
        return None, (
            f"recipe {recipe}'s {service(family).label} lock has no timing of its own (it lives "
            "as long as its connection)"
        )
    if "lock_ttl_s" in RECIPE_PARAMS.get(recipe, ()):
        ttl = spec.params.get("lock_ttl_s")
        if ttl is not None:
            return float(ttl), "its lock_ttl_s"
        return spec.session_timeout_s, "its lock TTL (the session timeout)"
    return spec.session_timeout_s, "its session timeout"


@dataclass(frozen=True)
class Axis:
    """The swept magnitude: which, in what unit, and at which points."""

    fault: str
    param: str  # one of `sweepable(fault)`
    relative: bool  # the points are multiples of `timing_s`
    timing_s: float | None  # the lock's timing (relative axes only)
    grid: tuple[float, ...]  # the points given by the range, in the axis's unit
    grain: float  # the finest step between two points (offsets: whole seconds)

    @property
    def unit(self) -> str:
        if self.relative:
            return "x"
        return " s" if self.param == DURATION or self.param.endswith("_s") else ""

    @property
    def falling(self) -> bool:
        """The break grows as the magnitude falls (a slow clock)."""
        return falling(self.to_json())

    def label(self, magnitude: float) -> str:
        """`4`, `0.75x`: a point's name in tables, tags and folders."""
        return f"{magnitude:g}{'x' if self.relative else ''}"

    def value(self, magnitude: float) -> float | int:
        """What the fault is given at this point (seconds for a relative axis)."""
        v = magnitude * self.timing_s if self.relative and self.timing_s else magnitude
        if self.param == "offset_s":
            return int(round(v))
        return round(v, 6)

    def to_json(self) -> dict[str, Any]:
        return {
            "fault": self.fault,
            "param": self.param,
            "relative": self.relative,
            "timing_s": self.timing_s,
            "grid": list(self.grid),
            "grain": self.grain,
        }


def parse_over(text: str, fault: str, spec: TestSpec) -> Axis:
    """The axis `--over` names for `fault` on the settled `spec`, or one sentence why not."""
    name, sep, rng = (s.strip() for s in text.partition("="))
    if not sep or not name or not rng:
        raise BadInput(f"--over {text!r} is not NAME=START:STOP:STEP; give {FORM}")
    takes = sweepable(fault)
    if name not in takes:
        raise BadInput(f"--over {name}: {fault} does not take {name}; it takes {', '.join(takes)}")
    parts = [p.strip() for p in rng.split(":")]
    if len(parts) != 3 or not all(parts):
        raise BadInput(f"--over {text!r}: the range is not START:STOP:STEP; give {FORM}")
    relative = [p.lower().endswith("x") for p in parts]
    if any(relative) and not all(relative):
        raise BadInput(
            f"--over {text!r} mixes multiples (x) and plain numbers; give x after all three "
            "or after none"
        )
    start, stop, step = (_number(p[:-1] if all(relative) else p, text) for p in parts)
    _check_range(text, start, stop, step)
    grid = _grid(start, stop, step)
    if len(grid) > MAX_POINTS:
        raise BadInput(
            f"--over {text!r} makes {len(grid)} points; a sweep takes at most {MAX_POINTS} "
            "(a larger STEP, or --until-boundary to refine where it breaks)"
        )
    _check_one_side(text, name, grid)
    timing = None
    if all(relative):
        timing = _relative_timing(text, name, spec)
    axis = Axis(fault, name, all(relative), timing, tuple(grid), _grain(name, timing))
    for m in grid:
        check_point(axis, m, f"--over {text!r}")
    return axis


def _number(p: str, text: str) -> float:
    try:
        v = float(p)
    except ValueError:
        v = math.nan
    if not math.isfinite(v):
        raise BadInput(f"--over {text!r}: {p!r} is not a number; give {FORM}")
    return v


def _check_range(text: str, start: float, stop: float, step: float) -> None:
    if step == 0:
        raise BadInput(f"--over {text!r} has a step of 0; give a STEP above 0")
    if step < 0 or start > stop:
        raise BadInput(f"--over {text!r} runs backwards; give START below STOP and a STEP above 0")
    if start == stop:
        raise BadInput(
            f"--over {text!r} is an empty range (one point is not a sweep); give STOP above START"
        )


def _check_one_side(text: str, name: str, grid: list[float]) -> None:
    """A magnitude whose fault grows both ways from its no-fault value (a rate: slower or
    faster than 1) is swept on one side of it: the boundary is read in one direction."""
    at = TWO_SIDED.get(name)
    if at is not None and min(grid) < at < max(grid):
        raise BadInput(
            f"--over {text!r} runs from a slow clock to a fast one, and a sweep reads the break "
            f"growing one way; give a range at or below {at:g} (slow) or at or above it (fast)"
        )


def _grid(start: float, stop: float, step: float) -> list[float]:
    """START, START + STEP, ... up to STOP (included when the steps reach it)."""
    count = math.floor((stop - start) / step + 1e-9) + 1
    if count > 10 * MAX_POINTS:  # (never built: the caller refuses it by its count)
        return [start + i * step for i in range(10 * MAX_POINTS + 1)]
    return [round(start + i * step, 9) for i in range(count)]


def _relative_timing(text: str, name: str, spec: TestSpec) -> float:
    if name != DURATION and not name.endswith("_s"):
        raise BadInput(
            f"--over {text!r}: {name} is not a length of time, so it has no multiple of the "
            "lock's timing; give plain numbers"
        )
    timing, what = lock_timing(spec)
    if timing is None:
        raise BadInput(f"--over {text!r}: x multiplies the lock's timing, and {what}; give "
                       "seconds instead")  # fmt: skip
    return timing


def _grain(name: str, timing: float | None) -> float:
    """Offsets step whole seconds (readers.check_offset): on a relative axis, 1 s in x."""
    if name == "offset_s":
        return 1.0 / timing if timing else 1.0
    return GRAIN


def check_point(axis: Axis, magnitude: float, what: str) -> None:
    """The fault can be given this point's value, or one sentence why not."""
    value = axis.value(magnitude)
    if axis.param == "offset_s" and not math.isclose(
        magnitude * (axis.timing_s or 1.0), value, abs_tol=1e-6
    ):
        raise BadInput(
            f"{what}: {axis.label(magnitude)} is {magnitude * (axis.timing_s or 1):g} s, and "
            "clock faults step whole seconds; give points that are whole seconds"
        )
    if axis.param == DURATION:
        if value < 0:
            raise BadInput(f"{what}: a fault cannot last {value:g} s; give durations >= 0")
        return
    try:
        validate_params({axis.param: value}, user_recipe=False)
    except BadInput as e:
        raise BadInput(f"{what}: {e}") from None


# ---- the points' runs -----------------------------------------------------------------------
def at_magnitude(gen: Gen, axis: Axis, magnitude: float) -> Gen:
    """`gen` with every fault of the swept kind carrying the point's magnitude."""
    value = axis.value(magnitude)

    def out(rng: random.Random, env: Env) -> Iterator[Item]:
        # here, not at the top: the nemesis loads every fault's module; only a run needs it
        from zkjepsen.nemesis.generator import Fault

        for item in gen(rng, env):
            if isinstance(item, Fault) and item.f == axis.fault:
                if axis.param == DURATION:
                    item = dataclasses.replace(item, duration=float(value))
                else:
                    item = dataclasses.replace(item, params={**item.params, axis.param: value})
            yield item

    return out


def point_name(spec: TestSpec, axis: Axis, magnitude: float) -> str:
    """The runs' test name (their folders): `sweep-redis-setnx-clock-skew-client-offset_s-4`."""
    raw = f"sweep-{spec.recipe}-{axis.fault}-{axis.param}-{axis.label(magnitude)}"
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", raw)[:128]


def point_spec(base: TestSpec, axis: Axis, magnitude: float, seed: int) -> TestSpec:
    """Run `seed` of the point at `magnitude`: `base` (settled), its schedule recorded with
    the point's magnitude in every fault."""
    # here, not at the top: the nemesis loads every fault's module; only a run needs it
    from zkjepsen.nemesis import generator, recorded

    spec = dataclasses.replace(
        base, seed=seed, name=point_name(base, axis, magnitude), params=dict(base.params)
    )
    if spec.fault_trigger is None:
        spec.fault_trigger = default_fault_trigger(spec)
    gen = fault_generator(spec, [axis.fault])
    if gen is None:
        raise BadInput(f"{axis.fault} injects nothing; a sweep needs a fault")
    env = generator.Env(spec.session_timeout_s, spec.fault_duration_s)
    spec.generator = recorded.record(at_magnitude(gen, axis, magnitude), seed, env)
    return spec
