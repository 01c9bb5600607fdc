"""Lanes (nemesis/generator.lanes): faults on timelines of their own, run side by side - the
gate's trigger per client - and the `settled` trigger that arms a server fault only once the
service is whole again. Pure planning, and the executor with a fake fault family (no Docker)."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

import pytest

from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import instant, kind
from zkjepsen.nemesis import NoTargets, arming, schedule
from zkjepsen.nemesis import generator as g
from zkjepsen.nemesis.executed import FaultOp
from zkjepsen.nemesis.family import FaultFamily
from zkjepsen.nemesis.faults import FAULTS, BoundFault
from zkjepsen.nemesis.triggers import Trigger, on_acquire
from zkjepsen.run.gate import gate_specs, scenario_names
from zkjepsen.run.resolve import fault_generator, validate_spec
from zkjepsen.run.spec import TestSpec
from zkjepsen.store import RunDir


def planned_tables(*args, **kw):  # a plan as schedule.json's "planned" holds it
    return [p.to_json() for p in g.plan(*args, **kw)]


def test_each_lane_keeps_its_own_timeline_and_ids_are_stable():
    gen = g.lanes(
        g.steps(g.sleep(1), g.once(g.Fault("kill-one", duration=2)), g.sleep(1),
                g.once(g.Fault("kill-one", duration=2))),
        g.steps(g.sleep(0.5), g.once(g.Fault("pause-client", duration=3))),
    )  # fmt: skip
    planned = planned_tables(g.phases(gen, g.final_heal()), seed=1)
    faults = [p for p in planned if p["f"] != "heal"]
    # Lane 0 at 1 s and 4 s; lane 1 at 0.5 s: on its own clock, not after lane 0's faults.
    assert [(p["fault_id"], p.get("lane", 0), p["at_s"]) for p in faults] == [
        (1, 0, 1.0),
        (2, 1, 0.5),
        (3, 0, 4.0),
    ]
    assert planned[-1] == {"f": "heal", "at_s": 6.0}  # after every lane's faults
    assert planned_tables(g.phases(gen, g.final_heal()), seed=1) == planned  # same ids every time
    # One lane: a plan reads exactly as before lanes existed (no "lane" key).
    one = planned_tables(g.steps(g.sleep(1), g.once(g.Fault("kill-one", duration=2))), seed=1)
    assert "lane" not in one[0]


def test_standard_with_a_trigger_per_client_makes_one_lane_each():
    triggers = [on_acquire(client=c, retries=10) for c in (1, 2, 3)]
    gen = g.standard(["pause-client"], time_limit_s=10, interval_s=1, lane_triggers=triggers)
    planned = planned_tables(gen, seed=7, env=g.Env(session_timeout_s=1.0))
    faults = [p for p in planned if p["f"] != "heal"]
    by_lane: dict[int, set] = {}
    for p in faults:
        by_lane.setdefault(p.get("lane", 0), set()).add(p["trigger"]["client"])
        assert p["target"] == "trigger"
    assert by_lane == {0: {1}, 1: {2}, 2: {3}}
    assert [p["f"] for p in planned].count("heal") == 1 and planned[-1]["f"] == "heal"


def test_executed_faults_of_lanes_read_back_into_their_lanes():
    faults = [
        {"fault_id": 1, "f": "kill-one", "start_ns": int(1e9), "end_ns": int(3e9), "lane": 0},
        {"fault_id": 2, "f": "kill-one", "start_ns": int(2e9), "end_ns": int(4e9), "lane": 1},
    ]
    items = g.executed_items([FaultOp.from_json(f) for f in faults])
    planned = planned_tables(lambda rng, env: iter(items), seed=0)
    # The second starts at 2 s on its own lane, not after the first ended at 3 s.
    assert [(p["at_s"], p.get("lane", 0)) for p in planned] == [(1.0, 0), (2.0, 1)]
    table = FaultOp.from_json(faults[1]).replay_ready().to_json()
    assert table["lane"] == 1
    assert "lane" not in FaultOp.from_json(faults[0]).replay_ready().to_json()


def test_a_settled_trigger_reads_back_and_older_ones_read_as_before():
    t = on_acquire(retries=10, settled=True)
    assert Trigger.from_json(t.to_json()) == t and t.to_json()["settled"] is True
    assert "settled" not in on_acquire(retries=10).to_json()
    assert "settled=True" in t.describe()


class Clock(SimpleNamespace):
    """A fake fault family recording when each target's fault went in and came out."""

    family = FaultFamily("fake", heal=lambda ctx, everything: [], rank=0)

    def resolve(self, ctx, target, rng, params):
        return [target], {}

    def apply(self, ctx, targets, detail):
        with self.lock:
            self.calls.append(("apply", targets[0], time.monotonic()))

    def undo(self, ctx, targets, detail):
        with self.lock:
            self.calls.append(("undo", targets[0], time.monotonic()))


@pytest.fixture
def clock(monkeypatch):
    fam = Clock(calls=[], lock=threading.Lock())
    monkeypatch.setitem(
        FAULTS,
        "kill-one",
        BoundFault(kind("kill-one", "process", "one", "fake", instant(), observer="killed"), fam),
    )
    healed: list[int] = []
    monkeypatch.setattr(
        schedule, "heal_context", lambda ctx, everything=False: healed.append(1) or []
    )
    ens = SimpleNamespace(nodes=[], run_id="zkj-test", leader=lambda: None)
    return fam, healed, ens


def _nemesis(ens, tmp_path, gen, stop=None, limit=3.0):
    plan = schedule.NemesisPlan([], seed=1, time_limit_s=limit, t0_ns=time.monotonic_ns(), gen=gen)
    return schedule.run_nemesis(ens, None, plan, files=RunDir(tmp_path), stop_event=stop)


def test_lanes_run_side_by_side_and_all_heal(clock, tmp_path):
    fam, healed, ens = clock
    gen = g.phases(
        g.lanes(
            g.once(g.Fault("kill-one", target="n1", duration=1.5)),
            g.steps(g.sleep(0.2), g.once(g.Fault("kill-one", target="n2", duration=0.2))),
        ),
        g.final_heal(),
    )
    executed = _nemesis(ens, tmp_path, gen)
    at = {(what, who): t for what, who, t in fam.calls}
    # n2's fault went in and came out while n1's was on: one nemesis would have waited.
    assert at[("apply", "n1")] < at[("apply", "n2")] < at[("undo", "n2")] < at[("undo", "n1")]
    assert healed == [1] and sorted(e.fault_id or 0 for e in executed) == [1, 2]
    sched = json.loads((tmp_path / "schedule.json").read_text())
    assert {f["fault_id"]: f.get("lane", 0) for f in sched["faults"]} == {1: 0, 2: 1}
    recs = [json.loads(x) for x in (tmp_path / "nemesis.jsonl").read_text().splitlines()]
    assert sorted((r["value"]["fault_id"], r["value"]["phase"]) for r in recs) == [
        (1, "end"), (1, "start"), (2, "end"), (2, "start"),
    ]  # fmt: skip


def test_a_stop_ends_every_lanes_fault_then_heals(clock, tmp_path):
    fam, healed, ens = clock
    stop = threading.Event()

    def ask() -> None:
        with fam.lock:
            fam.calls.append(("stop", "", 0.0))
        stop.set()

    threading.Timer(1.0, ask).start()
    gen = g.lanes(
        g.once(g.Fault("kill-one", target="n1", duration=30)),
        g.once(g.Fault("kill-one", target="n2", duration=30)),
    )
    executed = _nemesis(ens, tmp_path, gen, stop=stop, limit=60)
    assert sorted((e.targets or ("",))[0] for e in executed) == ["n1", "n2"]
    assert healed == [1] and [c[0] for c in fam.calls].count("undo") == 2
    # In this order: both faults went in, the stop was asked, both were undone (not at 30 s).
    assert [c[0] for c in fam.calls] == ["apply", "apply", "stop", "undo", "undo"]


def test_an_error_in_one_lane_ends_the_others_heals_and_is_raised(clock, tmp_path):
    fam, healed, ens = clock

    def boom(ctx, target, rng, params):
        if target == "n2":
            raise RuntimeError("resolve failed")
        return [target], {}

    fam.resolve = boom
    gen = g.lanes(
        g.once(g.Fault("kill-one", target="n1", duration=30)),
        g.steps(g.sleep(0.1), g.once(g.Fault("kill-one", target="n2", duration=1))),
    )
    with pytest.raises(RuntimeError, match="resolve failed"):
        _nemesis(ens, tmp_path, gen, limit=60)
    assert healed == [1] and [c[:2] for c in fam.calls] == [("apply", "n1"), ("undo", "n1")]


def test_await_settled_waits_for_the_backend_to_be_whole():
    answers = iter([False, RuntimeError("mid-restart"), False, True])

    def whole():
        a = next(answers)
        if isinstance(a, Exception):
            raise a
        return a

    ctx = SimpleNamespace(backend=SimpleNamespace(whole=whole))
    far = time.monotonic_ns() + int(60e9)
    assert arming.await_settled(ctx, threading.Event(), far) is True
    assert next(answers, "done") == "done"  # asked until it said so
    never = SimpleNamespace(backend=SimpleNamespace(whole=lambda: False))
    stop = threading.Event()
    stop.set()
    assert arming.await_settled(never, stop, far) is False
    # A backend that cannot say is taken as whole (Redis, PostgreSQL: nothing to wait for).
    assert arming.await_settled(SimpleNamespace(backend=object()), stop, far) is True


def _spec(**kw):
    base = dict(recipe="kazoo", workload="lock", nodes=3, clients=3, time_limit_s=20)
    return TestSpec(**{**base, **kw})


def test_acquired_each_gives_a_lane_per_client_and_server_faults_a_settled_trigger():
    spec = _spec(nemesis=["pause-client"], fault_trigger="acquired-each", interval_s=1)
    validate_spec(spec)
    planned = planned_tables(fault_generator(spec, spec.nemesis), seed=1)
    lanes = {p.get("lane", 0): p["trigger"]["client"] for p in planned if p["f"] != "heal"}
    assert lanes == {0: 1, 1: 2, 2: 3}
    kills = _spec(nemesis=["kill-leader"], fault_trigger="acquired", fault_target="leader")
    validate_spec(kills)
    planned = planned_tables(fault_generator(kills, kills.nemesis), seed=1)
    assert all(p["trigger"].get("settled") for p in planned if p["f"] != "heal")
    pauses = _spec(nemesis=["pause-client"], fault_trigger="acquired")
    planned = planned_tables(fault_generator(pauses, pauses.nemesis), seed=1)
    assert not any(p["trigger"].get("settled") for p in planned if p["f"] != "heal")


def test_acquired_each_is_refused_for_faults_not_aimed_at_the_holder():
    spec = _spec(nemesis=["pause-client", "kill-leader"], fault_trigger="acquired-each")
    with pytest.raises(BadInput, match="acquired-each.*not kill-leader"):
        validate_spec(spec)


def test_the_gate_faults_each_client_on_its_own_acquires_and_waits_for_a_whole_ensemble():
    names = scenario_names(None)
    specs = dict(zip(names, gate_specs({"recipe": "kazoo"}, names, 0.1), strict=True))
    for name in ("client-pause", "client-cut"):  # two locks of three clients each
        assert specs[name].fault_trigger == "acquired-each"
        assert specs[name].clients == 6 and specs[name].params["locks"] == 2
    # What the user sets wins: one client, one lock.
    (one,) = gate_specs({"recipe": "kazoo", "clients": 1}, ["client-cut"], 0.1)
    assert one.clients == 1 and one.params["locks"] == 1
    kill = specs["leader-kill"]
    assert kill.fault_trigger == "acquired" and kill.fault_target == "leader"
    assert kill.clients == 6 and kill.params["locks"] == 2
    # ZooKeeper's leader kills restart the server inside its container (docker/supervise.py),
    # at once; a restart the user chose wins.
    assert kill.service.restart == "process" and kill.fault_duration_s == 0.1  # configured
    assert all(specs[n].service.restart is None for n in ("client-pause", "client-cut"))
    (mine,) = gate_specs(
        {"recipe": "kazoo", "service": {"name": "zookeeper", "restart": "container"}},
        ["leader-kill"],
        0.1,
    )
    assert mine.service.restart == "container"
    planned = planned_tables(fault_generator(kill, kill.nemesis), seed=1)
    assert planned[0]["trigger"]["settled"] is True


def test_with_several_locks_each_client_takes_its_own_lock_and_resource():
    from zkjepsen.client.loop import all_paths, client_params

    params = {"locks": 2, "resource": "fenced"}
    assert all_paths("lock", params) == [
        ("/zkjepsen/lock-0", "/zkjepsen/resource-0"),
        ("/zkjepsen/lock-1", "/zkjepsen/resource-1"),
    ]
    mine = [client_params("lock", params, c) for c in (1, 2, 3, 4)]
    assert [(m["lock_path"], m["resource_path"]) for m in mine] == [
        ("/zkjepsen/lock-0", "/zkjepsen/resource-0"),
        ("/zkjepsen/lock-1", "/zkjepsen/resource-1"),
        ("/zkjepsen/lock-0", "/zkjepsen/resource-0"),
        ("/zkjepsen/lock-1", "/zkjepsen/resource-1"),
    ]
    assert client_params("lock", mine[0], 1) == mine[0]  # taken twice: the same
    assert client_params("lock", {"resource": "fenced"}, 3) == {"resource": "fenced"}
    assert all_paths("counter", params) == [("/zkjepsen/lock", "/zkjepsen/counter")]
    for other in ("ping", "register", "queue", "counter"):  # no lock path of theirs to split
        assert client_params(other, params, 2) == params


def test_several_locks_are_refused_where_they_would_not_be_independent():
    with pytest.raises(BadInput, match="locks=2 needs the lock or election workload"):
        validate_spec(_spec(workload="counter", params={"locks": 2}))
    with pytest.raises(BadInput, match="at least as many"):
        validate_spec(_spec(clients=1, params={"locks": 2}))
    validate_spec(_spec(params={"locks": 3}))


def test_a_fault_with_nothing_to_act_on_is_recorded_and_the_lane_goes_on(clock, tmp_path):
    """A fault whose clients had exited at its time (NoTargets) is not a crash of the run: it
    is listed as unresolved in schedule.json and the lane's next fault still runs."""
    fam, healed, ens = clock
    resolve = fam.resolve

    def some_gone(ctx, target, rng, params):
        if target == "gone":
            raise NoTargets("no running client to target")
        return resolve(ctx, target, rng, params)

    fam.resolve = some_gone
    gen = g.phases(
        g.steps(
            g.once(g.Fault("kill-one", target="gone", duration=0.1)),
            g.sleep(0.1),
            g.once(g.Fault("kill-one", target="n2", duration=0.1)),
        ),
        g.final_heal(),
    )
    executed = _nemesis(ens, tmp_path, gen, limit=2.0)
    assert [e.targets for e in executed] == [("n2",)]
    assert [c[:2] for c in fam.calls] == [("apply", "n2"), ("undo", "n2")]
    sched = json.loads((tmp_path / "schedule.json").read_text())
    (skipped,) = sched["unresolved"]
    assert skipped["fault_id"] == 1 and "no running client" in skipped["why"], skipped
    assert healed == [1]
