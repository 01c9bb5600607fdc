"""A schedule given as Python is recorded as what ran (nemesis/recorded.py, run/recording.py):
any generator, recorded into test.json and read back, plans the same faults; the run is named
after them; a replayed schedule names the replay."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zkjepsen.errors import BadInput
from zkjepsen.nemesis import generator as g
from zkjepsen.nemesis import recorded
from zkjepsen.nemesis import triggers as tr
from zkjepsen.nemesis.executed import FaultOp
from zkjepsen.run.resolve import resolve, spec_from_json
from zkjepsen.run.spec import TestSpec

# Faults a kazoo run on ZooKeeper takes (no proxy, no client clock: those need settings).
NAMES = ["pause-client", "kill-client", "isolate-client", "kill-leader", "kill-one",
         "partition-halves", "clock-bump", "clock-rate-leader"]  # fmt: skip
TARGETS = [None, "n1", "n2,n3", "client:2", "random", "leader", "holder", "minority"]
seconds = st.floats(0, 30, allow_nan=False).map(lambda x: round(x, 3))
durations = st.one_of(
    st.none(), seconds, st.integers(0, 20), st.sampled_from(["1.5x", "2x", "0.5x", "3"])
)
params = st.one_of(  # clock faults step whole seconds (run/readers.py refuses a fraction)
    st.fixed_dictionaries({}, optional={"offset_s": st.integers(-60, 60)}),
    st.fixed_dictionaries({}, optional={"rate": st.floats(0.1, 8), "period_s": seconds}),
    st.fixed_dictionaries({}, optional={"op": st.text(max_size=5)}),
)
triggers = st.one_of(
    st.builds(
        tr.on_acquire,
        client=st.one_of(st.none(), st.integers(1, 5)),
        k=st.integers(1, 3),
        delay_s=seconds,
        retries=st.integers(0, 10),
        settled=st.booleans(),
    ),
    st.builds(tr.on_release, client=st.one_of(st.none(), st.integers(1, 5)), delay_s=seconds),
    st.builds(tr.on_session, st.sampled_from(["SUSPENDED", "LOST"]), k=st.integers(1, 3)),
    st.builds(
        tr.on_invoke,
        st.sampled_from(["acquire", "write", "add"]),
        retries=st.integers(0, 3),
        waiting_in=st.sampled_from([None, "/zkjepsen/lock"]),
    ).filter(lambda t: t.f == "acquire" or not t.waiting_in),
    st.builds(tr.on_leader_change, k=st.integers(1, 2), delay_s=seconds),
)


def one_fault():
    return st.builds(
        lambda f, target, d, p: g.fault(f, target, d, **p),
        st.sampled_from(NAMES),
        st.sampled_from(TARGETS),
        durations,
        params,
    )


# Finite generators: an endless `fault(...)` only inside steps (its first item) or time_limit.
leaves = st.one_of(
    one_fault().map(lambda f: g.steps(f)),
    seconds.map(g.sleep),
    st.just(g.final_heal()),
    st.builds(
        lambda limit, interval, fs: g.time_limit(limit, g.stagger(interval, g.mix(*fs))),
        st.floats(1, 60),
        st.floats(0.5, 10),
        st.lists(one_fault(), min_size=1, max_size=3),
    ),
)
gens = st.recursive(
    leaves,
    lambda kids: st.one_of(
        st.lists(kids, min_size=1, max_size=4).map(lambda ks: g.steps(*ks)),
        st.lists(kids, min_size=1, max_size=3).map(lambda ks: g.lanes(*ks)),
        st.lists(kids, min_size=1, max_size=3).map(lambda ks: g.phases(*ks)),
        st.builds(g.on, triggers, kids),
        st.builds(g.delay, seconds, kids),
        st.builds(g.stagger, st.floats(0.1, 5), kids),
        st.builds(g.max_faults, st.integers(0, 4), kids),
        st.builds(g.fault_target, st.sampled_from(TARGETS[1:]), kids),
    ),
    max_leaves=8,
)


def kazoo(**kw) -> TestSpec:
    return TestSpec(recipe="kazoo", nodes=3, **kw)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gen=gens, seed=st.integers(0, 2**31), timeout=st.floats(1, 10))
def test_any_generator_recorded_and_read_back_plans_the_same(gen, seed, timeout):
    spec = kazoo(seed=seed, session_timeout_s=timeout)
    env = g.Env(timeout, spec.fault_duration_s)
    want = g.plan(gen, seed, env)
    resolve(spec, gen)
    # test.json, as the store writes it and a replay, a worker or a --config file reads it
    back = spec_from_json(json.loads(json.dumps(spec.to_json())))
    assert back.generator == spec.generator
    assert g.plan(resolve(back).generator, seed, env) == want
    names = list(dict.fromkeys(p.f for p in want if isinstance(p, FaultOp)))
    assert back.nemesis == spec.nemesis == (names or ["none"])


def test_a_generator_run_is_named_after_its_faults_and_replans_them():
    gen = g.lanes(
        g.steps(g.sleep(4), g.fault("partition-halves", duration=6.0)),
        g.steps(
            g.sleep(5),
            g.on(tr.on_acquire(client=2, retries=3), g.fault("pause-client", duration="1.5x")),
        ),
    )
    spec = kazoo()
    test = resolve(spec, gen)
    assert spec.nemesis == ["partition-halves", "pause-client"]
    assert spec.test_name == "kazoo-lock-partition-halves+pause-client"
    assert spec.generator == [
        {"sleep": 4},
        {"sleep": 5, "lane": 1},
        {"fault": "partition-halves", "duration": 6.0},
        {
            "fault": "pause-client",
            "target": "trigger",
            "duration": "1.5x",
            "trigger": {"kind": "acquired", "client": 2, "k": 1, "delay_s": 0.0, "retries": 3},
            "lane": 1,
        },
    ]
    assert test.faults == ["partition-halves", "pause-client"]


def test_a_spec_naming_other_faults_than_its_generator_is_refused():
    gen = g.steps(g.fault("kill-one", duration=1.0))
    with pytest.raises(
        BadInput, match="nemesis names pause-client, but the generator runs kill-one"
    ):
        resolve(kazoo(nemesis=["pause-client"]), gen)
    same = kazoo(nemesis=["kill-one"])
    resolve(same, gen)
    assert same.nemesis == ["kill-one"]
    # named in part: the rest of the generator's faults join them, the spec's first
    part = kazoo(nemesis=["pause-client"])
    resolve(part, g.steps(g.fault("kill-one", duration=1.0), g.fault("pause-client")))
    assert part.nemesis == ["pause-client", "kill-one"]
    # a generator recorded before and replaced: the new one names the run
    same2 = resolve(same, g.steps(g.fault("kill-leader", duration=1.0))).spec
    assert same2.nemesis == ["kill-leader"]


@pytest.mark.parametrize(
    ("table", "why"),
    [
        ({"sleep": -1}, "item 2: sleep must be a finite number"),
        ({"fault": "kill-one", "duration": "abc"}, "item 2: a fault's duration"),
        ({"fault": "kill-one", "trigger": {"kind": "nope"}}, "item 2: fault kill-one's trigger"),
        ({"fault": "kill-one", "lane": -1}, "item 2: lane must be"),
        ({"what": 1}, r"item 2: \['what'\] is not an item"),
        ({"fault": "no-such-fault"}, "generator runs unknown fault 'no-such-fault'"),
    ],
)
def test_a_bad_recorded_item_is_one_sentence_naming_it(table, why):
    raw = {**kazoo().to_json(), "generator": [{"sleep": 1}, table]}
    with pytest.raises(BadInput, match=why):
        resolve(spec_from_json(raw))


def test_params_that_json_would_change_are_refused_before_anything_runs():
    with pytest.raises(BadInput, match="do not read back from JSON"):
        resolve(kazoo(), g.steps(g.fault("clock-bump", offset_s=(1, 2))))


def test_a_replayed_schedule_names_the_replay_and_runs_no_generator():
    spec = kazoo()
    resolve(spec, g.steps(g.fault("kill-one", duration=1.0), g.fault("pause-client")))
    acquired = {"kind": "acquired"}
    executed = [
        {"fault_id": 2, "f": "pause-client", "start_ns": 9, "end_ns": 10, "trigger": acquired},
        {"fault_id": 1, "f": "kill-one", "start_ns": 5, "end_ns": 6},
    ]
    resolve(spec, schedule={"faults": executed})
    assert spec.nemesis == ["kill-one", "pause-client"] and spec.generator is None
    resolve(spec, schedule={"faults": []})
    assert spec.nemesis == ["none"]


def test_an_unbounded_generator_is_refused_not_recorded():
    with pytest.raises(BadInput, match="bound it with time_limit"):
        resolve(kazoo(), g.fault("kill-one"))


def test_fault_names_keep_first_appearance_order():
    tables = [{"fault": "b"}, {"sleep": 1}, {"fault": "a"}, {"fault": "b"}, {"heal": True}]
    assert recorded.fault_names(tables) == ["b", "a"]


executed_faults = st.lists(
    st.builds(
        lambda i, f, start, length, lane, trig, target, p: {
            "fault_id": i,
            "f": f,
            "target": target,
            "targets": ["c2"] if f == "pause-client" else ["n1"],
            "detail": {"chosen": target},
            "params": p,
            "duration": length,
            "start_ns": start,
            "end_ns": start + length,
            **({"lane": lane} if lane else {}),
            **({"trigger": trig.to_json(), "armed_ns": start // 2} if trig else {}),
        },
        st.integers(1, 50),
        st.sampled_from(NAMES),
        st.integers(0, 10**11),
        st.integers(0, 10**10),
        st.integers(0, 3),
        st.one_of(st.none(), triggers),
        st.sampled_from(TARGETS),
        params,
    ),
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(faults=executed_faults, retarget=st.booleans())
def test_a_replay_runs_each_executed_fault_again_in_its_lane_with_its_trigger(faults, retarget):
    """schedule.json -> a stored run's faults -> replay-ready -> what the nemesis is given:
    names, triggers, lanes, params and times survive (lanes were dropped here once)."""
    from zkjepsen.nemesis.executed import read_faults
    from zkjepsen.reproduce.replay import faults_for_replay

    stored = read_faults({"faults": json.loads(json.dumps(faults))})
    tables = [f.to_json() for f in faults_for_replay(stored, retarget)]
    # what run_nemesis plans from the schedule it is given
    planned = [f.replay_ready() for f in read_faults({"faults": json.loads(json.dumps(tables))})]
    key = ("f", "trigger", "params", "start_ns", "end_ns")
    want = sorted(faults, key=lambda f: f["start_ns"])
    assert [{k: p.to_json().get(k) for k in key} for p in planned] == [
        {k: f.get(k) for k in key} for f in want
    ]
    assert [p.lane for p in planned] == [f.get("lane") or 0 for f in want]


def test_a_shrink_candidate_names_its_own_faults_and_its_reproducer_runs(tmp_path):
    """A candidate with fewer faults than the generator run it came from: minimal/test.json
    and the emitted SPEC name its faults (not the original's) and hold no generator, so the
    emitted test's SPEC and SCHEDULE agree."""
    from zkjepsen.cli.minimal import emit_pytest
    from zkjepsen.reproduce.replay import faults_for_replay
    from zkjepsen.reproduce.shrink import Candidate, ShrinkResult
    from zkjepsen.run.stored import StoredRun
    from zkjepsen.store import RunDir

    spec = kazoo()
    resolve(spec, g.steps(g.sleep(2), g.fault("kill-one", duration=1.0), g.fault("kill-leader")))
    assert spec.nemesis == ["kill-one", "kill-leader"] and spec.generator
    kill = {"fault_id": 1, "f": "kill-one", "targets": ["n2"], "detail": {"chosen": "one"},
            "start_ns": 2_000_000_000, "end_ns": 3_000_000_000}  # fmt: skip
    faults = faults_for_replay([FaultOp.from_json(kill)])
    run = StoredRun(RunDir(tmp_path), spec, {"faults": [kill]}, {"valid": False})
    c = Candidate(spec, faults, "only kill-one")
    assert c.spec.nemesis == ["kill-one"] and c.spec.generator is None
    assert spec.nemesis == ["kill-one", "kill-leader"]  # the run's own spec is left alone
    ns: dict = {}
    exec(compile(emit_pytest(ShrinkResult(c, 2, 3), run, "k"), "t", "exec"), ns)  # noqa: S102
    emitted = resolve(ns["SPEC"], ns["SCHEDULE"]).spec
    assert emitted.nemesis == ["kill-one"] and emitted.generator == [
        {"sleep": 2.0},
        {"fault": "kill-one", "target": "n2", "duration": 1.0},
    ]
