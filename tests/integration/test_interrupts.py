"""Ctrl-C and SIGTERM in the middle of a run leave nothing behind (and heal every fault)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from zkjepsen.harness import resources

ZKJEPSEN = [sys.executable, "-m", "zkjepsen.cli"]


def _wait_for_new_run(client, before: set[str], role: str, count: int, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for rid, run in resources.find_runs(client).items():
            if rid in before:
                continue
            roles = [c["Labels"].get(resources.ROLE_LABEL) for c in run.containers]
            if roles.count(role) >= count:
                return rid
        time.sleep(0.2)
    pytest.fail(f"no new run with {count} {role} containers within {timeout}s")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_during_a_faulty_run_removes_everything(sig, docker_client, zk_image, tmp_path):
    before = set(resources.find_runs(docker_client))
    proc = subprocess.Popen(
        [*ZKJEPSEN, "test", "--recipe", "kazoo", "--workload", "lock", "--nemesis",
         "partition-halves", "--nodes", "3", "--clients", "3", "--time-limit", "120",
         "--store", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run_id = _wait_for_new_run(docker_client, before, "client", 3)
    time.sleep(4)  # into the main phase, clients running (a partition may be in place)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in err
    flt = {"label": f"{resources.RUN_LABEL}={run_id}"}
    assert docker_client.containers.list(all=True, filters=flt) == []
    assert docker_client.networks.list(filters=flt) == []
    assert not (resources.SCRATCH_ROOT / run_id).exists()
