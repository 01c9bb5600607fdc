"""`zkjepsen hunt`: a sequence of short runs, each with ONE fault the hunt chooses - which fault,
on which lock-state moment, how long - until a run finds a violation that a lease does not
explain, or the budget is spent (docs/hunt.md).

The menu is every fault kind the run's service and clients allow (`refusals`, the one
applicability predicate) crossed with the moments a trigger can aim at (on an acquire, on a
release, while queued behind another, in the middle of an acquire, at a time) and with
magnitudes relative to the session (lease) timeout. A choice is one (moment, fault, magnitude);
the run's schedule is a short sleep, then that fault on that moment (aimed at the client the
moment names when the fault hits clients). `random` picks uniformly; `guided` is UCB1 over
(moment, fault) arms, untried arms first, rewarded by how close a run came (docs/hunt.md).

A run **finds** something when its verdict is invalid for a reason other than the faults'
nature, as the one classification (checker/nature.py) says: a belief overlap beyond a lease's
or a fault's nature, an atomicity, fencing or phantom violation it calls a defect, or any other
invalid part when there was no such split to explain it (liveness, a lost update...). A run
whose only findings are a lease's or a fault's nature (a frozen holder past its lease, a killed
holder's half-done update, a server that lost its state, a server's clock run ahead) is
reported, once, and the hunt goes on. Every choice
goes to `hunt.jsonl` in the hunt's folder, one line per run as it ends, with the run's folder.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from zkjepsen.backends.registry import backend_info
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import KINDS
from zkjepsen.run.fanout import Job, Outcome
from zkjepsen.run.finding import RECOVERY_WORDS, finding, natures_of
from zkjepsen.run.hunt_choice import (  # noqa: F401 - the guided choice, as it was named here
    CLIENT_TARGETS,
    EXPLORE,
    PAIR_WAIT,
    PRIOR,
    SERVER_PRIOR,
    SHRINK,
    Tally,
    at_client,
    choose,
    components,
    kind_prior,
    part_prior,
)
from zkjepsen.run.hunt_coverage import Coverage, write_html
from zkjepsen.run.hunt_state import Reached, reached
from zkjepsen.run.many import run_jobs
from zkjepsen.run.resolve import refusals, role_refusal, validate_spec
from zkjepsen.run.stored import StoredRun
from zkjepsen.spec import SHARED_MASTER, TestSpec
from zkjepsen.store import RunDir

STRATEGIES = ("guided", "random")
LEAD_S = 2.0  # the clients' start before a fault may go in
NEAR_EXPIRY = 0.8  # near-expiry: this share of the lease after a grant
# The moments a fault can be fired on (nemesis/triggers.py tables); None: at a seeded time.
# Some apply only to some runs (`moments`); FOLLOW ones happen only when something causes
# them (a session suspended, a new leader): the second moment of a pair, never a first.
MOMENTS: dict[str, dict[str, Any] | None] = {
    "on-acquire": {"kind": "acquired", "retries": 10},
    "on-release": {"kind": "released"},
    "while-queued": {"kind": "invoked", "f": "acquire", "delay_s": 0.3, "retries": 10},
    "mid-acquire": {"kind": "invoked", "f": "acquire", "retries": 10},
    "at-a-time": None,
    "near-expiry": {"kind": "acquired", "retries": 10},  # delay_s: NEAR_EXPIRY x the lease
    "on-first-write": {"kind": "invoked", "retries": 10},  # f: the workload's write
    "on-suspended": {"kind": "session", "state": "SUSPENDED"},
    "on-lost": {"kind": "session", "state": "LOST"},
    "on-leader-change": {"kind": "leader-changed"},
}
FOLLOW = ("on-suspended", "on-lost", "on-leader-change")
WRITES = {"lock": "write", "election": "write", "counter": "add"}  # a holder's write, by workload
# Whom a client's fault hits, by moment: "event" the client the moment names (the holder on
# an acquire, the waiter on a queued acquire...), else a role read from the live lock state at
# the firing (nemesis/triggers.py AIMS). A server's fault keeps its kind's own target.
ROLES: dict[str, tuple[str, ...]] = {
    "on-acquire": ("event", "next-waiter", "any-waiter"),
    "on-release": ("event", "next-waiter"),
    "while-queued": ("event", "holder"),
    "mid-acquire": ("event", "holder"),
    "at-a-time": ("holder",),
    "near-expiry": ("event", "next-waiter"),
    "on-first-write": ("event", "next-waiter"),
    "on-suspended": ("event", "holder", "next-waiter"),
    "on-lost": ("event", "holder", "next-waiter"),
    "on-leader-change": ("holder", "next-waiter"),
}
# Whom a fault on one server hits: its kind's own pick (any server), or one that does not lead
# (nemesis/targets.py `follower`) where a server leads; the leader's faults are their own kinds.
# Where the run allows it (run/resolve.py `role_refusal`, the one predicate), also a master
# the current Redlock holder's grant is on (`shared-master`, nemesis/redlock.py), read at the
# firing from the holder's acquire record: a trigger's aim (a match when no holder's record
# names its masters does not count) and the fault's target.
SERVER_ROLES = ("event", "follower")
LOCK_SERVER_ROLES = (SHARED_MASTER,)
# Magnitudes by the kind's power rule: durations as multiples of the session (lease) timeout,
# short and long of it for silences; a kill's down time; a clock fault's length.
MAGNITUDES = {"silence": ("0.5x", "1.5x", "3x"), "instant": ("0.5x", "2x"), "during": ("1x", "3x")}
# The sizes of the magnitudes a kind declares it reads (faultkinds `params`), crossed with its
# length: a clock offset in multiples of the lease, ahead a little, ahead past it, behind past
# it (whole seconds: a clock steps whole seconds); a loss rate a lease rides out (one keepalive
# of three gets through at 0.5) and one it does not; a clock rate about the default's (4).
PARAM_SIZES = {"offset_s": ("0.5x", "2x", "-2x"), "probability": ("0.5", "0.9"), "rate": ("2", "8")}
# How a client fault is seen to land when it stops the client's process (faultkinds observers)
STOPS_THE_CLIENT = ("frozen", "killed")
# A run that silences a client holds for at least the silence and this many leases more: a
# lease to learn in after the heal, and one more to show what the holder believes (run_params).
AFTER_SILENCE = 2.0
PAIRS = 24  # pairs of faults in two lanes on the menu: sampled, seeded, from the valid ones
# What a run reached, as the guided strategy's reward: found > came close > landed > missed;
# a run that reached a lock state no earlier run of the hunt had reached earns NOVELTY more.
REWARD = {"found": 1.0, "close": 0.5, "landed": 0.25, "missed": 0.0}
NOVELTY = 0.25


@dataclass(frozen=True)
class Choice:
    moment: str
    fault: str
    magnitude: str
    target: str = "event"  # ROLES: whom a client's fault hits
    then: Choice | None = None  # a pair: the second fault, on its own moment, in lane 1

    @property
    def arm(self) -> tuple[str, str]:
        if self.then is None:
            return (self.moment, self.fault)
        return (f"{self.moment} + {self.then.moment}", f"{self.fault} + {self.then.fault}")

    @property
    def option(self) -> tuple[str, str]:
        """What varies within an arm: whom it hits and how hard (a pair: both parts)."""
        if self.then is None:
            return (self.target, self.magnitude)
        t, m = self.then.option
        return (f"{self.target} + {t}", f"{self.magnitude} + {m}")

    def describe(self) -> str:
        """`pause-client 1.5x on-acquire -> next-waiter`, a pair's second after ` + `."""
        aim = "" if self.target == "event" else f" -> {self.target}"
        head = f"{self.fault} {self.magnitude} {self.moment}{aim}"
        return head + (f" + {self.then.describe()}" if self.then is not None else "")

    def parts(self) -> list[Choice]:
        return [replace(self, then=None), *(self.then.parts() if self.then else [])]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "moment": self.moment,
            "fault": self.fault,
            "magnitude": self.magnitude,
            "target": self.target,
        }
        if self.then is not None:
            out["then"] = self.then.to_json()
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Choice:
        then = cls.from_json(d["then"]) if d.get("then") else None
        return cls(d["moment"], d["fault"], d["magnitude"], d.get("target", "event"), then)


@dataclass
class Menu:
    arms: list[tuple[str, str]]  # (moment, fault) pairs that can run; pairs of them too
    magnitudes: dict[str, tuple[str, ...]]  # fault -> its magnitudes
    dropped: dict[str, str]  # fault -> why it is not on the menu
    options: dict[tuple[str, str], list[Choice]] = field(default_factory=dict)  # arm -> choices
    # the least a silence must last, in the magnitudes' leases, to be an opportunity (the power
    # rule's session timeout over the lease: 1 where the lease is the session)
    silence_floor: float = 1.0

    def choices(self, arm: tuple[str, str]) -> list[Choice]:
        if arm in self.options:
            return self.options[arm]
        moment, fault = arm
        return [Choice(moment, fault, s) for s in self.magnitudes[fault]]

    def can_land(self, choice: Choice) -> bool:
        """Can the fault land where the lock could break, by the power rule's own terms
        (checker/power.py: a client at risk is one in its lock path, from its acquire's invoke
        to its release's)? Not a silence shorter than the session timeout: the session
        outlives it, so it is an opportunity for no one it hits. Not a fault that freezes or
        kills the client whose release is the moment (`on-release`, aimed at its `event`):
        the moment takes that client out of its lock path, and frozen or dead it cannot come
        back into it while the fault lasts. A pair: both its parts."""
        for part in choice.parts():
            kind = KINDS.get(part.fault)
            if kind is None or kind.power is None:
                continue
            if 0 < silence_of(part) < self.silence_floor:
                return False
            if part.moment == "on-release" and part.target == "event":
                if at_client(part.fault) and kind.observer in STOPS_THE_CLIENT:
                    return False
        return True

    @property
    def singles(self) -> int:
        return sum(1 for m, _ in self.arms if " + " not in m)


def check_budget(budget_s: float) -> float:
    if not budget_s > 0:
        raise BadInput(f"budget {budget_s:g}s is not a time to hunt in; give one above 0, e.g. 10m")
    return budget_s


def lease_s(spec: TestSpec) -> float:
    """The lease a grant lives by: the recipe's TTL parameter when it has one, else the
    session timeout."""
    ttl = spec.params.get("lock_ttl_s") if isinstance(spec.params, dict) else None
    return float(ttl) if isinstance(ttl, (int, float)) and ttl > 0 else spec.session_timeout_s


def trigger_table(spec: TestSpec, moment: str, role: str) -> dict[str, Any] | None:
    """The trigger a moment fires on, for this run (None: at a seeded time)."""
    table = MOMENTS[moment]
    if table is None:
        return None
    trigger = dict(table)
    if moment == "near-expiry":
        trigger["delay_s"] = round(NEAR_EXPIRY * lease_s(spec), 3)
    if moment == "on-first-write":
        trigger["f"] = WRITES.get(spec.workload, "write")
    if role != "event":
        trigger["aim"] = role
    elif trigger.get("delay_s") and trigger.get("f") == "acquire" and _zookeeper(spec):
        # queued behind another: the nemesis sees the waiter's node in the lock's queue
        trigger["waiting_in"] = str(spec.params.get("lock_path") or "/zkjepsen/lock")
    return trigger


def sizes(fault: str) -> tuple[str, ...]:
    """A kind's magnitudes: its length by its power rule (MAGNITUDES), crossed with the sizes
    of each magnitude it declares it reads (PARAM_SIZES): `1x`, or `1x offset_s=2x`."""
    kind = KINDS[fault]
    out = list(MAGNITUDES.get(kind.power.landed if kind.power else "", MAGNITUDES["during"]))
    for param in (p for p in kind.params if p in PARAM_SIZES):
        out = [f"{m} {param}={v}" for m in out for v in PARAM_SIZES[param]]
    return tuple(out)


def magnitude_of(spec: TestSpec, magnitude: str) -> tuple[str, dict[str, Any]]:
    """(the fault's duration, its params) from a magnitude `sizes` made: an offset in
    multiples of the lease becomes whole seconds (at least one, its sign kept)."""
    duration, *given = magnitude.split()
    params: dict[str, Any] = {}
    for item in given:
        name, _, value = item.partition("=")
        if value.endswith("x"):
            seconds = float(value[:-1]) * lease_s(spec)
            params[name] = int(math.copysign(max(1, round(abs(seconds))), seconds))
        else:
            params[name] = float(value)
    return duration, params


def fault_table(spec: TestSpec, part: Choice, lane: int) -> dict[str, Any]:
    """One fault of a schedule: on its moment, aimed at its role, `lane` when not 0."""
    kind = KINDS[part.fault]
    duration, params = magnitude_of(spec, part.magnitude)
    fault: dict[str, Any] = {"fault": part.fault, "duration": duration}
    if params:
        fault["params"] = params
    if part.target in ("follower", *LOCK_SERVER_ROLES):  # a server's fault: its role, its target
        fault["target"] = part.target
    on_client = kind.target in ("holder", "random")
    aimed = on_client or part.target in LOCK_SERVER_ROLES  # the trigger waits for a holder
    trigger = trigger_table(spec, part.moment, part.target if aimed else "event")
    if trigger is not None:
        fault["trigger"] = trigger
        if on_client:  # a client's fault: the client the moment names
            fault["target"] = "trigger"
    elif on_client and part.target == "holder":
        fault["target"] = "holder"
    if lane:
        fault["lane"] = lane
    return fault


def schedule(spec: TestSpec, choice: Choice, rng: random.Random) -> list[dict[str, Any]]:
    """The run's schedule as test.json holds one (nemesis/recorded.py's tables): a short sleep
    and the fault; a pair's second fault after a sleep of its own in lane 1."""
    lead = LEAD_S
    if choice.moment == "at-a-time":
        lead += rng.uniform(0.0, max(0.0, spec.time_limit_s - 2 * LEAD_S))
    out = [{"sleep": lead}, fault_table(spec, choice, 0)]
    if choice.then is not None:
        second = choice.then
        lead2 = LEAD_S
        if second.moment == "at-a-time":
            lead2 += rng.uniform(0.0, max(0.0, spec.time_limit_s - 2 * LEAD_S))
        out += [{"sleep": lead2, "lane": 1}, fault_table(spec, second, 1)]
    return out


def run_spec(base: TestSpec, choice: Choice, seed: int, rng: random.Random) -> TestSpec:
    faults = list(dict.fromkeys(p.fault for p in choice.parts()))
    params = run_params(base, choice)
    limit = base.time_limit_s
    if params != base.params:  # stretched: two holds and what follows them (run_params)
        limit = max(limit, round(2 * params["hold_s"] + AFTER_SILENCE * lease_s(base), 3))
    return replace(
        base,
        params=params,
        time_limit_s=limit,
        nemesis=faults,
        generator=schedule(base, choice, rng),
        seed=seed,
        stop_on_violation=True,
        fault_trigger=None,
        name=f"hunt-{'-'.join(faults)}",
    )


def silence_of(part: Choice) -> float:
    """How long `part` silences what it hits, in session timeouts (its magnitude's `x`): a
    kind whose power rule is a silence (a pause, a cut, pings dropped); else 0."""
    kind = KINDS.get(part.fault)
    length = part.magnitude.split()[0] if part.magnitude else ""
    if kind is None or kind.power is None or kind.power.landed != "silence":
        return 0.0
    return float(length[:-1]) if length.endswith("x") else 0.0


def client_silence(part: Choice) -> float:
    """How long `part` silences a client (`silence_of`, a client kind's only); else 0."""
    return silence_of(part) if at_client(part.fault) else 0.0


def run_params(base: TestSpec, choice: Choice) -> Any:
    """The run's workload params: the base's, except that a run which silences a client holds
    for at least the silence and AFTER_SILENCE leases more (fixed). A holder silenced past
    its lease shows what it believes only back in its hold after the lease it had to learn
    in (checker/nature.py `past_excuse`: a claim within a lease of the heal is a lease's
    nature); a hold that ends inside the silence, or within a lease of it, hides every belief
    a defect keeps (a bare renewal that revives the next holder's key, a loss never heard).
    Such a run lasts two of its holds and two leases at least (`run_spec`): a trigger armed
    in the first grant's hold fires at the next grant, and the silenced holder's release
    still has time to act on the next holder (a blind delete of its key)."""
    silence = max((client_silence(p) for p in choice.parts()), default=0.0)
    if not silence or not isinstance(base.params, dict):
        return base.params
    need = round(silence * base.session_timeout_s + AFTER_SILENCE * lease_s(base), 3)
    hold = base.params.get("hold_s")
    hold = float(hold) if isinstance(hold, (int, float)) else 0.0
    if base.params.get("hold_fixed") and hold >= need:
        return base.params
    return {**base.params, "hold_s": max(need, hold), "hold_fixed": True}


def moments(base: TestSpec) -> list[str]:
    """The moments that can happen in this run: a write only where the workload writes,
    session states where the clients say them (ZooKeeper), a leader where one leads."""
    family = backend_info(base.backend).family if base.backend else None
    out = []
    for m in MOMENTS:
        if m == "on-first-write" and base.workload not in WRITES:
            continue
        if m in ("on-suspended", "on-lost") and family != "zookeeper":
            continue
        if m == "on-leader-change" and family not in ("zookeeper", "etcd"):
            continue
        out.append(m)
    return out


def longest_hold(spec: TestSpec) -> float:
    """The longest hold the run's clients make (client/loop.py: `hold_s` exactly with
    `hold_fixed`, else drawn from 0 to twice it; 0.2 s by default)."""
    p = spec.params if isinstance(spec.params, dict) else {}
    hold = p.get("hold_s", 0.2)
    hold = float(hold) if isinstance(hold, (int, float)) else 0.2
    return hold if p.get("hold_fixed") else 2 * hold


def roles(
    fault: str, moment: str, servers: int = 1, spec: TestSpec | None = None
) -> tuple[str, ...]:
    """Whom `fault` may hit on `moment`: a client's fault a role of the lock (ROLES), a fault
    on one of several servers any or a follower (SERVER_ROLES), and, in the run `spec` where
    `role_refusal` allows it, a master the Redlock holder shares (LOCK_SERVER_ROLES); else its
    kind's own target."""
    target = KINDS[fault].target
    if target == "one" and servers > 1:
        lock = [r for r in LOCK_SERVER_ROLES if spec and role_refusal(spec, r, fault) is None]
        return (*SERVER_ROLES, *lock)
    if target not in ("holder", "random"):
        return ("event",)  # its kind's own target (the leader, a minority, all...)
    if moment == "near-expiry" and spec and longest_hold(spec) < NEAR_EXPIRY * lease_s(spec):
        # the grant's holder has let go before its age nears the lease: a fault aimed at it
        # would miss every time (its trigger's state had ended); a waiter is still there
        return tuple(r for r in ROLES[moment] if r != "event")
    return ROLES[moment]


def menu(base: TestSpec, only: list[str] | None = None) -> Menu:
    """Every fault that applies to the run (of `only`, when given), on every moment its
    schedule validates for; and PAIRS pairs of them in two lanes, sampled with a fixed seed."""
    unknown = sorted(set(only or ()) - set(KINDS))
    if unknown:
        raise BadInput(f"unknown fault(s) {', '.join(unknown)}; `zkjepsen list nemeses` names them")
    refused = refusals(base)
    dropped: dict[str, str] = {}
    m = Menu([], {}, {}, silence_floor=base.session_timeout_s / lease_s(base))
    rng = random.Random(0)
    here = moments(base)
    for name, kind in KINDS.items():
        if kind.power is None or (only and name not in only):
            continue  # the baseline; a fault left out by --faults
        if name in refused:
            dropped[name] = refused[name]
            continue
        m.magnitudes[name] = sizes(name)
        for moment in here:
            if moment in FOLLOW:
                continue
            options = [
                Choice(moment, name, size, role)
                for role in roles(name, moment, base.nodes, base)
                for size in m.magnitudes[name]
            ]
            try:
                validate_spec(run_spec(base, options[0], 0, rng))
            except BadInput as e:
                dropped.setdefault(name, str(e))
                continue
            m.arms.append((moment, name))
            m.options[(moment, name)] = options
    if not m.arms:
        why = "; ".join(f"{n}: {w}" for n, w in sorted(dropped.items()))
        raise BadInput(f"nothing to hunt with: every fault was dropped ({why})")
    _add_pairs(base, m, [x for x in here if x != "at-a-time"], random.Random(1))
    m.dropped = {n: w for n, w in dropped.items() if n not in m.magnitudes}
    return m


def _add_pairs(base: TestSpec, m: Menu, seconds: list[str], rng: random.Random) -> None:
    """PAIRS pairs: a first fault as a single arm runs it, then a fault on the clients on a
    moment of its own (half of them, where the run has one, on a moment a first fault causes:
    a session suspended or lost after a silence or a kill, a new leader after a fault on the
    leader), each validated; the same for every hunt of this spec."""
    singles = list(m.arms)
    clients = [f for f in sorted(m.magnitudes) if KINDS[f].target in ("holder", "random")]
    follow = [x for x in seconds if x in FOLLOW]
    plain = [x for x in seconds if x not in FOLLOW]
    for attempt in range(PAIRS * 20):
        if len(m.arms) - len(singles) >= PAIRS or not clients:
            return
        moment = rng.choice(follow if follow and attempt % 2 == 0 else plain)
        firsts = [a for a in singles if _causes(a[1], moment)]
        if not firsts:
            continue
        first = rng.choice(m.options[rng.choice(firsts)])
        fault = rng.choice(clients)
        options = [
            replace(first, then=Choice(moment, fault, size, role))
            for role in roles(fault, moment, spec=base)
            for size in m.magnitudes[fault]
        ]
        arm = options[0].arm
        if arm in m.options or (first.fault, first.moment) == (fault, moment):
            continue
        try:
            validate_spec(run_spec(base, options[0], 0, rng))
        except BadInput:
            continue
        m.arms.append(arm)
        m.options[arm] = options


def _causes(fault: str, moment: str) -> bool:
    """Can `fault` cause `moment` (a FOLLOW one), so a second fault may fire on it?"""
    kind = KINDS[fault]
    if moment == "on-leader-change":
        return kind.target == "leader"
    if moment in FOLLOW:  # a session suspended or lost: a silence, or a kill of its server
        landed = kind.power.landed if kind.power else None
        return landed == "silence" or (landed == "instant" and kind.target != "holder")
    return True


@dataclass
class HuntResult:
    runs: int
    wall_s: float
    found: dict[str, Any] | None  # the hunt.jsonl line of the run that found it
    lease_splits: dict[str, Any] | None  # the first run whose splits a lease allows
    covered: int
    pairs: int
    folder: Path
    valids: list[Any]
    coverage: Coverage | None = None
    picture: Path | None = None  # coverage.html
    unrecovered: dict[str, Any] | None = None  # the first run whose server did not recover

    def coverage_line(self) -> str:
        """What it covered and, when it found nothing, the bound that puts on a run."""
        if self.coverage is not None:
            return self.coverage.line(self.runs, self.wall_s, self.found is not None)
        what = "a violation" if self.found else "no violation"
        return (
            f"{what} in {self.runs} runs / {self.wall_s / 60:.1f} min, {self.covered} of "
            f"{self.pairs} (moment, fault) pairs covered"
        )


@dataclass
class _Hunt:
    """One hunt's state while it runs: its choices, its coverage, its lines."""

    base: TestSpec
    menu: Menu
    strategy: str
    folder: Path
    rng: random.Random
    tally: Tally = field(default_factory=Tally)
    lines: list[dict[str, Any]] = field(default_factory=list)
    # fault kind (a pair: `a + b`) -> the natures its close runs had (`ended`)
    natures: dict[str, set[str]] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    coverage: Coverage = field(init=False)

    def __post_init__(self) -> None:
        self.coverage = Coverage(list(self.menu.arms))

    def round(self, first: int, n: int) -> list[tuple[Job, Choice, str]]:
        """n choices, each counted as tried before the next is made (so a round of several
        spreads over the menu); their rewards come in `ended`."""
        out = []
        for i in range(first, first + n):
            choice, why = choose(self.strategy, self.menu, self.tally, self.rng)
            self.tally.add(choice, 0.0)
            spec = run_spec(self.base, choice, self.rng.randrange(2**31), self.rng)
            out.append((Job(spec, tag=i), choice, why))
        return out

    def ended(self, i: int, choice: Choice, why: str, outcome: Outcome) -> dict[str, Any]:
        reached, words = finding(outcome.run.results)
        what = run_reached(self.base, outcome)
        first = not self.coverage.states
        fresh = [x for x in what.states if x not in self.coverage.states]
        if _table(outcome.run.results).get("error"):
            self.coverage.errors += 1  # no verdict: it tried nothing
            new = 0
        else:
            new = self.coverage.add(choice.arm, *choice.option, what.states)
        reward = REWARD[reached]
        natures = natures_of(_table(outcome.run.results)) if reached == "close" else set()
        kind = choice.arm[1]
        known = set().union(*(self.natures.get(k, ()) for k in {kind, *kind.split(" + ")}))
        if natures and natures <= known and not what.near:
            # A fault's nature is reported once (a lease's splits, a killed holder's half-done
            # update): its kind (or a pair, what its kinds showed alone) showing it again came
            # no closer to a defect than a landing.
            reward = REWARD["landed"]
        self.natures.setdefault(kind, set()).update(natures)
        if what.near and reached in ("landed", "missed"):
            reward = REWARD["close"]  # it came close in its history, where no checker looks
        if fresh and not first:  # a lock state no run had reached (the first reaches all)
            reward = min(1.0, reward + NOVELTY)
        self.tally.reward[choice.arm] = self.tally.reward.get(choice.arm, 0.0) + reward
        for part in components(choice.arm):
            self.tally.parts[part][1] += reward
        line = _line(i, self.strategy, choice, why, outcome, reached, words, self.started)
        line |= {**what.to_json(), "new_states": len(fresh), "new_cells": new}
        line["reward"] = round(reward, 3)
        with RunDir(self.folder).hunt_log.open("a") as f:  # one line per run as it ends
            f.write(json.dumps(line, default=str) + "\n")
        self.lines.append(line)
        return line

    def result(self) -> HuntResult:
        lines = self.lines
        found = next((x for x in lines if x["reached"] == "found"), None)
        lease = next((x for x in lines if x["reached"] == "close" and "lease" in x["words"]), None)
        wall = time.monotonic() - self.started
        picture = write_html(
            self.coverage,
            self.folder / "coverage.html",
            f"hunt coverage: {self.base.recipe} on {self.base.backend} ({self.strategy})",
            self.coverage.line(len(lines), wall, found is not None),
        )
        return HuntResult(
            len(lines),
            wall,
            found,
            lease,
            self.coverage.covered,
            len(self.menu.arms),
            self.folder,
            [x["valid"] for x in lines],
            self.coverage,
            picture,
            next((x for x in lines if x["words"].startswith(RECOVERY_WORDS)), None),
        )


def hunt(
    base: TestSpec,
    m: Menu,
    budget_s: float,
    strategy: str,
    seed: int,
    folder: Path,
    on_run: Callable[[dict[str, Any]], None] = lambda line: None,
    parallel: int = 1,
    cluster: Any = None,
) -> HuntResult:
    """Runs, `parallel` at a time, until one finds something or the budget is spent (a round
    starts only while some budget is left; it may end after it). Each run's line is appended
    to hunt.jsonl as its round ends; coverage.html is written at the end."""
    check_budget(budget_s)
    if strategy not in STRATEGIES:
        raise BadInput(f"strategy {strategy!r} is not one of {', '.join(STRATEGIES)}")
    h = _Hunt(base, m, strategy, folder, random.Random(seed))
    found = False
    for first in _while_budget(h.started, budget_s, parallel):
        chosen = h.round(first, parallel)
        outcomes = run_jobs(
            [job for job, _, _ in chosen],
            None,
            parallel=parallel,
            cluster=cluster,
            store_root=folder,
            keep_going=True,
        )
        for (_, choice, why), outcome in zip(chosen, outcomes, strict=True):
            line = h.ended(outcome.job.tag, choice, why, outcome)
            on_run(line)
            found |= line["reached"] == "found"
        if found:  # the run that found it: HuntResult.found
            break
    return h.result()


def run_reached(base: TestSpec, outcome: Outcome) -> Reached:
    """The states and near misses of a run, from its stored history (run/stored.py, as
    `analyze` reads it); nothing when it has none or it does not read."""
    folder = outcome.run.store_dir
    if not folder or str(folder) in ("", ".") or not Path(folder).is_dir():  # an error's run
        return Reached([], [])
    try:
        records = [op.to_dict() for op in StoredRun.load(Path(folder)).history()]
    except (BadInput, OSError, ValueError):
        return Reached([], [])
    leaders = [n for n, k in KINDS.items() if k.target == "leader"]
    timeout = base.params.get("acquire_timeout_s") if isinstance(base.params, dict) else None
    waits = float(timeout) if isinstance(timeout, (int, float)) else None
    return reached(records, lease_s(base), leaders, waits)


def _while_budget(started: float, budget_s: float, step: int = 1) -> Iterator[int]:
    i = 0
    while time.monotonic() - started < budget_s:
        yield i
        i += step


def _line(
    i: int,
    strategy: str,
    choice: Choice,
    why: str,
    outcome: Outcome,
    reached: str,
    words: str,
    started: float,
) -> dict[str, Any]:
    run = outcome.run
    return {
        "run": i,
        "strategy": strategy,
        "choice": choice.to_json(),
        "why": why,
        "seed": run.spec.seed,
        "folder": str(run.store_dir) if run.store_dir else None,
        "valid": run.valid,
        "reached": reached,
        "words": words,
        "elapsed_s": round(time.monotonic() - started, 1),
    }


def _table(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _zookeeper(spec: TestSpec) -> bool:
    return spec.backend is not None and backend_info(spec.backend).family == "zookeeper"
