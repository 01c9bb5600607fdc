"""`clock-rate-one` on Redlock's five real Redis 7.0 masters: the fault runs one master's clock
k x fast, whichever it picks, and is landed only when that master's own redis-server was seen
reading its clock at the rate (zkj-timewarp's page, nemesis/clock.py), not when the control file
was written. What it claims (faultkinds: "a Redis master expires its keys k x early"): a key set
with the same PX on every master goes first on the fast one, while the other four still hold
theirs. That is an order, not a time: at 10x the fast master's key goes after 2 s of a 20 s TTL,
and the others' stay 18 s longer."""

from __future__ import annotations

import random
import time

import pytest
from clock_servers import end_record, under_clock_faults

from zkjepsen.faultkinds import KINDS, landing
from zkjepsen.nemesis import clock
from zkjepsen.nemesis.faults import IMPLEMENTATIONS
from zkjepsen.nemesis.targets import NemesisContext

pytestmark = pytest.mark.integration

RATE = 10.0
TTL_MS = 20_000  # the fast master's key goes after TTL/RATE = 2 s; the others' 18 s later
KEY = "zkj-rate-one"


def redis(servers, node, *argv: str) -> str:
    code, out = servers.exec(node, ["redis-cli", "-p", str(node.port), *argv])
    assert code == 0, (node.name, argv, out)
    return out.strip()


@pytest.fixture
def masters(docker_client, redis_image, zk_image, tmp_path):
    with under_clock_faults("redlock", docker_client, redis_image, zk_image, tmp_path) as servers:
        yield servers


def test_one_masters_fast_clock_is_seen_on_it_and_expires_its_key_first(masters):
    assert KINDS["clock-rate-one"].target == "one"
    fault = IMPLEMENTATIONS["clock-rate-one"]
    ctx = NemesisContext(masters)
    targets, detail = fault.resolve(ctx, "one", random.Random(3), {"rate": RATE})
    assert len(targets) == 1 and targets[0] in {n.name for n in masters.nodes}
    fast = ctx.node(targets[0])
    others = [n for n in masters.nodes if n.name != fast.name]
    fault.apply(ctx, targets, detail)
    try:
        seen = detail["clock_seen"][fast.name]
        # observed on the master itself: what redis-server read, at the rate set
        assert seen["via"] == "timewarp" and seen["samples"] > 0, seen
        assert abs(seen["rate"] - RATE) <= 0.01 * RATE, seen
        for node in masters.nodes:
            assert redis(masters, node, "SET", KEY, "held", "PX", str(TTL_MS)) == "OK"
        # No clock bound: the wait ends when any master's key is gone (every key goes by its
        # own TTL at the latest), and the order is the claim: the fast master's key goes first.
        while True:
            gone_fast = redis(masters, fast, "EXISTS", KEY) == "0"
            kept = {n.name: redis(masters, n, "EXISTS", KEY) for n in others}
            if gone_fast or "0" in kept.values():
                break
            time.sleep(0.1)
        assert gone_fast, f"{fast.name}'s key outlived another master's under {RATE}x: {kept}"
        # the moment the fast master's key is gone, every other master still holds its own
        assert kept == {n.name: "1" for n in others}, (fast.name, kept)
    finally:
        fault.undo(ctx, targets, detail)
        clock.heal(ctx)
    got = landing("clock-rate-one", {}, end_record(fast.name, detail))
    assert got.landed, (got.why, detail)
