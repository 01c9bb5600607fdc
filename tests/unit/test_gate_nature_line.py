"""A gate scenario that is invalid only by a lease's or a fault's nature says so on its line
(run/gate.py `nature_only`): the zoo's fenced Redis control under the gate's leader-kill, on
one Redis without persistence, reused fence tokens because the restart forgot the counter
(store/h4-gate, 2026-11-29); its line read as the lock's own reused tokens. The verdict stays
invalid. No Docker."""

from __future__ import annotations

from types import SimpleNamespace

from zkjepsen.checker.lease import LEASE
from zkjepsen.checker.nature import WORDS
from zkjepsen.run.gate import gate_specs, row_of

KILL = {"kind": "kill-leader", "fault_id": 1, "targets": ["n1"]}


def run_of(results: dict, valid=False):
    (spec,) = gate_specs({"recipe": "kazoo"}, ["leader-kill"], 0.1)
    early = {"stopped_early": True, "after_main_start_s": 7.3, "reason": "violation"}
    early["violation"] = {"kind": "reused-token", "clients": [6, 4]}
    results = {"valid": valid, "early_stop": early, **results}
    return SimpleNamespace(valid=valid, spec=spec, store_dir="/x", results=results)


def restarted(beyond: int) -> dict:
    """The fenced control's parts: the lock valid by effect (no split), fencing invalid by
    4 reused tokens, `beyond` of them beyond a fault's nature."""
    natures = [
        {"kind": "reused-token", "nature": "state-lost", "nature_fault": KILL} for _ in range(4)
    ]
    fencing = {"valid": False, "reused_token_count": 4, "natures": natures[: 4 - beyond]}
    fencing |= {"beyond_nature_count": beyond, "nature_counts": {"state-lost": 4 - beyond}}
    lock = {"valid": True, "belief_overlap_count": 0, "beyond_lease_count": 0}
    return {"lock": lock, "fencing": fencing, "power": {"line": "1 effect overlap in 1"}}


def test_a_scenario_invalid_only_by_a_restart_that_forgot_says_so():
    row = row_of("leader-kill", run_of(restarted(0)))
    assert row.valid is False
    assert row.line.startswith("stopped 7.3s in (violation); reused-token: clients [6, 4]")
    assert row.line.endswith(
        "; no defect of the lock seen: 4 a server that lost its state (kill-leader)"
    ), row.line


def test_a_scenario_with_a_defect_says_nothing_of_natures():
    assert "no defect" not in row_of("leader-kill", run_of(restarted(1))).line
    lock = {"valid": False, "belief_overlap_count": 2, "beyond_lease_count": 1}
    lock |= {"lease_split_count": 1, "nature_counts": {}}
    assert "no defect" not in row_of("client-pause", run_of({"lock": lock})).line


def test_unfenced_splits_all_of_a_lease_say_so_and_a_valid_run_never_does():
    lock = {"valid": False, "belief_overlap_count": 2, "beyond_lease_count": 0}
    lock |= {"lease_split_count": 2, "nature_counts": {}}
    row = row_of("client-pause", run_of({"lock": lock}))
    assert row.line.endswith(f"; no defect of the lock seen: 2 {WORDS[LEASE]}"), row.line
    fenced = {"valid": True, "belief_overlap_count": 49, "beyond_lease_count": 0}
    fenced |= {"lease_split_count": 49}
    assert "no defect" not in row_of("client-pause", run_of({"lock": fenced}, True)).line
