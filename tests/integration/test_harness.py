"""The harness against a real ensemble: quorum, replication, failover, teardown, crash cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from kazoo.client import KazooClient
from killed_runs import labelled, new_run_with_members

from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble

ZKJEPSEN = [sys.executable, "-m", "zkjepsen.cli"]


def test_write_through_one_server_is_read_through_another(ensemble3):
    a, b = ensemble3.nodes[0], ensemble3.nodes[2]
    writer, reader = KazooClient(hosts=a.address), KazooClient(hosts=b.address)
    writer.start(timeout=10)
    reader.start(timeout=10)
    try:
        writer.create("/harness-rw", b"hello from n1", makepath=True)
        reader.sync("/harness-rw")
        assert reader.get("/harness-rw")[0] == b"hello from n1"
        # The client really talked to the server we pinned it to.
        assert reader._connection._socket.getpeername()[0] == b.ip
    finally:
        for c in (writer, reader):
            c.stop()
            c.close()


def test_exactly_one_leader_and_status(ensemble3):
    rows = ensemble3.status()
    assert sorted(r["mode"] for r in rows) == ["follower", "follower", "leader"]
    assert ensemble3.leader().name == next(r["node"] for r in rows if r["mode"] == "leader")
    assert all(r["position"].startswith("zxid 0x") for r in rows), rows  # ZooKeeper's own terms


def test_killed_leader_is_replaced_and_the_survivors_serve_writes(ensemble3):
    old = ensemble3.leader()
    assert old is not None
    ensemble3.kill(old)
    t0 = time.monotonic()
    # A bounded wait, not a timed assertion: 3x the harness's election limit (an election takes
    # well under it), so that a loaded machine cannot fail it; the time is printed.
    limit = 3 * ensemble3.spec.settings.election_limit_s
    new = None
    while time.monotonic() - t0 < limit:
        new = ensemble3.leader()
        if new is not None and new != old:
            break
        time.sleep(0.1)
    elapsed = time.monotonic() - t0
    assert new is not None and new != old, f"no new leader within {limit:.1f}s"
    # The survivors serve writes under the new leader.
    survivors = [n for n in ensemble3.nodes if n != old]
    zk = KazooClient(hosts=ensemble3.connect_string(survivors))
    zk.start(timeout=10)
    zk.create("/after-failover", b"x", makepath=True)
    zk.stop()
    zk.close()
    print(f"new leader {new.name} after {elapsed:.2f}s (limit {limit:.1f}s)")
    ensemble3.restart(old)  # leave the shared ensemble whole for the next test
    ensemble3.wait_for_quorum(60)


def test_down_leaves_nothing_with_the_run_label(docker_client, zk_image, tmp_path):
    ens = ZooKeeperEnsemble(EnsembleSpec(nodes=3, image=zk_image), tmp_path, client=docker_client)
    with ens:
        containers, networks = labelled(docker_client, ens.run_id)
        assert len(containers) == 3 and len(networks) == 1
    containers, networks = labelled(docker_client, ens.run_id)
    assert containers == [] and networks == []
    assert not ens.scratch.exists()
    assert (tmp_path / "nodes" / "n1" / "zookeeper.log").stat().st_size > 0  # logs kept


def test_runner_killed_mid_up_is_cleaned_up_and_only_it(
    docker_client, zk_image, tmp_path, ensemble3
):
    proc = subprocess.Popen(
        [*ZKJEPSEN, "cluster", "up", "--nodes", "3", "--store", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    run_id = new_run_with_members(docker_client, proc)
    assert run_id, "the subprocess never created a container"
    os.kill(proc.pid, signal.SIGKILL)  # no chance to clean up after itself
    proc.wait()
    containers, _ = labelled(docker_client, run_id)
    assert containers, "SIGKILL should have left containers behind"
    out = subprocess.run([*ZKJEPSEN, "cleanup"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"removed {run_id}" in out.stdout
    containers, networks = labelled(docker_client, run_id)
    assert containers == [] and networks == []
    # The live ensemble of this test session belongs to a running owner: cleanup kept it.
    assert len(labelled(docker_client, ensemble3.run_id)[0]) == 3


def test_cli_without_a_docker_engine_says_so_in_one_line(tmp_path):
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-such.sock"}
    out = subprocess.run(
        [*ZKJEPSEN, "cluster", "status"], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 255
    assert "Docker engine" in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["cluster", "up", "--nodes", "12"],
        ["test", "--bogus"],
        ["cluster", "up", "--image", "no/such:image"],
    ],
)
def test_bad_input_exits_254_with_one_sentence(argv):
    out = subprocess.run([*ZKJEPSEN, *argv], capture_output=True, text=True, timeout=60)
    assert out.returncode == 254, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
