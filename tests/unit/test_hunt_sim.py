"""benchmarks/hunt_sim.py: the hunt's real choice over a zoo program's real menu, each run's
outcome drawn from an exposure model. A model every arm of which finds ends every hunt at its
first run; a model one kind of which finds is met by the guided strategy within as many runs as
the menu has kinds (each kind once before any twice while none came close), whatever that
kind, and not by random (the mutant: the uniform chooser in the guided one's place). No Docker;
small N."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from zkjepsen.run import hunt_choice
from zkjepsen.run.hunt import REWARD, Choice

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import hunt_sim as sim  # noqa: E402

PROGRAM = "redis_client_clock"  # its menu: 157 arms, 40 kinds (19 single, 21 pairs)
SEEDS = range(1, 9)


def kinds_of(program: str) -> list[str]:
    return list(dict.fromkeys(a[1] for a in sim.menu_of(program).arms))


def missed(choice: Choice, rng: random.Random) -> str:
    return "missed"


def runs(model: sim.Model, strategy: str, cap: int, **kw) -> list[int | None]:
    s = sim.Sim(model, cap, **kw)
    return [s.hunt(strategy, seed) for seed in SEEDS]


@pytest.mark.parametrize("strategy", ["guided", "random"])
def test_a_bug_every_arm_shows_is_found_at_the_first_run(strategy):
    everything = sim.Model(PROGRAM, (), "every fault shows it", default_p=1.0)
    assert runs(everything, strategy, 5) == [1] * len(SEEDS)


def one_kind(kind: str) -> sim.Model:
    return sim.Model(PROGRAM, (sim.Exposure(kind, 1.0),), f"only {kind} shows it")


def client_kinds(program: str) -> list[str]:
    """The kinds (a pair's two as one) every fault of which is at the lock client's boundary."""
    return [k for k in kinds_of(program) if all(map(hunt_choice.at_client, k.split(" + ")))]


def within_the_kinds(strategy: str, kind: str, client: bool = False) -> bool:
    """Every hunt finds it within as many runs as the menu has kinds (a pair is a kind: the
    choice draws a pair's two kinds as one), or as it has client kinds for a client kind, when
    no run came close (every other run missed, no novelty): the kind sweep's bound."""
    bound = len(client_kinds(PROGRAM) if client else kinds_of(PROGRAM))
    got = runs(one_kind(kind), strategy, bound, novelty=0.0, outcomes=missed)
    return all(r is not None and r <= bound for r in got)


@pytest.mark.parametrize("kind", ["clock-skew-client", "kill-client", "kill-leader", "torn-write"])
def test_guided_meets_one_exposing_kind_within_the_menus_kinds(kind):
    assert within_the_kinds("guided", kind)


@pytest.mark.parametrize("kind", ["clock-skew-client", "kill-client", "isolate-client"])
def test_guided_meets_one_exposing_client_kind_within_the_client_kinds(kind):
    assert within_the_kinds("guided", kind, client=True)


def test_the_bound_has_teeth_random_in_guideds_place_breaks_it():
    """The mutant: the uniform chooser draws arms, not kinds, and draws some twice."""
    assert not all(within_the_kinds("random", k) for k in ("kill-leader", "torn-write"))


def test_the_sim_bookkeeping_is_the_hunts():
    """A simulated hunt's tally after its runs: each run a try of its arm and its reward,
    summed over the arm and its parts (what _Hunt.round and _Hunt.ended add)."""
    model = sim.Model(PROGRAM, (), "nothing shows it")
    s = sim.Sim(model, 6, novelty=0.0, outcomes=lambda choice, rng: "landed")
    assert s.hunt("guided", 3) is None
    assert sum(s.tally.tries.values()) == 6
    assert sum(s.tally.reward.values()) == pytest.approx(6 * REWARD["landed"])
    for part, (tries, reward) in s.tally.parts.items():
        assert reward == pytest.approx(tries * REWARD["landed"]), part


def test_a_kinds_nature_again_earns_a_landing():
    """acd58ee's reward rule as the sim keeps it: a close run of a kind (or of a pair one of
    whose kinds) that showed a nature before earns a landing, its first one close."""
    model = sim.Model(PROGRAM, (), "nothing shows it")
    s = sim.Sim(model, 12, novelty=0.0, outcomes=lambda c, r: "close", natures_once=1.0)
    assert s.hunt("guided", 5) is None
    seen: set[str] = set()
    want = 0.0
    for choice in s.chosen:
        kind = choice.arm[1]
        again = bool(seen & {kind, *kind.split(" + ")})
        want += REWARD["landed"] if again else REWARD["close"]
        seen.add(kind)
    assert sum(s.tally.reward.values()) == pytest.approx(want)
    assert want < 12 * REWARD["close"]  # some kind came twice in 12 runs


def test_constants_are_set_for_the_block_and_restored():
    before = hunt_choice.PRIOR
    with sim.constants(PRIOR=0.9):
        assert hunt_choice.part_prior(("moment", "on-acquire")) == 0.9
    assert hunt_choice.PRIOR == before


def test_a_pair_shows_it_when_either_part_does():
    model = sim.Model(PROGRAM, (sim.Exposure("clock-skew-client", 0.5),), "half")
    pair = Choice(
        "on-acquire", "kill-one", "0.5x", then=Choice("on-release", "clock-skew-client", "1x")
    )
    assert model.p_find(pair) == pytest.approx(0.5)
    assert model.p_find(Choice("on-acquire", "kill-one", "0.5x")) == 0.0


def test_an_unknown_model_is_bad_input():
    assert sim.main(["no_such_program"]) == 254
