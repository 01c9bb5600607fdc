"""Two of benchmarks/zoo's programs on a real ZooKeeper, each with the schedule its .toml names
(issue 50): the lock that does not list the queue again after the node ahead goes splits, and
the lock verdict says the split is beyond a lease's nature (a queued waiter was killed: nobody
was frozen or cut off); the fenced correct control, judged by effect, does not break. The
other programs are benchmarks/zoo/run_zoo.py's to run (each a minute or more)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from zkjepsen.run.resolve import spec_from_json
from zkjepsen.run.runner import run_test

ZOO = Path(__file__).resolve().parents[2] / "benchmarks" / "zoo"


def zoo_run(name: str, store: Path):
    table = tomllib.loads((ZOO / f"{name}.toml").read_text())
    spec = spec_from_json({**table, "client_dir": str(ZOO), "seed": 3})
    return run_test(spec, store)


def test_no_relist_splits_beyond_a_leases_nature(zk_image, store_root, tmp_path):
    os.chmod(tmp_path, 0o755)
    run = zoo_run("zk_no_relist", store_root)
    lock = run.results["lock"]
    assert lock["valid"] is False and lock["beyond_lease_count"] >= 1, lock
    assert any(b["nature"] == "defect" for b in lock["belief_overlaps"]), lock


def test_the_fenced_control_holds_by_effect(zk_image, store_root, tmp_path):
    os.chmod(tmp_path, 0o755)
    run = zoo_run("zk_control_fenced", store_root)
    assert run.results["lock"]["valid"] is True, run.results["lock"]
    assert run.results["lock"]["effect_overlap_count"] == 0
    assert run.results["power"]["opportunities"] >= 1, run.results["power"]  # a fault landed
