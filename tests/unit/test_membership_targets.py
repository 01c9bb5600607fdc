"""Which server a membership fault aims at (pure logic, a stand-in backend): `member-remove`
picks a follower by default, `member-remove-leader` the leader, so that a list of faults
(`member-remove-leader+pause-client`, a matrix column) can aim one at the leader and another at
the holder."""

from __future__ import annotations

import random

import pytest

from zkjepsen.docker.cluster import Node
from zkjepsen.faultkinds import KINDS
from zkjepsen.nemesis.faults import FAULTS
from zkjepsen.nemesis.targets import NemesisContext


class Members:
    def __init__(self, leader: str) -> None:
        self.nodes = [Node(f"n{i}", i, f"10.0.0.{i}", 2379) for i in (1, 2, 3)]
        self._leader = leader

    def leader(self) -> Node | None:
        return next(n for n in self.nodes if n.name == self._leader)

    # the ability `_members` asks for (backends.base.Reconfigurable); never called here
    def add_member(self) -> Node:
        raise AssertionError("resolve must not change the membership")

    def remove_member(self, node: Node) -> None:
        raise AssertionError("resolve must not change the membership")

    def membership(self) -> dict:
        raise AssertionError("resolve reads the leader only")


@pytest.mark.parametrize("leader", ["n1", "n2", "n3"])
def test_member_remove_leader_aims_at_the_leader_and_member_remove_at_a_follower(leader):
    ctx = NemesisContext(Members(leader))  # type: ignore[arg-type]
    name = "member-remove-leader"
    targets, detail = FAULTS[name].resolve(ctx, KINDS[name].target, random.Random(0), {})
    assert targets == [leader] and detail["leader"] == leader
    for seed in range(10):
        name = "member-remove"
        targets, _ = FAULTS[name].resolve(ctx, KINDS[name].target, random.Random(seed), {})
        assert targets != [leader] and len(targets) == 1
