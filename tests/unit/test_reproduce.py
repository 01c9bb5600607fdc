"""Replay/shrink logic without a cluster: kinds, retargeting, candidate generation, the emitted
pytest file."""

from __future__ import annotations

import ast
import dataclasses

from zkjepsen.cli.minimal import emit_pytest
from zkjepsen.nemesis import generator as g
from zkjepsen.nemesis.executed import FaultOp
from zkjepsen.reproduce.replay import faults_for_replay, violation_kinds
from zkjepsen.reproduce.shrink import Candidate, ShrinkResult, candidates, triggered
from zkjepsen.run.spec import TestSpec
from zkjepsen.run.stored import StoredRun
from zkjepsen.store import RunDir


def planned_tables(*args, **kw):  # a plan as schedule.json's "planned" holds it
    return [p.to_json() for p in g.plan(*args, **kw)]


S = 1_000_000_000


def replayed(faults: list[dict], **kw):
    """faults_for_replay of schedule.json tables, read back as a stored run reads them."""
    return faults_for_replay([FaultOp.from_json(f) for f in faults], **kw)


def fault(fid, f, start, length, chosen="holder", targets=("c2",)):
    return {
        "fault_id": fid,
        "f": f,
        "target": None,
        "targets": list(targets),
        "detail": {"chosen": chosen},
        "params": {},
        "duration": "1.5x",
        "start_ns": int(start * S),
        "end_ns": int((start + length) * S),
    }


def stored(tmp_path, faults, violation_at=20.0, fault_ids=(2,)):
    results = {
        "valid": False,
        "lock": {
            "valid": False,
            "belief_overlap_count": 1,
            "effect_overlap_count": 0,
            "belief_overlaps": [
                {
                    "clients": [1, 2],
                    "start": int((violation_at - 1) * S),
                    "end": int(violation_at * S),
                    "faults": [{"fault_id": i, "f": "pause-client"} for i in fault_ids],
                }
            ],
        },
        "counter": {"valid": True, "lost": 0},
    }
    spec = TestSpec(
        recipe="kazoo",
        workload="counter",
        nemesis=["pause-client", "kill-one"],
        clients=8,
        time_limit_s=60,
    )
    return StoredRun(RunDir(tmp_path), spec, {"faults": [f.to_json() for f in faults]}, results)


def test_violation_kinds():
    assert violation_kinds(
        {
            "lock": {"valid": False, "belief_overlap_count": 3, "effect_overlap_count": 1},
            "counter": {"valid": False, "lost": 2},
            "queue": {"valid": False},
            "fencing": {"valid": True},
        }
    ) == {"lock:belief", "lock:effect", "counter:lost", "queue"}


def test_role_targets_are_reaimed_and_identities_kept():
    out = replayed(
        [
            fault(1, "pause-client", 5, 4),
            fault(2, "kill-one", 9, 4, chosen="random", targets=["n2"]),
        ]
    )
    assert out[0].targets is None and out[0].target == "holder"
    assert out[1].targets == ("n2",)
    assert replayed([fault(1, "pause-client", 5, 4)], retarget=False)[0].targets == ("c2",)


def test_candidates_drop_late_faults_first_then_try_the_guilty_fault_alone(tmp_path):
    faults = replayed(
        [
            fault(1, "pause-client", 5, 4),
            fault(2, "pause-client", 15, 4),
            fault(3, "kill-one", 40, 4, chosen="random", targets=["n1"]),
        ]
    )
    run = stored(tmp_path, faults)
    current = Candidate(run.spec, faults, "original")
    cs = candidates(run, current)
    assert cs[0].why == "drop faults after the violation"
    assert [f.fault_id for f in cs[0].faults] == [1, 2]
    assert cs[0].spec.time_limit_s == 22.0  # last kept fault ends at 19 s, plus the margin
    alone = [c for c in cs if c.why.startswith("only")]
    assert [f.fault_id for f in alone[0].faults] == [2]  # active during the violation
    assert any(c.why == "half the clients" and c.spec.clients == 4 for c in cs)
    timed = next(c for c in alone if not any(f.trigger for f in c.faults))
    shifted = next(c for c in candidates(run, timed) if c.why.startswith("start"))
    assert shifted.faults[0].start_ns == 4 * S and shifted.spec.time_limit_s == 11.0


def test_emitted_pytest_file_shows_the_schedule_as_generator_calls(tmp_path):
    faults = replayed(
        [
            fault(2, "pause-client", 4, 4.5),
            fault(3, "kill-one", 12, 2, chosen="random", targets=["n1"]),
        ]
    )
    faults[0] = triggered(faults[0])
    run = stored(tmp_path, faults)
    res = ShrinkResult(Candidate(run.spec, faults, "x"), hits=3, tries=3)
    text = emit_pytest(res, run, "kazoo_counter")
    assert "json" not in text  # readable calls, not a blob
    assert "on(on_acquire(retries=10), fault('pause-client', duration=4.5))," in text
    assert "sleep(" in text and "fault('kill-one', target='n1', duration=2.0)," in text
    tree = ast.parse(text)
    assert any(
        isinstance(n, ast.FunctionDef) and n.name == "test_reproduce_kazoo_counter"
        for n in tree.body
    )
    ns: dict = {}
    exec(compile(tree, "t", "exec"), ns)  # noqa: S102 - our own generated file
    planned = planned_tables(ns["SCHEDULE"], seed=1)
    assert [(p["f"], p["target"], p.get("trigger")) for p in planned] == [
        ("pause-client", "trigger", {"kind": "acquired", "k": 1, "delay_s": 0.0, "retries": 10}),
        ("kill-one", "n1", None),
    ]
    assert planned[0]["at_s"] == 3.0  # armed a second before the original start
    assert ns["SPEC"].recipe == "kazoo" and ns["SPEC"].name == "reproduce-kazoo_counter"
    # Only what differs from the defaults is spelled, and it is still the same spec.
    spec_text = text.split("SPEC = read_spec(dict(")[1].split(")")[0]
    for default in ("image=None", "pin_clients=False", "client_cmd=None", "proxy=False"):
        assert default not in spec_text
    assert "workload='counter'" in spec_text and "clients=8" in spec_text
    assert ns["SPEC"] == dataclasses.replace(run.spec, name="reproduce-kazoo_counter")


def test_an_emitted_reproducer_keeps_each_fault_in_its_lane(tmp_path):
    faults = replayed(
        [
            fault(1, "partition-redlock", 4, 14, chosen=None, targets=["c2"]),
            {**fault(2, "kill-one", 7, 4, chosen="random", targets=["n1"]), "lane": 1},
        ]
    )
    run = stored(tmp_path, faults)
    text = emit_pytest(ShrinkResult(Candidate(run.spec, faults, "x"), 2, 3), run, "k")
    assert "import fault, lanes, sleep, steps" in text
    ns: dict = {}
    exec(compile(text, "t", "exec"), ns)  # noqa: S102 - our own generated file
    planned = planned_tables(ns["SCHEDULE"], seed=1)
    assert [(p["f"], p["at_s"], p.get("lane")) for p in planned] == [
        ("partition-redlock", 4.0, None),
        ("kill-one", 7.0, 1),
    ]


def test_shrink_offers_the_holder_fault_on_the_next_acquire(tmp_path):
    faults = replayed(
        [
            fault(1, "pause-client", 15, 4),
            fault(2, "kill-one", 5, 4, chosen="random", targets=["n1"]),
        ]
    )
    run = stored(tmp_path, faults, fault_ids=(1,))
    cs = candidates(run, Candidate(run.spec, faults, "original"))
    trig = [c for c in cs if "on the next acquire" in c.why]
    # Only the holder-aimed client fault: alone (offered first) and within the whole schedule.
    assert [len(c.faults) for c in trig] == [1, 2]
    assert trig[0].why.startswith("only pause-client, on the next acquire")
    f = next(f for f in trig[0].faults if f.trigger)
    assert f.target == "trigger" and f.targets is None and f.armed_ns == 14 * S
    assert "pause-client on_acquire(retries=10)+4.0s" in trig[0].summary()
    # A triggered fault replays re-armed (not re-timed), aimed at whom the event names.
    executed = {
        **f.to_json(),
        "targets": ["c4"],
        "detail": {"chosen": "explicit"},
        "fired": {"armed_ns": 14 * S, "event_ns": 16 * S},
    }
    again = replayed([executed])[0]
    assert again.trigger == f.trigger and again.armed_ns == 14 * S
    assert again.targets is None and again.target == "trigger"
    assert again.to_json()["trigger"] == f.trigger  # what the nemesis is given
    assert candidates(run, trig[0]) and not any(
        "on the next acquire" in c.why for c in candidates(run, trig[0])
    )
    # Its arm is not moved "earlier": times since the test's start include the setup.
    assert not any(c.why.startswith("start") for c in candidates(run, trig[0]))


def test_scenario_expectations_judge_from_results_only():
    from zkjepsen.reproduce.scenarios import SCENARIOS, Expectation

    belief = {"lock": {"valid": False, "belief_overlap_count": 2, "effect_overlap_count": 0}}
    fenced = SCENARIOS["client-pause-fenced"].expect["kazoo"]
    assert fenced.judge(False, belief)[0] is True
    broken = {"lock": {"valid": False, "belief_overlap_count": 2, "effect_overlap_count": 1}}
    assert fenced.judge(False, broken)[0] is False
    assert (
        SCENARIOS["client-pause"].expect["kazoo"].judge(True, {"lock": {"valid": True}})[0] is False
    )
    assert Expectation(valid=True).judge(True, {})[0] is True
    # Every expectation in the catalogue can fail: it asks for something or forbids something.
    for s in SCENARIOS.values():
        for e in s.expect.values():
            assert e.valid or e.present or e.absent, (s.name, e)


def test_triggered_scenarios_name_their_source_and_plan_their_schedule():
    from zkjepsen.nemesis import triggers
    from zkjepsen.reproduce.scenarios import SCENARIOS
    from zkjepsen.run.resolve import resolve

    triggered = [s for s in SCENARIOS.values() if s.schedule is not None]
    assert {"lost-create-response", "waiter-session-expiry"} <= {s.name for s in triggered}
    calls = {**vars(g), **vars(triggers)}
    for s in triggered:
        assert s.source and s.schedule_text().startswith(("steps(\n", "lanes(\n"))
        planned = planned_tables(s.schedule, seed=1)
        # A fault at a time is aimed at named clients or servers, never at a role (who holds
        # at 4 s differs every run): the others fire on their event.
        assert planned and all(
            p.get("trigger") or (p.get("target") or "").startswith(("client:", "n"))
            for p in planned
        ), s.name
        # What `scenario list` prints is the schedule: it plans the same faults, lanes included.
        assert planned_tables(eval(s.schedule_text(), calls), seed=1) == planned, s.name  # noqa: S307
        for recipe in s.expect:  # as it runs: proxy faults come with proxy = true
            spec = resolve(s.spec(recipe), s.schedule).spec
            assert set(spec.nemesis) == {p["f"] for p in planned}, s.name  # named after them
    assert "ZOOKEEPER-1262" in SCENARIOS["lost-create-response"].source
