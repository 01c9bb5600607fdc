"""The hunt's choice of the next run (docs/hunt.md, the guidance): `random` an arm of the menu
uniformly; `guided` the fault kind first, by UCB1 with a prior that favours the lock client's
own boundary, then the kind's arm (its moment), then the arm's least-tried option. Pure: the
menu and the choices are run/hunt.py's, read here by their fields."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from zkjepsen.faultkinds import KINDS


class Choice(Protocol):
    """What the choice reads of run/hunt.py's Choice (which imports this module, so it is
    named here by its fields): the arm it is of, and its option within the arm."""

    @property
    def arm(self) -> tuple[str, str]: ...

    @property
    def option(self) -> tuple[str, str]: ...


C = TypeVar("C", bound=Choice)


class Menu(Protocol[C]):
    """What the choice reads of run/hunt.py's Menu: its arms and each arm's choices."""

    arms: list[tuple[str, str]]

    def choices(self, arm: tuple[str, str]) -> list[C]: ...

    def can_land(self, choice: C) -> bool: ...


@dataclass
class Tally:
    """What the guided strategy knows: each arm's tries and reward, each part's (a fault, a
    moment) over every arm it is in, and each option's tries within its arm."""

    tries: dict[tuple[str, str], int] = field(default_factory=dict)
    reward: dict[tuple[str, str], float] = field(default_factory=dict)
    sizes: dict[tuple[tuple[str, str], tuple[str, str]], int] = field(default_factory=dict)
    parts: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # -> [tries, reward]

    def add(self, choice: Choice, reward: float) -> None:
        self.tries[choice.arm] = self.tries.get(choice.arm, 0) + 1
        self.reward[choice.arm] = self.reward.get(choice.arm, 0.0) + reward
        key = (choice.arm, choice.option)
        self.sizes[key] = self.sizes.get(key, 0) + 1
        for part in components(choice.arm):
            t = self.parts.setdefault(part, [0.0, 0.0])
            t[0] += 1
            t[1] += reward

    def estimate(self, arm: tuple[str, str]) -> tuple[float, float]:
        """(the arm's estimated reward, its parts' mean): its own mean, shrunk toward the mean
        of its parts (a fault, a moment) over the other arms they are in; a part never tried
        is credited its prior (`part_prior`: optimism, the untried looks as good as what came
        close, a fault on the servers as good as one that lands)."""
        means = [
            t[1] / t[0] if (t := self.parts.get(p)) and t[0] else part_prior(p)
            for p in components(arm)
        ]
        prior = sum(means) / len(means)
        k = self.tries.get(arm, 0)
        return (self.reward.get(arm, 0.0) + SHRINK * prior) / (k + SHRINK), prior

    def kind(self, kinds: str, arms: list[tuple[str, str]]) -> tuple[int, float]:
        """(tries, reward) of a fault kind (a pair's two kinds: `a + b`) over its arms."""
        mine = [a for a in arms if a[1] == kinds]
        return sum(self.tries.get(a, 0) for a in mine), sum(self.reward.get(a, 0.0) for a in mine)


PRIOR = 0.5  # the reward an untried moment, or fault at the lock client's boundary, is credited
SERVER_PRIOR = 0.25  # the same for a fault on the servers: that of a fault that lands, no more
SHRINK = 1.0  # how many tries' weight an arm's parts carry in its estimate
PAIR_WAIT = 0.0  # a pair's prior while one of its kinds was never tried alone (kind_prior)
EXPLORE = 0.5  # the exploration term's weight
# A fault at the lock client's own boundary: its process, its connection and its wire, its
# clock (a kind whose target is a client: the holder, or a client of the nemesis's choice).
CLIENT_TARGETS = ("holder", "random")


def at_client(fault: str) -> bool:
    """Does `fault` act at the lock client's own boundary (CLIENT_TARGETS), not on the
    servers? A name no declaration knows (a test's) counts as the client's."""
    kind = KINDS.get(fault)
    return kind is None or kind.target in CLIENT_TARGETS


def part_prior(part: tuple[str, str]) -> float:
    """What a part (a moment, a fault) no run has had is credited: PRIOR, but SERVER_PRIOR for
    a fault on the servers (docs/hunt.md, the guidance: the hunt hunts the lock's defects)."""
    what, name = part
    return PRIOR if what == "moment" or at_client(name) else SERVER_PRIOR


def kind_prior(
    kinds: str, tally: Tally | None = None, arms: list[tuple[str, str]] | None = None
) -> float:
    """A fault kind's prior, as `part_prior`; a pair's, the mean of its two kinds' estimates
    as single arms (what each earned alone, shrunk toward its prior as `choose` shrinks a
    kind's): a pair of faults that came close alone is worth its try, and the pair's own
    runs count once, in its own tries, not again in its prior. Until both its kinds were
    tried alone, PAIR_WAIT: below every untried single kind."""
    names = kinds.split(" + ")
    if len(names) == 1 or tally is None or arms is None:
        return sum(part_prior(("fault", f)) for f in names) / len(names)
    means = []
    for f in names:
        k, r = tally.kind(f, arms)
        if not k:
            # A pair is two faults at once: what it can show beyond its parts is how they
            # meet, and a part never tried alone has earned nothing to meet with. So it waits
            # behind every kind untried alone (on etcd_keepalive_ignored, guided seed 1, seven
            # pairs with a client kind took runs 8-14 while the servers' kinds that expose
            # the bug were untried).
            return PAIR_WAIT
        means.append((r + SHRINK * part_prior(("fault", f))) / (k + SHRINK))
    return sum(means) / len(means)


def components(arm: tuple[str, str]) -> list[tuple[str, str]]:
    moments_, faults = arm[0].split(" + "), arm[1].split(" + ")
    return [("moment", x) for x in moments_] + [("fault", x) for x in faults]


def choose(strategy: str, m: Menu[C], tally: Tally, rng: random.Random) -> tuple[C, str]:
    """The next choice and why. Guided: first the fault kind (a pair's two kinds as one), by
    UCB1 over the kinds with each kind's prior (`kind_prior`); then, within it, the arm (its
    moment), by UCB1 over its arms with what their parts earned elsewhere; then its least-tried
    option (role, magnitude; `option_tries`). Random: an arm uniformly, then an option uniformly."""
    if strategy == "random":
        return rng.choice(m.choices(rng.choice(m.arms))), "uniform over the menu"
    n = sum(tally.tries.values())

    def bonus(k: int) -> float:
        return EXPLORE * math.sqrt(math.log(n + 1) / (k + 1))

    def kind_score(kinds: str) -> float:
        k, r = tally.kind(kinds, m.arms)
        return (r + SHRINK * kind_prior(kinds, tally, m.arms)) / (k + SHRINK) + bonus(k)

    kinds = list(dict.fromkeys(a[1] for a in m.arms))
    by_kind = {x: kind_score(x) for x in kinds}
    top = max(by_kind.values())
    kind = rng.choice([x for x in kinds if by_kind[x] >= top - 1e-12])
    mine = [a for a in m.arms if a[1] == kind]

    def score(a: tuple[str, str]) -> float:
        return tally.estimate(a)[0] + bonus(tally.tries.get(a, 0))

    scores = {a: score(a) for a in mine}
    best = max(scores.values())
    arm = rng.choice([a for a in mine if scores[a] >= best - 1e-12])
    est, prior = tally.estimate(arm)
    k = tally.tries.get(arm, 0)
    untried = sum(1 for a in m.arms if a not in tally.tries)
    fresh = sum(1 for x in kinds if not tally.kind(x, m.arms)[0])
    why = (
        f"kind {kind} {top:.2f} ({fresh} of {len(kinds)} kinds untried); "
        f"score {best:.2f}: estimate {est:.2f} ({k} tries; its fault and moment "
        f"{prior:.2f} elsewhere) + exploration; {untried} of {len(m.arms)} pairs untried"
    )
    options = m.choices(arm)
    tries = [option_tries(tally, arm, c, m.can_land(c)) for c in options]
    least = min(tries)
    return rng.choice([c for c, t in zip(options, tries, strict=True) if t == least]), why


def option_tries(tally: Tally, arm: tuple[str, str], choice: Choice, lands: bool) -> int:
    """How tried an option of `arm` counts as, for the least-tried pick: its tries, and one
    more for an option that cannot land where the lock could break (`lands` false: run/hunt.py
    `Menu.can_land`, a silence shorter than the session, a freeze or kill of the client whose
    release is the moment). Its run would be a miss by the power rule's own terms, and judge
    its kind on a choice of magnitude or aim, not on the kind (a 0.5x `pause-client` first on
    the outsider's redis_ex_units, 2026-11-29): so each arm's first try is one that can land,
    and the others still come once those were tried as often."""
    return tally.sizes.get((arm, choice.option), 0) + (0 if lands else 1)
