"""The MariaDB backend against a real MariaDB 10.11 server in Docker (issue 51), kept short: one
server for the module serves the lock's own check (the real recipe and PyMySQL, from here) and
`client check` of the template; then two runs of a few seconds, each on its own server as every
run has: the GET_LOCK lock without a fault, and an isolated holder whose connection the server
drops while it still believes it holds."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from killed_runs import labelled
from template_check import check_template

from zkjepsen.backends.mariadb.session import MariaDBSession
from zkjepsen.backends.registry import make_backend
from zkjepsen.backends.session import Fenced
from zkjepsen.docker import resources
from zkjepsen.recipes import make_recipe
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec

pytestmark = pytest.mark.integration
SPEC = SimpleNamespace(nodes=1, params={}, tick_ms=500, service=None)


@pytest.fixture(scope="module")
def mdb(docker_client, mariadb_image, zk_image, tmp_path_factory):
    store = tmp_path_factory.mktemp("mariadb")
    backend = make_backend(
        "mariadb",
        SPEC,
        store,
        client=docker_client,
        engine=resources.DEFAULT_ENGINE,
        server_image=mariadb_image,
        client_image=zk_image,
    )
    with backend:
        yield backend
    assert labelled(docker_client, backend.run_id) == ([], [])
    assert "ready for connections" in (store / "nodes" / "n1" / "stdout.log").read_text()


def _session(mdb) -> MariaDBSession:
    s = mdb.host_session(4.0)
    s.start()
    return s


def test_a_killed_connection_frees_the_lock_silently_and_the_fence_refuses_its_holder(mdb):
    """The server's settings took; A holds, B waits in vain; the server ends A's connection
    (as it does a cut-off client's): B gets the lock, A still believes, and once B wrote, the
    resource refuses A's older token."""
    settings = mdb.sql("SELECT @@version, @@tcp_keepalive_time, @@innodb_flush_log_at_trx_commit")
    version, keepalive, flush = settings.split()
    assert version.startswith("10.11.") and (keepalive, flush) == ("2", "1")
    a, b = _session(mdb), _session(mdb)
    a.create("/it/res", b"")
    lock_a = make_recipe("mariadb-get-lock", a, "/it/lock", identifier="client-1")
    lock_b = make_recipe("mariadb-get-lock", b, "/it/lock", identifier="client-2")
    try:
        got_a = lock_a.acquire(1.0)
        assert got_a is not None and lock_a.holding()
        assert lock_b.acquire(1.0) is None and not lock_b.holding()  # GET_LOCK answered 0
        assert a.fenced_set("/it/res", b"a1", -1, got_a.token).version == 1
        mdb.sql(f"KILL CONNECTION {lock_a.conn.thread_id()}")
        got_b = lock_b.acquire(5.0)
        assert got_b is not None and got_b.token > got_a.token
        assert lock_a.holding()  # nothing told A
        assert b.fenced_set("/it/res", b"b1", -1, got_b.token).version == 2
        with pytest.raises(Fenced):
            a.fenced_set("/it/res", b"a-stale", -1, got_a.token)
        assert a.get("/it/res")[0] == b"b1"
    finally:
        for lock in (lock_a, lock_b):
            lock.close()
        a.stop()
        b.stop()


def test_client_check_passes_the_template_against_the_modules_server(
    mdb, zk_image, tmp_path, monkeypatch
):
    """`client check --backend mariadb` of docs/templates/mariadb_lock.py in a client
    container, as a run mounts it, against the module's server (--hosts)."""
    monkeypatch.chdir(tmp_path)  # the check's folder: store/client-check/
    out = check_template("mariadb", mdb.connect_string(), "mariadb_lock.py")
    assert out.exit_code == 0, out.output
    assert "conforms" in out.output


def _run(store_root: Path, hold_s: float | None = None, **kw) -> object:
    hold = {"hold_s": hold_s, "hold_fixed": True} if hold_s else {}
    spec = TestSpec(
        recipe="mariadb-get-lock",
        workload="lock",
        clients=3,
        recovery_s=2,
        params={"resource": "fenced", **hold},
        seed=7,
        **kw,
    )
    run = run_test(spec, store_root)
    assert run.spec.backend == "mariadb"
    return run


def test_the_lock_excludes_without_a_fault(store_root):
    run = _run(store_root, time_limit_s=5)
    lock = run.results["lock"]
    assert run.results["exercised"]["valid"] is True, run.results["exercised"]
    assert lock["belief_overlap_count"] == 0, lock
    assert run.valid is True, run.results


def test_an_isolated_holder_keeps_believing_after_the_server_dropped_it(store_root):
    """At 2 s isolate-client cuts the holder (each holds 8 s) for 8 s; the server's keepalives
    end its lock connection within ~5 s, GET_LOCK frees the lock silently, a waiter takes it
    while the holder still holds: a belief overlap, while the fence keeps the resource in order.
    (Holds of 0.2 s, the default, are often over before the cut lands: nothing to split.)"""
    run = _run(
        store_root,
        time_limit_s=12,
        nemesis=["isolate-client"],
        fault_trigger="time",
        interval_s=2,
        fault_duration_s=8,
        hold_s=8,
    )
    lock = run.results["lock"]
    assert lock["belief_overlap_count"] > 0, lock
    assert run.results["fencing"]["valid"] is True, run.results["fencing"]
    assert run.valid is False
