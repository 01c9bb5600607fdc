"""The power-loss layer under a real PostgreSQL 15 (issue 34): one writer commits row after row
(autocommit: each INSERT is acknowledged once PostgreSQL says COMMIT) while the layer drops
what was not fsynced, then the server is killed and boots again on what is left.
strict (fsync=on, synchronous_commit=on): every acknowledged commit is there after recovery.
relaxed (synchronous_commit=off): the layer dropped bytes (lost_bytes > 0). ~20 s each."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import docker.errors
import psycopg
import pytest

from zkjepsen.backends.postgres.service import PostgresSettings
from zkjepsen.backends.registry import make_backend
from zkjepsen.docker import resources

pytestmark = pytest.mark.integration
WRITE_S = 2.0  # commits before the power loss: a few hundred on this machine


def _writer(host: str, acked: list[int], stop: threading.Event) -> None:
    """Insert rows 0, 1, 2...; a row goes into `acked` once its commit was acknowledged."""
    try:
        with psycopg.connect(host=host, user="postgres", autocommit=True, connect_timeout=10) as c:
            for i in range(1_000_000):
                if stop.is_set():
                    return
                c.execute("INSERT INTO zkjepsen_kv (path, data) VALUES (%s, 'x')", (f"/p{i}",))
                acked.append(i)
    except psycopg.Error:
        return  # the power went: the connection ends


def _rows(host: str) -> set[str]:
    with psycopg.connect(host=host, user="postgres", autocommit=True, connect_timeout=10) as c:
        return {r[0] for r in c.execute("SELECT path FROM zkjepsen_kv")}


@pytest.mark.parametrize("fsync", ["strict", "relaxed"])
def test_a_power_loss_keeps_acknowledged_commits_only_when_commits_wait_for_the_wal(
    docker_client, pg_image, zk_image, tmp_path, fsync
):
    spec = SimpleNamespace(nodes=1, params={}, service=PostgresSettings(fsync=fsync))
    pg = make_backend(
        "postgres",
        spec,
        tmp_path,
        client=docker_client,
        engine=resources.DEFAULT_ENGINE,
        server_image=pg_image,
        client_image=zk_image,
    )
    pg.power_layer = True
    with pg:
        node = pg.nodes[0]
        commit = pg.psql("SHOW synchronous_commit").strip()
        pg.power(node, "sync")  # what start-up wrote is on disk
        acked: list[int] = []
        stop = threading.Event()
        writer = threading.Thread(target=_writer, args=(node.ip, acked, stop), daemon=True)
        writer.start()
        time.sleep(WRITE_S)
        before = set(acked)  # acknowledged before the power loss began
        counts = pg.power(node, "drop")
        try:
            pg.kill(node)
        except docker.errors.APIError:  # it ended itself: PANIC at the failing disk's fsync
            assert pg.state(node) != "running"
        stop.set()
        writer.join(timeout=30)
        pg.restart(node)
        pg.wait_ready(60)
        after = _rows(node.ip)
        fresh = pg.power(node, "stat")  # the new boot's layer
    assert resources.leftovers(docker_client, pg.run_id) == []
    assert commit == ("off" if fsync == "relaxed" else "on")
    assert before and fresh["dead"] == 0 and counts, (len(before), fresh, counts)
    lost = {i for i in before if f"/p{i}" not in after}
    print(f"{fsync}: {len(before)} acknowledged, {len(lost)} lost, layer dropped {counts}")
    if fsync == "strict":
        assert not lost, sorted(lost)[:10]  # each commit's WAL was fsynced before its ack
    else:
        assert counts.get("lost_bytes", 0) > 0, counts  # {"unanswered": 1}: the drop was not heard
