"""A fault fired on a trigger is aimed at the event's client only when its kind aims at a client;
a server fault takes the event's moment and keeps its own target (the disk family is handed the
client: it waits for that client's acknowledged write, then hits its own servers). `matrix
--fault-trigger acquired` with kill-leader once aimed the leader's kill at `client:3` and
stopped the run ("no server named client:3"): every declared kind is checked here."""

from __future__ import annotations

import pytest

from zkjepsen.faultkinds import KINDS, aimed_by_trigger
from zkjepsen.nemesis import generator as g
from zkjepsen.nemesis.triggers import on_acquire

SERVER_ROLES = {"leader", "one", "majority", "minority", "all"}


@pytest.mark.parametrize("name", sorted(n for n in KINDS if n != "none"))
def test_a_triggered_fault_is_aimed_at_the_event_only_if_its_kind_aims_at_a_client(name):
    gen = g.steps(g.on(on_acquire(retries=10), g.fault(name)))
    (planned,) = [p for p in g.plan(gen, 1, g.Env()) if p.f == name]
    if KINDS[name].target in SERVER_ROLES and KINDS[name].family != "disk":
        assert not aimed_by_trigger(name)
        assert planned.target is None  # its own default target (the leader, one server...)
    else:
        assert aimed_by_trigger(name)
        assert planned.target == "trigger"
