"""A replay names the faults it replays in the order its spec gave them, whatever order they
ran in (two lanes start in their timing's order: CI's run of test_pytest_plugin replayed
pause-client + partition-one as partition-one + pause-client)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from zkjepsen.run.recording import record_schedule
from zkjepsen.spec import TestSpec

KINDS = ["pause-client", "partition-one", "kill-client", "clock-skew-client"]


def _ran(names: list[str]) -> dict[str, list[dict[str, object]]]:
    return {
        "faults": [
            {"f": n, "start_ns": 1000 * i, "end_ns": 1000 * i + 500, "targets": []}
            for i, n in enumerate(names)
        ]
    }


def test_two_lanes_that_ran_in_the_other_order_keep_the_spec_s_names():
    spec = TestSpec(recipe="kazoo", nemesis=["pause-client", "partition-one"])
    record_schedule(spec, None, _ran(["partition-one", "pause-client"]))
    assert spec.nemesis == ["pause-client", "partition-one"]
    assert spec.generator is None


def test_a_spec_that_names_a_fault_twice_replays_it_named_once():
    spec = TestSpec(recipe="kazoo", nemesis=["pause-client", "pause-client", "kill-client"])
    record_schedule(spec, None, _ran(["kill-client", "pause-client"]))
    assert spec.nemesis == ["pause-client", "kill-client"]


@given(
    named=st.permutations(KINDS).map(lambda p: p[:3]),
    order=st.permutations(KINDS),
    extra=st.booleans(),
)
def test_the_names_are_the_spec_s_that_ran_then_the_others_as_they_ran(named, order, extra):
    ran = [k for k in order if k in named or (extra and k not in named)]
    spec = TestSpec(recipe="kazoo", nemesis=list(named))
    record_schedule(spec, None, _ran(ran))
    assert sorted(spec.nemesis) == sorted(ran)  # exactly what ran, once each
    mine = [n for n in spec.nemesis if n in named]
    assert mine == [n for n in named if n in ran]  # the spec's order, not the run's
    others = [n for n in spec.nemesis if n not in named]
    assert others == [n for n in ran if n not in named]
    assert spec.nemesis[: len(mine)] == mine  # the spec's names first


def test_a_schedule_with_no_faults_is_named_none():
    spec = TestSpec(recipe="kazoo", nemesis=["pause-client"])
    record_schedule(spec, None, {"faults": []})
    assert spec.nemesis == ["none"]
