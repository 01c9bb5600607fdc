"""`zkjepsen list workloads` shows each workload's parameters with their defaults
(workloads/params.py WORKLOAD_PARAMS); these hold the table to the code that reads them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from zkjepsen.client.loop import WORKLOADS as LOOP_WORKLOADS
from zkjepsen.client.loop import LockLoop
from zkjepsen.workloads import WORKLOADS
from zkjepsen.workloads.params import KNOWN, WORKLOAD_PARAMS, params_line


def test_every_workload_lists_known_parameters() -> None:
    assert set(WORKLOAD_PARAMS) == set(WORKLOADS)
    for workload, pairs in WORKLOAD_PARAMS.items():
        for name, _ in pairs:
            assert name in KNOWN, (workload, name)
    assert "property=belief" in params_line("lock") and "hold_s=0.2" in params_line("lock")


@pytest.mark.parametrize("workload", sorted(LOOP_WORKLOADS))
def test_the_client_loop_uses_the_listed_defaults(workload: str) -> None:
    listed = dict(WORKLOAD_PARAMS[workload])
    client = SimpleNamespace(ready_files=False)
    modes = {"read": client, "write": client} if workload == "rwlock" else None
    loop = LockLoop(SimpleNamespace(params={}), client, workload, modes)
    seen = {
        "resource": loop.resource_mode,
        "hold_s": loop.hold_s,
        "hold_fixed": loop.fixed,
        "think_s": loop.think_s,
        "acquire_timeout_s": loop.timeout_s,
        "read_frac": loop.read_frac,
        "lock_path": loop.lock,
        "resource_path": loop.resource,
        "counter_path": loop.resource,
    }
    if workload in ("lock", "election"):
        seen["writes"] = loop.writes
    for name, value in seen.items():
        if name in listed:
            assert listed[name] == value, (workload, name)
