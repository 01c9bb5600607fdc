"""Did a fault land? `faultkinds.landing`, the one predicate the nemesis (its end record's and
schedule.json's `observed`) and the power line share: per family, what its nemesis saw at the
target decides, and anything else - a missing or failed observation, an apply that raised - is
a miss with why, never an exception (issue 47)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from landed import observation

from zkjepsen.faultkinds import KINDS, Landing, landing
from zkjepsen.faultkinds.landing import NO_OBSERVATION, OBSERVED_KEYS, OBSERVERS

ROLL_ERROR = "EnvironmentProblem: no upgrade from ZooKeeper 3.9.3; 3.8 has"


def end(targets, **detail):
    return {"fault_id": 1, "phase": "end", "targets": list(targets), "detail": detail}


def start(targets, **more):
    return {"fault_id": 1, "phase": "start", "targets": list(targets), **more}


def test_every_declared_fault_says_how_it_is_seen_to_land():
    for name, k in KINDS.items():
        assert k.power is None or k.observer in OBSERVERS, name
        if k.power is not None:  # and the helper the other tests use knows it
            targets = ["n1"]
            assert landing(name, start(targets), {**end(targets), **observation(name, targets)})


@pytest.mark.parametrize(
    "kind, targets, detail, why",
    [
        ("pause-client", ["c1"], {"frozen": []}, "never seen frozen"),
        (
            "pause-server",
            ["n1", "n2"],
            {"frozen": ["n1"], "not_frozen": {"n2": "exited"}},
            "never seen frozen (exited)",
        ),
        (
            "kill-one",
            ["n2"],
            {"killed": [], "not_killed": {"n2": "running"}},
            "never seen gone (running)",
        ),
        ("partition-leader", ["n1"], {"dropped": {"n1": 0, "n2": 0}}, "no packet dropped"),
        ("isolate-client", ["c1"], {"dropped": {}}, "counters not read"),
        (
            "partition-redlock-restart",
            ["c2"],
            {"dropped": {"c2": 40}, "restarted": False},
            "no cut client held: no master restarted",
        ),
        (
            "clock-skew-client",
            ["c1"],
            {"offset_s": 3600, "clock_seen": {"c1": {"offset_s": 0.0, "rate": 1.0}}},
            "clock not seen at the offset set",
        ),
        (
            "clock-rate-client",
            ["c1"],
            {"rate": 4.0, "clock_seen": {"c1": {"offset_s": 0.0, "rate": 3.9}}},
            "clock not seen at the rate set",
        ),
        ("clock-bump", ["n1"], {"offset_s": 9, "clock_seen": {}}, "clock never read"),
        (
            "power-loss-one",
            ["n1"],
            {"lost": {"n1": {"unanswered": 1}}, "booted": ["n1"]},
            "the power-loss layer did not answer",
        ),
        (
            "power-loss-all",
            ["n1", "n2"],
            {"lost": {"n1": {"lost_bytes": 3}, "n2": {"lost_bytes": 0}}, "booted": ["n1"]},
            "not seen booted again",
        ),
        (
            "corrupt-file",
            ["n1"],
            {"file": "log.1", "flipped_offsets": [], "booted": ["n1"]},
            "nothing in the file changed",
        ),
        (
            "member-remove",
            ["n2"],
            {"served": ["n1", "n2", "n3"], "intended": ["n1", "n3"]},
            "the configuration served is not the one asked for",
        ),
        (
            "rolling-upgrade",
            ["n2", "n3", "n1"],
            {
                "image": "zk:3.9",
                "versions": {"n1": "3.8.4", "n2": "3.8.4", "n3": "3.8.4"},
                "served": {"n2": "3.9.3", "n3": "3.9.3", "n1": "3.8.4"},
            },
            "a server still on its old version after its step",
        ),
        (
            "rolling-restart",
            ["n2", "n3", "n1"],
            {"served": {"n2": "3.8.4", "n3": None, "n1": "3.8.4"}},
            "a server not seen serving after its step",
        ),
        ("proxy-drop-pings", ["c1"], {"acted": []}, "the proxy never acted"),
        ("pg-terminate-holder", ["c1"], {"terminated": 0}, "no lock connection to end"),
    ],
)
def test_a_family_whose_observation_says_it_did_not_happen_missed(kind, targets, detail, why):
    assert landing(kind, start(targets), end(targets, **detail)) == Landing(False, why)
    # and without any observation: missed, for the reason that there is none
    assert landing(kind, start(targets), end(targets)) == Landing(False, NO_OBSERVATION)


def test_the_issues_failed_roll_is_missed_with_the_services_words():
    """The second planned rolling-upgrade of a run fails in its apply (there is no version after
    3.9): the nemesis records the error in the fault's end, and the roll is missed with it."""
    versions = {"n1": "3.9.3", "n2": "3.9.3", "n3": "3.9.3"}
    got = landing(
        "rolling-upgrade",
        start(["n2", "n3", "n1"]),
        {**end(["n2", "n3", "n1"], versions=versions), "error": ROLL_ERROR},
    )
    assert got == Landing(False, f"never went in: {ROLL_ERROR}")
    # a roll that stopped part way: which server, in its own words
    failed = {"node": "n3", "error": "EnvironmentProblem: the ensemble did not reach quorum"}
    got = landing("rolling-restart", start(["n2", "n3"]), end(["n2", "n3"], failed=failed))
    assert got.why == "n3 did not come back: EnvironmentProblem: the ensemble did not reach quorum"


def test_what_the_nemesis_saw_of_its_own_miss_comes_first():
    seen = observation("pause-client", ["c1"])["detail"]
    ok = end(["c1"], **seen)
    assert landing("pause-client", start(["c1"]), ok) == Landing(True, "seen frozen")
    assert not landing("pause-client", start(["c1"]), {**ok, "landed": False}).landed
    late = end(["c1"], **seen, holding_when_hit=False)
    assert landing("pause-client", start(["c1"]), late).why == "the holder had let go when hit"
    assert landing("pause-client", start(["c1"]), {}).why == "never ended"


def test_clock_agreement_is_within_one_percent_or_fifty_ms():
    def offset(want, got):
        d = {"offset_s": want, "clock_seen": {"n1": {"offset_s": got}}}
        return landing("clock-bump", start(["n1"]), end(["n1"], **d)).landed

    assert offset(3600, 3600 + 35.9) and not offset(3600, 3600 + 36.1)
    assert offset(2, 2.049) and not offset(2, 2.06)
    assert offset(-30, -30.2) and not offset(-30, 30)


def test_replays_do_not_inherit_an_observation():
    """Every key an observer reads is one the nemesis drops from a replayed fault's detail."""
    for k in ("frozen", "killed", "dropped", "clock_seen", "lost", "booted", "served", "acted"):
        assert k in OBSERVED_KEYS
    assert "terminated" in OBSERVED_KEYS and "holding_when_hit" in OBSERVED_KEYS


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
detail_keys = st.sampled_from([*OBSERVED_KEYS, "offset_s", "rate", "image", "versions"])


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(sorted(KINDS)),
    detail=st.dictionaries(detail_keys, json_values, max_size=6),
    targets=st.lists(st.sampled_from(["n1", "n2", "c1"]), max_size=3),
    error=st.none() | st.text(min_size=1, max_size=300),
)
def test_any_record_is_a_landing_with_a_short_why_never_an_exception(kind, detail, targets, error):
    got = landing(
        kind, start(targets), {**end(targets, **detail), **({"error": error} if error else {})}
    )
    assert isinstance(got, Landing) and isinstance(got.landed, bool)
    assert got.why and len(got.why) <= 160
    if error:
        assert not got.landed
