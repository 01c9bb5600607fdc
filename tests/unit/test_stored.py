"""The store (file names, raw JSON) sits below every service; run/stored.py is its typed view."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from zkjepsen.backends.zookeeper.service import ZooKeeperSettings
from zkjepsen.errors import BadInput
from zkjepsen.run.spec import TestSpec
from zkjepsen.run.stored import StoredRun
from zkjepsen.store import RunDir

SRC = Path(__file__).resolve().parents[2] / "src" / "zkjepsen"


def test_the_store_imports_no_run_and_no_nemesis():
    mods: set[str] = set()
    for f in (SRC / "store").rglob("*.py"):
        tree = ast.parse(f.read_text())
        mods |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        mods |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert {m for m in mods if m.startswith("zkjepsen")} <= {
        "zkjepsen.errors",
        "zkjepsen.store.writable",
        "zkjepsen.store.regular",
    }


def test_a_saved_spec_table_loads_back_as_a_typed_run(tmp_path):
    d = RunDir(tmp_path)
    d.save_spec(
        TestSpec(
            recipe="kazoo",
            clients=3,
            backend="zookeeper",
            service=ZooKeeperSettings(version="3.8").settled(),
        ).to_json()
    )
    d.schedule.write_text(json.dumps({"faults": []}))
    run = StoredRun.load(tmp_path)
    assert (
        run.spec.clients == 3 and run.spec.service.version == "3.8" and run.schedule["faults"] == []
    )
    bad = {"f": "no-such-fault", "start_ns": 1, "end_ns": 2}
    d.schedule.write_text(json.dumps({"faults": [bad]}))
    with pytest.raises(BadInput, match=r"schedule.json: field 'faults\[0\]\.f' is \"no-such"):
        StoredRun.load(tmp_path)


def test_an_executed_fault_is_typed_and_writes_back_the_same_table():
    from zkjepsen.nemesis.executed import FaultOp, NotAFault

    table = {
        "fault_id": 3,
        "f": "pause-client",
        "target": "trigger",
        "targets": ["c2"],
        "detail": {"chosen": "trigger"},
        "params": {},
        "duration": 1.5,
        "start_ns": 5_000_000_000,
        "end_ns": 9_000_000_000,
        "trigger": {"kind": "acquired", "delay_s": 0.0, "retries": 10},
        "armed_ns": 4_000_000_000,
        "fired": {"armed_ns": 4_000_000_000, "event_ns": 4_900_000_000, "client": 2},
        "applied_ns": 5_200_000_000,
        "landed": True,
        "duration_s": 4.0,
    }
    f = FaultOp.from_json(table)
    assert (f.f, f.targets, (f.fired or {})["client"], f.landed) == (
        "pause-client",
        ("c2",),
        2,
        True,
    )
    assert f.to_json() == table
    with pytest.raises(NotAFault):
        FaultOp.from_json({**table, "end_ns": 1})
    # a key another version wrote is kept, and written back
    assert FaultOp.from_json({**table, "newer": [1]}).to_json() == {**table, "newer": [1]}
