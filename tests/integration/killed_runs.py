"""Shared by the tests that SIGKILL a zkjepsen process mid-`cluster up` and check `cleanup`:
find the new run, list what it left."""

from __future__ import annotations

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


def new_run_with_members(client, before: set[str], timeout: float = 60) -> str | None:
    """The id of a run not in `before` once it has a server or client container; not its
    file-system probe, which the run removes itself as it starts, so it may be gone by the
    time the test kills the process."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for rid, run in resources.find_runs(client).items():
            roles = [(c.get("Labels") or {}).get(resources.ROLE_LABEL) for c in run.containers]
            if rid not in before and any(r != "probe" for r in roles):
                return rid
        time.sleep(0.05)
    return None
