"""The generator is pure: same seed -> same plan; combinators keep their promises."""

from __future__ import annotations

import json
import random
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkjepsen.history.live import LiveHistory
from zkjepsen.nemesis import generator as g
from zkjepsen.nemesis.faults import FAULTS, KINDS
from zkjepsen.nemesis.partition import bridge, grudge_from_components, halves, majorities_ring


def planned_tables(*args, **kw):  # a plan as schedule.json's "planned" holds it
    return [p.to_json() for p in g.plan(*args, **kw)]


NAMES = ["pause-client", "kill-leader", "partition-halves", "clock-bump"]


def std(seed: int, **kw) -> list[dict]:
    args = (
        dict(seed=seed, time_limit_s=60, interval_s=5, fault_duration_s=4, session_timeout_s=4) | kw
    )
    return [p.to_json() for p in g.standard_plan(NAMES, **args)]


def test_same_seed_same_plan_byte_for_byte():
    assert json.dumps(std(7)) == json.dumps(std(7))
    assert std(7) != std(8)


def test_standard_plan_shape():
    plan = std(3)
    faults = [p for p in plan if p["f"] != "heal"]
    assert plan[-1]["f"] == "heal"  # final heal
    assert [p["fault_id"] for p in faults] == list(range(1, len(faults) + 1))
    starts = [p["at_s"] for p in faults]
    assert starts == sorted(starts)
    for a, b in pairwise(faults):  # sequential: one fault ends before the next starts
        assert a["at_s"] + a["duration_s"] <= b["at_s"] + 1e-9
    assert all(p["at_s"] < 60 for p in faults)  # time limit: nothing starts after it
    pc = [p for p in faults if p["f"] == "pause-client"]
    assert pc and all(p["duration"] == "1.5x" and p["duration_s"] == 6.0 for p in pc)
    assert all(p["duration_s"] == 4 for p in faults if p["f"] == "kill-leader")


def test_resolve_duration():
    assert g.resolve_duration("1.5x", 4) == 6.0
    assert g.resolve_duration(8, 4) == 8.0
    assert g.resolve_duration("2.5", 4) == 2.5
    with pytest.raises(ValueError):
        g.resolve_duration(-1, 4)


def test_time_limit_cuts_sleeps_and_stops():
    gen = g.time_limit(10, g.delay(3, g.fault("kill-one", duration=1)))
    plan = planned_tables(gen, 0)
    # 3 + 1 + 3 + 1 + 2(cut) = 10: two faults, at 3 and 7
    assert [p["at_s"] for p in plan] == [3.0, 7.0]


def test_phases_and_once_and_final_heal():
    gen = g.phases(
        g.sleep(2),
        g.once(g.Fault("kill-one", duration=1)),
        g.sleep(1),
        g.once(g.Fault("pause-client")),
        g.final_heal(),
    )
    plan = planned_tables(gen, 0, g.Env(session_timeout_s=2))
    assert [(p["f"], p["at_s"]) for p in plan] == [
        ("kill-one", 2.0),
        ("pause-client", 4.0),
        ("heal", 7.0),
    ]


def test_mix_draws_from_all_and_is_seeded():
    gen = g.time_limit(
        500, g.delay(1, g.mix(g.fault("kill-one", duration=1), g.fault("clock-bump", duration=1)))
    )
    fs = [p["f"] for p in planned_tables(gen, 1)]
    assert set(fs) == {"kill-one", "clock-bump"}
    assert 0.35 < fs.count("kill-one") / len(fs) < 0.65
    assert fs == [p["f"] for p in planned_tables(gen, 1)]


def test_mix_drops_exhausted_generators():
    gen = g.mix(g.once(g.Fault("kill-one", duration=1)), g.once(g.Fault("clock-bump", duration=1)))
    assert sorted(p["f"] for p in planned_tables(gen, 5)) == ["clock-bump", "kill-one"]


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32), st.floats(1, 30))
def test_stagger_mean_interval_bounds(seed, interval):
    gen = g.time_limit(200, g.stagger(interval, g.fault("kill-one", duration=0)))
    starts = [p["at_s"] for p in planned_tables(gen, seed)]
    gaps = [b - a for a, b in pairwise([0.0, *starts])]
    assert all(0 <= x < 2 * interval + 1e-9 for x in gaps)


def test_unbounded_generator_is_refused():
    with pytest.raises(ValueError):
        planned_tables(g.fault("kill-one", duration=0), 0, max_items=1000)


def test_registry_has_every_required_fault():
    required = {
        "none",
        "partition-one",
        "partition-leader",
        "partition-halves",
        "partition-ring",
        "partition-bridge",
        "isolate-client",
        "packet-loss",
        "kill-one",
        "kill-leader",
        "kill-minority",
        "kill-majority",
        "pause-server",
        "pause-leader",
        "pause-client",
        "kill-client",
        "clock-bump",
        "clock-strobe",
        "clock-rate-leader",
    }
    assert required <= set(KINDS) == set(FAULTS)
    assert all(k.description for k in KINDS.values())


NODES5 = ["n1", "n2", "n3", "n4", "n5"]


def _sees(grudge: dict[str, list[str]], names: list[str]) -> dict[str, set[str]]:
    return {n: set(names) - set(grudge.get(n, [])) for n in names}


@pytest.mark.parametrize("seed", range(20))
def test_partition_shapes(seed):
    rng = random.Random(seed)
    comps = halves(NODES5, rng)
    assert sorted(map(len, comps)) == [2, 3] and sorted(sum(comps, [])) == NODES5
    ring = majorities_ring(NODES5, rng)
    sees = _sees(ring, NODES5)
    assert all(len(s) == 3 and n in s for n, s in sees.items())  # each sees a majority
    assert len({frozenset(s) for s in sees.values()}) == 5  # no two the same one
    assert all(b in sees[a] for a in NODES5 for b in sees[a])  # symmetric cuts
    br = bridge(NODES5, rng)
    hub = [n for n, cut in br.items() if not cut]
    assert len(hub) == 1 and all(len(v) == 2 for n, v in br.items() if n != hub[0])


def test_grudge_from_components():
    assert grudge_from_components([["n1"], ["n2", "n3"]]) == {
        "n1": ["n2", "n3"],
        "n2": ["n1"],
        "n3": ["n1"],
    }


def test_who_holds_now_from_client_records(tmp_path):
    from zkjepsen.store import RunDir

    run_dir = RunDir(tmp_path)

    def write(i, recs):
        run_dir.client_dir(i).mkdir(parents=True, exist_ok=True)
        run_dir.client_history(i).write_text("".join(json.dumps(r) + "\n" for r in recs))

    write(0, [{"f": "acquire", "type": "ok"}])  # the runner's own session: never a target
    write(1, [{"f": "acquire", "type": "invoke"}, {"f": "acquire", "type": "ok"}])
    write(2, [{"f": "acquire", "type": "ok"}, {"f": "release", "type": "invoke"}])
    write(3, [{"f": "acquire", "type": "invoke"}])
    write(4, [])
    run_dir.client_history(4).write_text('{"f": "acquire", "type": "ok"}\n{"f": "rel')
    holding = LiveHistory.of_run(run_dir).holding()
    assert sorted(holding.holders) == [1, 4]  # a cut last line is ignored
    assert holding.queue == (3,)  # its acquire is in flight


def _fake_ctx():
    from types import SimpleNamespace

    from zkjepsen.nemesis.targets import NemesisContext

    nodes = [SimpleNamespace(name=f"n{i}", ip=f"10.0.0.1{i}") for i in (1, 2, 3)]
    handles = [SimpleNamespace(index=1, name="c1", ip="10.0.0.101")]
    ens = SimpleNamespace(nodes=nodes, run_id="zkj-20261122000000-abcd", leader=lambda: nodes[0])
    return NemesisContext(ens, SimpleNamespace(handles=handles, run_dir=None, live=None))


def test_partition_rules_cut_both_directions_on_both_sides():
    from zkjepsen.nemesis import partition

    ctx = _fake_ctx()
    kind = FAULTS["partition-leader"]
    targets, detail = kind.resolve(ctx, None, random.Random(0), {})
    assert targets == ["n1"]
    rules = kind.impl.rules(ctx, targets, detail)
    assert rules["n1"] == [
        ["-s", "10.0.0.12", "-j", "DROP"],
        ["-d", "10.0.0.12", "-j", "DROP"],
        ["-s", "10.0.0.13", "-j", "DROP"],
        ["-d", "10.0.0.13", "-j", "DROP"],
    ]
    assert rules["n2"] == [["-s", "10.0.0.11", "-j", "DROP"], ["-d", "10.0.0.11", "-j", "DROP"]]
    assert (
        partition.chain_name(ctx.run_id) == ctx.run_id and len(partition.chain_name("x" * 40)) <= 28
    )


def test_isolate_client_rules_live_in_the_client_only():
    ctx = _fake_ctx()
    kind = FAULTS["isolate-client"]
    targets, detail = kind.resolve(ctx, "client:1", random.Random(0), {})
    rules = kind.impl.rules(ctx, targets, detail)
    assert list(rules) == ["c1"] and len(rules["c1"]) == 6


def test_isolate_client_all_cuts_every_running_client():
    from types import SimpleNamespace

    ctx = _fake_ctx()
    ctx.pool.handles.append(SimpleNamespace(index=2, name="c2", ip="10.0.0.102"))
    for h in ctx.pool.handles:
        h.status = lambda: "running"
    kind = FAULTS["isolate-client"]
    targets, detail = kind.resolve(ctx, "all", random.Random(0), {})
    rules = kind.impl.rules(ctx, targets, detail)
    assert targets == ["c1", "c2"] and detail["chosen"] == "all"
    assert rules["c1"] == rules["c2"] and len(rules["c2"]) == 6


def test_fault_target_and_max_faults_combinators():
    base = g.standard(["kill-client", "pause-client"], time_limit_s=120, interval_s=5)
    plain = planned_tables(base, 7)
    aimed = planned_tables(g.fault_target("random", base), 7)
    # Same plan (the combinator draws nothing from the RNG), every fault re-aimed.
    assert [{**p, "target": "random"} if p["f"] != "heal" else p for p in plain] == aimed
    capped = planned_tables(g.max_faults(2, base), 7)
    assert [p for p in capped if p["f"] != "heal"] == [p for p in plain if p["f"] != "heal"][:2]
    assert capped[-1]["f"] != "heal" and len(plain) > 3  # cut before the 3rd: no final heal
    assert planned_tables(g.max_faults(0, base), 7) == []


def test_on_carries_a_trigger_into_the_plan_and_reads_back_as_calls():
    from zkjepsen.nemesis.triggers import on_acquire, on_session

    gen = g.steps(
        g.sleep(4),
        g.on(on_acquire(delay_s=0.1), g.fault("pause-client", duration="1.5x")),
        g.on(on_session("SUSPENDED", client=2), g.fault("kill-one", target="n1")),
    )
    planned = planned_tables(gen, seed=1, env=g.Env(session_timeout_s=2.0))
    assert planned[0]["trigger"] == {"kind": "acquired", "k": 1, "delay_s": 0.1}
    assert planned[0]["target"] == "trigger" and planned[0]["at_s"] == 4.0
    assert planned[1]["target"] == "n1" and planned[1]["trigger"]["state"] == "SUSPENDED"
    assert g.schedule_text(gen) == (
        "steps(\n    sleep(4),\n"
        "    on(on_acquire(delay_s=0.1), fault('pause-client', duration='1.5x')),\n"
        "    on(on_session(client=2, state='SUSPENDED'), fault('kill-one', target='n1')),\n)"
    )
