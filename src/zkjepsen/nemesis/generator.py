"""Seeded fault schedules built from Jepsen-style combinators; pure (no Docker, no clock).

A generator is a function `(rng, env) -> iterator of items`; an item is `Sleep(s)`, a fault op
(`Fault(f, target=..., duration=..., params=...)`: the `executed.FaultOp` the nemesis runs and
records, not yet planned) or `Heal()`, as a Jepsen generator emits the very ops the nemesis
completes. Combinators (`mix`, `stagger`, `delay`, `time_limit`,
`phases`, `once`, `final_heal`, `fault_target`, `max_faults`, `on`, `steps`) wrap generators.
A fault may carry a `Trigger` (`on(on_acquire(delay_s=0.1), fault("pause-client"))`): the
nemesis arms it when it reaches the fault and starts the fault when the event happens.
`plan(gen, seed, env)` walks one to a list of planned faults with their start offsets (seconds
after the nemesis starts), all from ONE seed: the same seed, names and settings give the same
list, byte for byte.

Durations: a number of seconds, or "1.5x" = 1.5 x the session timeout. Planning uses the
requested timeout; at run time a client fault re-reads its target's negotiated timeout.
Targets are resolved at run time (the leader moves), from a RNG seeded by (seed, fault id),
and written, resolved, to schedule.json, which replays as-is.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from zkjepsen.faultkinds import aimed_by_trigger
from zkjepsen.nemesis.executed import FaultOp, Planned, PlannedHeal
from zkjepsen.nemesis.faults import FAULTS
from zkjepsen.nemesis.triggers import Trigger


@dataclass(frozen=True)
class Sleep:
    seconds: float
    lane: int = 0  # the timeline it belongs to (`lanes`); lane 0 unless told


# A fault item is the fault op itself, before `plan` gives it an id and a time: its target
# (None: the kind's default), duration (None: the kind's default, else env.fault_duration_s),
# params, trigger (a Trigger's table: start on its event, not at a time) and lane (its
# timeline: the nemesis runs each lane's faults one after another, and the lanes side by side).
Fault = FaultOp


@dataclass(frozen=True)
class Heal:
    pass


Item = Sleep | Fault | Heal


@dataclass(frozen=True)
class Env:
    session_timeout_s: float = 4.0
    fault_duration_s: float = 8.0
    # the run's --param values a fault reads (FAULT_PARAMS); an item's own params win
    fault_params: dict[str, Any] = field(default_factory=dict)

    def duration_spec(self, item: Fault) -> float | str:
        if item.duration is not None:
            return item.duration

        kind = FAULTS.get(item.f)
        return kind.duration if kind is not None and kind.duration else self.fault_duration_s

    def seconds(self, spec: float | str, session_timeout_s: float | None = None) -> float:
        return resolve_duration(spec, session_timeout_s or self.session_timeout_s)


Gen = Callable[[random.Random, Env], Iterator[Item]]
FAULT_PARAMS = ("offset_s", "rate")  # the clock faults' magnitudes (workloads/params.py)


def resolve_duration(spec: float | str, session_timeout_s: float) -> float:
    """`8` or `"8"` -> 8.0 s; `"1.5x"` -> 1.5 x session_timeout_s."""
    if isinstance(spec, str) and spec.strip().endswith("x"):
        return float(spec.strip()[:-1]) * session_timeout_s
    value = float(spec)
    if value < 0:
        raise ValueError(f"negative fault duration {spec!r}")
    return value


# ---- combinators --------------------------------------------------------------------------------
def fault(
    f: str, target: str | None = None, duration: float | str | None = None, **params: Any
) -> Gen:
    """An endless stream of one fault (bound it with time_limit)."""
    item = Fault(f, target=target, duration=duration, params=params)

    def gen(rng: random.Random, env: Env) -> Iterator[Item]:
        while True:
            yield item

    return gen


def once(item: Item) -> Gen:
    def gen(rng: random.Random, env: Env) -> Iterator[Item]:
        yield item

    return gen


def sleep(seconds: float) -> Gen:
    return once(Sleep(seconds))


def final_heal() -> Gen:
    return once(Heal())


def mix(*gens: Gen) -> Gen:
    """Each item comes from a generator picked uniformly at random; exhausted ones drop out."""

    def gen(rng: random.Random, env: Env) -> Iterator[Item]:
        live = [g(rng, env) for g in gens]
        while live:
            i = rng.randrange(len(live))
            try:
                yield next(live[i])
            except StopIteration:
                live.pop(i)

    return gen


def stagger(interval_s: float, g: Gen) -> Gen:
    """Before every item, a random quiet time uniform in [0, 2 x interval) (mean: interval)."""

    def gen(rng: random.Random, env: Env) -> Iterator[Item]:
        for item in g(rng, env):
            yield Sleep(rng.uniform(0, 2 * interval_s))
            yield item

    return gen


def delay(interval_s: float, g: Gen) -> Gen:
    """Before every item, exactly interval_s of quiet."""

    def gen(rng: random.Random, env: Env) -> Iterator[Item]:
        for item in g(rng, env):
            yield Sleep(interval_s)
            yield item

    return gen


def time_limit(limit_s: float, g: Gen) -> Gen:
    """Items while the planned time (sleeps + fault durations) is under limit_s; a sleep that
    crosses the limit is cut to it. A fault that starts in time runs its full length."""

    def gen(rng: random.Random, env: Env) -> Iterator[Item]:
        elapsed = 0.0
        for item in g(rng, env):
            if elapsed >= limit_s:
                return
            if isinstance(item, Sleep):
                s = min(item.seconds, limit_s - elapsed)
                elapsed += s
                yield Sleep(s)
            elif isinstance(item, Fault):
                elapsed += env.seconds(env.duration_spec(item))
                yield item
            else:
                yield item

    return gen


def phases(*gens: Gen) -> Gen:
    """One generator after another."""

    def gen(rng: random.Random, env: Env) -> Iterator[Item]:
        for g in gens:
            yield from g(rng, env)

    return gen


def fault_target(target: str, g: Gen) -> Gen:
    """Every fault of g aimed at `target` (e.g. "random", "client:2") instead of its default."""

    def gen(rng: random.Random, env: Env) -> Iterator[Item]:
        for item in g(rng, env):
            yield dataclasses.replace(item, target=target) if isinstance(item, Fault) else item

    return gen


def max_faults(n: int, g: Gen) -> Gen:
    """g, cut just before its (n+1)-th fault: a fault budget. The plan then ends without a
    final heal item; the nemesis heals at its end regardless."""

    def gen(rng: random.Random, env: Env) -> Iterator[Item]:
        count = 0
        for item in g(rng, env):
            if isinstance(item, Fault):
                if count >= n:
                    return
                count += 1
            yield item

    return gen


def on(trigger: Trigger, g: Gen) -> Gen:
    """Every fault of g fires on `trigger` (a nemesis.triggers.Trigger) instead of at its
    time; a fault without an explicit target whose kind aims at a client is aimed at whatever
    the event names (target `trigger`: the client that acquired, the new leader); a server
    fault keeps its own default target and takes only the event's moment."""

    def gen(rng: random.Random, env: Env) -> Iterator[Item]:
        for item in g(rng, env):
            if isinstance(item, Fault):
                target = item.target or ("trigger" if aimed_by_trigger(item.f) else None)
                item = dataclasses.replace(item, trigger=trigger.to_json(), target=target)
            yield item

    return gen


def lanes(*gens: Gen) -> Gen:
    """Each generator on a timeline of its own, run side by side by the nemesis: lane i's
    faults follow each other, but may overlap lane j's (a trigger per client: each client is
    faulted on its own acquires, whatever the others' faults). Items are taken in turn, one
    from each lane still going, so fault ids are numbered the same on every run."""

    def gen(rng: random.Random, env: Env) -> Iterator[Item]:
        live = [(i, g(rng, env)) for i, g in enumerate(gens)]
        while live:
            for entry in list(live):
                i, it = entry
                try:
                    item = next(it)
                except StopIteration:
                    live.remove(entry)
                    continue
                yield dataclasses.replace(item, lane=i) if not isinstance(item, Heal) else item

    return gen


def steps(*gens: Gen) -> Gen:
    """The first item of each generator, in order: a readable fixed schedule, e.g.
    `steps(sleep(4), on(on_acquire(delay_s=0.1), fault("pause-client", duration=4.5)))`."""

    def gen(rng: random.Random, env: Env) -> Iterator[Item]:
        for g in gens:
            yield from itertools.islice(g(rng, env), 1)

    return gen


def item_text(item: Item) -> str:
    """An item as the generator call that makes it (for emitted tests and `scenario list`)."""
    if isinstance(item, Sleep):
        return f"sleep({item.seconds:g})"
    if isinstance(item, Heal):
        return "final_heal()"
    args = [repr(item.f)]
    target = None if item.trigger is not None and item.target == "trigger" else item.target
    if target is not None:
        args.append(f"target={target!r}")
    if item.duration is not None:
        d = item.duration
        args.append(f"duration={round(d, 3) if isinstance(d, float) else d!r}")
    args += [f"{k}={v!r}" for k, v in sorted(item.params.items())]
    text = f"fault({', '.join(args)})"
    if item.trigger is None:
        return text
    return f"on({Trigger.from_json(dict(item.trigger)).describe()}, {text})"


def schedule_text(g: Gen, seed: int = 0, env: Env | None = None, indent: str = "    ") -> str:
    """A finite generator as readable calls (unbounded ones are cut at 100): see items_text."""
    return items_text(list(itertools.islice(g(random.Random(seed), env or Env()), 100)), indent)


def items_text(items: list[Item], indent: str = "    ") -> str:
    """Items as `steps(...)` of readable calls, or, when some are on other lanes than the first,
    `lanes(steps(...), steps(...))`, a `steps` per lane (heals with the first): each lane's
    faults in their order and on their own timeline, as they ran."""
    by: dict[int, list[Item]] = {}
    for i in items:
        by.setdefault(0 if isinstance(i, Heal) else i.lane, []).append(i)
    if set(by) <= {0}:
        return "steps(\n" + "".join(f"{indent}{item_text(i)},\n" for i in items) + ")"
    inner = indent * 2
    lanes_ = [
        f"{indent}steps(\n"
        + "".join(f"{inner}{item_text(i)},\n" for i in by.get(n, []))
        + f"{indent}),\n"
        for n in range(max(by) + 1)
    ]
    return "lanes(\n" + "".join(lanes_) + ")"


# Detail a target spec carries; anything else in a fault's detail (a partition's sides, a clock
# offset) is drawn again from the fault's seeded RNG when its items are planned.
TARGET_DETAIL = {"chosen", "session_timeout_s", "leader"}


def executed_items(faults: list[FaultOp], origin_ns: int = 0) -> list[Item]:
    """An executed (or replay-ready) schedule as generator items: each timed fault after a
    sleep to its recorded start, aimed at its recorded target (or its role, when re-aimed),
    for its recorded length; a triggered fault armed when it was, on its trigger."""

    items: list[Item] = []
    clock: dict[int, float] = {}  # lane -> where its timeline is (faults of `lanes` overlap)
    for f in sorted(faults, key=lambda f: f.armed_ns or f.start_ns or 0):
        t = clock.get(f.lane, 0.0)
        start = (f.armed_ns if f.trigger else None) or f.start_ns or 0
        start_s = max(0.0, (start - origin_ns) / 1e9)
        if start_s > t + 1e-3:
            items.append(Sleep(round(start_s - t, 3), f.lane))
        if f.target == "trigger" or not f.targets:
            target = f.target
        elif all(x.startswith("c") and x[1:].isdigit() for x in f.targets):
            target = ",".join(f"client:{x[1:]}" for x in f.targets)
        else:
            target = ",".join(f.targets)
        hold = round(f.hold_ns / 1e9, 3)
        trigger = dict(f.trigger) if f.trigger else None
        items.append(Fault(f.f, target=target, duration=hold, params=dict(f.params),
                           trigger=trigger, lane=f.lane))  # fmt: skip
        clock[f.lane] = max(start_s, ((f.end_ns or 0) - origin_ns) / 1e9)
    return items


def standard(
    names: list[str],
    *,
    time_limit_s: float,
    interval_s: float,
    lane_triggers: list[Trigger] | None = None,
) -> Gen:
    """The default schedule: random faults from `names`, staggered, for the time limit, then a
    final heal. Each fault lasts its own default (`1.5x` for pause-client) or env's duration.
    `lane_triggers`: one such schedule per trigger (e.g. one client's acquires), fired `on` it,
    each in its own lane (`lanes`), then one final heal."""
    faults = [fault(n) for n in names if n != "none"]
    if not faults:
        return final_heal()
    if lane_triggers is None:
        return phases(time_limit(time_limit_s, stagger(interval_s, mix(*faults))), final_heal())
    each = [
        on(t, time_limit(time_limit_s, stagger(interval_s, mix(*faults)))) for t in lane_triggers
    ]
    return phases(lanes(*each), final_heal())


# ---- planning -----------------------------------------------------------------------------------
def plan(gen: Gen, seed: int, env: Env | None = None, max_items: int = 100_000) -> list[Planned]:
    """Walk a generator into planned faults (`FaultOp`s: fault_id, f, target, duration,
    duration_s, at_s, params, trigger, lane) and heals. `at_s` is the offset from the nemesis'
    start (a triggered fault's: when it is armed at the earliest)."""
    env = env or Env()
    rng = random.Random(seed)
    out: list[Planned] = []
    clock: dict[int, float] = {0: 0.0}  # lane -> its planned time (each lane its own timeline)
    fid = 0
    for n, item in enumerate(gen(rng, env)):
        if n >= max_items:
            raise ValueError("generator produced too many items; bound it with time_limit")
        if isinstance(item, Sleep):
            clock[item.lane] = clock.get(item.lane, 0.0) + item.seconds
        elif isinstance(item, Fault):
            fid += 1
            t = clock.get(item.lane, 0.0)
            spec = env.duration_spec(item)
            d = env.seconds(spec)
            params = {**env.fault_params, **item.params}
            at, length = round(t, 6), round(d, 6)
            out.append(
                dataclasses.replace(
                    item, fault_id=fid, duration=spec, duration_s=length, at_s=at, params=params
                )
            )
            clock[item.lane] = t + d
        elif isinstance(item, Heal):  # after every lane's faults so far
            out.append(PlannedHeal(round(max(clock.values()), 6)))
    return out


def standard_plan(
    names: list[str],
    *,
    seed: int,
    time_limit_s: float,
    interval_s: float,
    fault_duration_s: float,
    session_timeout_s: float,
) -> list[Planned]:
    env = Env(session_timeout_s=session_timeout_s, fault_duration_s=fault_duration_s)
    gen = standard(names, time_limit_s=time_limit_s, interval_s=interval_s)
    return plan(gen, seed, env)
