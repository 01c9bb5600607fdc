"""Shared by the tests that SIGKILL a zkjepsen process mid-`cluster up` and check `cleanup`:
find the new run, list what it left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from zkjepsen.docker import resources


def labelled(client, run_id: str) -> tuple[list, list]:
    """(containers, networks) carrying the run's label; a container removed while listing is
    skipped (the run's own probe comes and goes as it starts)."""
    flt = {"label": f"{resources.RUN_LABEL}={run_id}"}
    return (
        client.containers.list(all=True, filters=flt, ignore_removed=True),
        client.networks.list(filters=flt),
    )


def new_run_with_members(client, proc: subprocess.Popen, timeout: float = 60) -> str | None:
    """The id of the run `proc` started (its pid is the run's owner: on a shared engine other
    users' runs start meanwhile) once it has a server or client container; not its file-system
    probe, which the run removes itself as it starts, so it may be gone by the time the test
    kills the process."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for rid, run in resources.find_runs(client).items():
            if not any(o.split(":")[0] == str(proc.pid) for o in run.owners):
                continue
            roles = [(c.get("Labels") or {}).get(resources.ROLE_LABEL) for c in run.containers]
            if any(r != "probe" for r in roles):
                return rid
        time.sleep(0.05)
    return None


ZKJEPSEN = [sys.executable, "-m", "zkjepsen.cli"]


def killed_then_cleaned(client, argv: list[str]) -> None:
    """Start `zkjepsen ARGV`, SIGKILL it once its run has a member (no chance to clean up after
    itself), and check that `zkjepsen cleanup RUN_ID` removes every container and network the
    run left."""
    proc = subprocess.Popen([*ZKJEPSEN, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    run_id = new_run_with_members(client, proc)
    assert run_id, "the subprocess never created a container"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(2)  # dockerd may finish creates that were in flight
    assert labelled(client, run_id)[0], "SIGKILL should have left containers behind"
    out = subprocess.run(
        [*ZKJEPSEN, "cleanup", run_id], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert f"removed {run_id}" in out.stdout
    assert labelled(client, run_id) == ([], [])
