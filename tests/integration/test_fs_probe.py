"""Two filesystem probes of one run back to back (`client check --in-image` without --hosts
probes once for its own check, then its ensemble probes again): each probe container has its
own name, so the second is not refused while the first is still being removed in the
background (409 Conflict, 3 of 12 tries under load before)."""

from __future__ import annotations

import time

from zkjepsen.docker import mounts, resources


def test_two_probes_of_one_run_back_to_back(docker_client, zk_image, tmp_path):
    run_id = resources.new_run_id()
    try:
        for i in range(3):  # no pause: the earlier probes are still being removed
            assert mounts.shares_filesystem(docker_client, zk_image, run_id, tmp_path / str(i))
        deadline = time.monotonic() + 30
        while resources.leftovers(docker_client, run_id) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert resources.leftovers(docker_client, run_id) == []  # each removed its own probe
    finally:
        resources.remove_run(docker_client, run_id)
