"""The PostgreSQL backend against a real PostgreSQL 15 server in Docker: up, down, crash
cleanup, and the three PostgreSQL locks driven through the client wire protocol by the real
service driver (psycopg) in a client container, mounted as a run mounts it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from killed_runs import labelled, new_run_with_members

from zkjepsen.backends.registry import make_backend
from zkjepsen.client.pool import client_library_binds, package_bind
from zkjepsen.docker import resources

ZKJEPSEN = [sys.executable, "-m", "zkjepsen.cli"]
SPEC = SimpleNamespace(nodes=1, params={}, tick_ms=500, service=None)


def new_backend(docker_client, pg_image, zk_image, store):
    return make_backend(
        "postgres",
        SPEC,
        store,
        client=docker_client,
        engine=resources.DEFAULT_ENGINE,
        server_image=pg_image,
        client_image=zk_image,
    )


@pytest.fixture(scope="module")
def pg(docker_client, pg_image, zk_image, tmp_path_factory):
    with new_backend(docker_client, pg_image, zk_image, tmp_path_factory.mktemp("pg")) as b:
        yield b


def test_up_serves_queries_and_down_leaves_nothing(docker_client, pg_image, zk_image, tmp_path):
    cluster = new_backend(docker_client, pg_image, zk_image, tmp_path)
    with cluster:
        containers, networks = labelled(docker_client, cluster.run_id)
        assert len(containers) == 1 and len(networks) == 1
        assert all(c.labels[resources.RUN_LABEL] == cluster.run_id for c in containers)
        assert cluster.psql("SELECT version()").startswith("PostgreSQL 15.")
        # The schema is there before any client starts, and the keepalive settings took.
        assert cluster.psql("SELECT count(*) FROM zkjepsen_kv").strip() == "0"
        assert cluster.psql("SHOW tcp_keepalives_idle", tcp=True).strip() == "2"
        assert cluster.leader() == cluster.nodes[0]
    containers, networks = labelled(docker_client, cluster.run_id)
    assert containers == [] and networks == []
    assert not cluster.scratch.exists()
    log = (tmp_path / "nodes" / "n1" / "stdout.log").read_text()
    assert "database system is ready to accept connections" in log


def test_cluster_up_killed_mid_way_is_cleaned_up(docker_client, pg_image, tmp_path):
    proc = subprocess.Popen(
        [*ZKJEPSEN, "cluster", "up", "--backend", "postgres", "--store", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    run_id = new_run_with_members(docker_client, proc)
    assert run_id, "the subprocess never created a container"
    os.kill(proc.pid, signal.SIGKILL)  # no chance to clean up after itself
    proc.wait()
    assert labelled(docker_client, run_id)[0], "SIGKILL should have left the server behind"
    out = subprocess.run([*ZKJEPSEN, "cleanup"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"removed {run_id}" in out.stdout
    assert labelled(docker_client, run_id) == ([], [])


# A script run inside a client container: two driver processes A and B (the real driver, real
# psycopg), a scripted sequence of requests, and the answers printed as one JSON object.
SCRIPT = r"""
import json, subprocess, sys
import psycopg

kind, servers = sys.argv[1], sys.argv[2]
procs, ids, out = {}, {}, {}

def start(name, client):
    procs[name] = subprocess.Popen(
        ["python3", "-m", "zkjepsen.workloads.driver.service", "pg-" + kind],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ids[name] = 0
    return call(name, "init", protocol=1, servers=servers, session_timeout_ms=4000,
                client=client, workload="lock", lock_path="/it/" + kind, params={})

def call(name, op, **kw):
    ids[name] += 1
    p = procs[name]
    p.stdin.write(json.dumps({"id": ids[name], "op": op, **kw}) + "\n")
    p.stdin.flush()
    while True:
        msg = json.loads(p.stdout.readline())
        if "in_reply_to" in msg:
            return [msg["type"], msg.get("value"), msg.get("error")]

def terminate(client):
    with psycopg.connect(host=servers.split(":")[0], user="postgres", autocommit=True) as c:
        return c.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = %s", (f"zkjepsen-client-{client}-lock",)).fetchone()[0]

res = "/it/res-" + kind
out["init"] = [start("A", 1)[0], start("B", 2)[0]]
out["a_acq"] = call("A", "acquire", timeout_ms=1000)
out["b_acq_held"] = call("B", "acquire", timeout_ms=1200)
out["holding"] = [call("A", "holding")[1], call("B", "holding")[1]]
out["a_write"] = call("A", "write", path=res, data="a1", version=-1, fenced=True)
out["a_badversion"] = call("A", "write", path=res, data="x", version=99, fenced=False)
out["a_rel"] = call("A", "release")
out["a_fenced_after_release"] = call("A", "write", path=res, data="late", version=-1, fenced=True)
out["b_acq"] = call("B", "acquire", timeout_ms=6000)
# The server ends B's lock connection (B is not told): does A get the lock, does B still
# believe, and does the resource refuse B's older token once A wrote?
out["terminated"] = terminate(2)
out["a_acq2"] = call("A", "acquire", timeout_ms=6000)
if out["a_acq2"][0] == "ok":
    out["a_write2"] = call("A", "write", path=res, data="a2", version=-1, fenced=True)
out["b_holding_after"] = call("B", "holding")[1]
out["b_fenced"] = call("B", "write", path=res, data="b-stale", version=-1, fenced=True)
out["b_unfenced"] = call("B", "write", path=res, data="b-blind", version=-1, fenced=False)
out["read"] = call("A", "read", path=res, sync=False)
for n in ("A", "B"):
    out["close_" + n] = call(n, "close")[0]
    procs[n].wait(10)
print(json.dumps(out))
"""


def run_script(docker_client, pg, kind: str, tmp_path: Path) -> dict:
    (tmp_path / "script.py").write_text(SCRIPT)
    # The resource row, as the workload's setup creates it through the host session.
    session = pg.host_session(4.0)
    session.start()
    try:
        session.create(f"/it/res-{kind}", b"")
    finally:
        session.stop()
    where = pg.client_endpoint(1)
    api = docker_client.api
    cid = api.create_container(
        where.image,
        entrypoint=["python3", "/t/script.py", kind, pg.connect_string()],
        labels=resources.labels(pg.run_id, "client"),
        environment={
            "PYTHONPATH": "/opt/zkjepsen/src:/opt/zkjepsen/site",
            "PYTHONDONTWRITEBYTECODE": "1",
        },
        host_config=api.create_host_config(
            binds={
                # As client/pool.py mounts them in a run's client containers.
                **package_bind(),
                **client_library_binds(),
                str(tmp_path): {"bind": "/t", "mode": "ro"},
            }
        ),
        networking_config=api.create_networking_config(
            {where.network: api.create_endpoint_config(ipv4_address=where.ip)}
        ),
    )["Id"]
    try:
        api.start(cid)
        code = api.wait(cid, timeout=120)["StatusCode"]
        stdout = api.logs(cid, stdout=True, stderr=False).decode()
        stderr = api.logs(cid, stdout=False, stderr=True).decode()
    finally:
        api.remove_container(cid, force=True)
    assert code == 0, stderr[-2000:]
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", ["for-update", "advisory"])
def test_session_locks_exclude_and_a_terminated_holder_still_believes(
    docker_client, pg, kind, tmp_path
):
    out = run_script(docker_client, pg, kind, tmp_path)
    assert out["init"] == ["ok", "ok"]
    assert out["a_acq"][0] == "ok"
    assert out["b_acq_held"][:1] == ["fail"] and out["b_acq_held"][2] == "timeout"
    assert out["holding"] == [True, False]
    assert out["a_write"][0] == "ok" and out["a_badversion"][:1] == ["fail"]
    assert out["a_rel"][0] == "ok"
    assert out["a_fenced_after_release"] == ["fail", None, "Fenced"]
    tok_a, tok_b = out["a_acq"][1]["token"], out["b_acq"][1]["token"]
    assert out["b_acq"][0] == "ok" and tok_b > tok_a
    # The server ended B's connection: the lock went with it, A takes it with a larger token.
    assert out["terminated"] == 1
    assert out["a_acq2"][0] == "ok" and out["a_acq2"][1]["token"] > tok_b
    assert out["a_write2"][0] == "ok"
    # B was not told: it still believes (the flaw), the fence refuses its older token, an
    # unguarded write lands (atomicity lost without fencing).
    assert out["b_holding_after"] is True
    assert out["b_fenced"] == ["fail", None, "Fenced"]
    assert out["b_unfenced"][0] == "ok"
    assert out["read"][1]["data"] == "b-blind"


def test_insert_lock_outlives_its_holders_connection(docker_client, pg, tmp_path):
    out = run_script(docker_client, pg, "insert", tmp_path)
    assert out["a_acq"][0] == "ok" and out["b_acq_held"][:1] == ["fail"]
    assert out["holding"] == [True, False]
    assert out["a_rel"][0] == "ok" and out["b_acq"][0] == "ok"
    # Ending B's connection does not free the row: A cannot get the lock.
    assert out["terminated"] == 1
    assert out["a_acq2"][:1] == ["fail"] and out["a_acq2"][2] == "timeout"
    assert out["b_holding_after"] is True
    claims = "SELECT count(*) FROM zkjepsen_lock_claims WHERE name = '/it/insert'"
    assert pg.psql(claims) == "1\n"
