"""memcached (issue 51) and tooz against real servers in Docker, kept short: one memcached server
for the module serves `client check` of the template and the locks' own checks (the wiki's
add/delete lock's documented flaw, and tooz's memcached driver with its heart beating, from
here); then tooz in short runs without a fault on two services, each on its own servers as every
run has (the library mounted into the client containers, the driver the backend's)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from killed_runs import labelled
from template_check import check_template

from zkjepsen.backends.memcached.session import MemcachedSession
from zkjepsen.backends.registry import make_backend
from zkjepsen.docker import resources
from zkjepsen.recipes import make_recipe
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec

pytestmark = pytest.mark.integration
SPEC = SimpleNamespace(nodes=1, params={}, tick_ms=500, service=None)


@pytest.fixture(scope="module")
def mc(docker_client, memcached_image, zk_image, tmp_path_factory):
    store = tmp_path_factory.mktemp("memcached")
    backend = make_backend(
        "memcached",
        SPEC,
        store,
        client=docker_client,
        engine=resources.DEFAULT_ENGINE,
        server_image=memcached_image,
        client_image=zk_image,
    )
    with backend:
        yield backend
    assert labelled(docker_client, backend.run_id) == ([], [])


def _session(mc) -> MemcachedSession:
    s = mc.host_session(1.0)
    s.start()
    return s


def test_the_wiki_lock_expires_under_its_holder_whose_release_frees_the_next(mc):
    """memcached-add with a 3 s expiry (memcached counts whole seconds: it ends 2-3 s after the
    add): B waits in vain while A holds; the key expires, B adds it while A still believes; A's
    late release deletes B's key, and C acquires beside B."""
    assert (mc.server_version(mc.nodes[0]) or "").startswith("1.6.")
    a, b, c = _session(mc), _session(mc), _session(mc)
    params = {"lock_ttl_s": 3.0}
    locks = [
        make_recipe("memcached-add", s, "/it/wiki", identifier=f"client-{i}", params=params)
        for i, s in enumerate((a, b, c), 1)
    ]
    try:
        got_a = locks[0].acquire(0.2)
        assert got_a is not None
        assert locks[1].acquire(0.2) is None
        got_b = locks[1].acquire(6.0)  # after the expiry
        assert got_b is not None and got_b.token > got_a.token
        assert locks[0].holding() and locks[1].holding()  # nothing told A
        locks[0].release()  # deletes B's key: the pattern has no owner check
        assert locks[2].acquire(0.5) is not None and locks[1].holding()
    finally:
        for s in (a, b, c):
            s.stop()


def test_toozs_memcached_lock_excludes_and_hands_over(mc):
    """tooz's memcached driver from here, its heart beating: B's bounded acquire gives up (tooz's
    retry helper raises RetryError: reported as not acquired) while A holds; once A releases,
    B acquires, with a later token."""
    a, b = _session(mc), _session(mc)
    kw = {"hosts": mc.connect_string(), "params": {"lock_ttl_s": 4.0}}
    lock_a = make_recipe("tooz", a, "/it/tooz", identifier="client-1", **kw)
    lock_b = make_recipe("tooz", b, "/it/tooz", identifier="client-2", **kw)
    try:
        assert lock_a.url == f"memcached://{mc.connect_string()}?lock_timeout=4"
        assert lock_a.coordinator.heart.is_alive()
        got_a = lock_a.acquire(1.0)
        assert got_a is not None
        assert lock_b.acquire(0.3) is None and not lock_b.holding()
        lock_a.release()
        got_b = lock_b.acquire(2.0)
        assert got_b is not None and lock_b.holding() and got_b.token > got_a.token
    finally:
        for lock in (lock_a, lock_b):
            lock.coordinator.stop()  # the process's coordinator (recipes/tooz.py), here ours
        a.stop()
        b.stop()


def test_client_check_passes_the_template_against_the_modules_server(
    mc, zk_image, tmp_path, monkeypatch
):
    """`client check --backend memcached` of docs/templates/memcached_lock.py in a client
    container, as a run mounts it, against the module's server (--hosts)."""
    monkeypatch.chdir(tmp_path)  # the check's folder: store/client-check/
    out = check_template("memcached", mc.connect_string(), "memcached_lock.py")
    assert out.exit_code == 0, out.output
    assert "conforms" in out.output


@pytest.mark.parametrize("backend", ["memcached", "redis"])
def test_tooz_excludes_without_a_fault(backend, store_root, memcached_image, redis_image):
    """The library as mounted into the clients, on the driver the backend chooses: every
    client acquires (exercised), nobody overlaps."""
    spec = TestSpec(
        recipe="tooz",
        backend=backend,
        workload="lock",
        clients=3,
        recovery_s=2,
        time_limit_s=5,
        params={"resource": "fenced"},
        seed=7,
    )
    run = run_test(spec, store_root)
    assert run.results["exercised"]["valid"] is True, run.results["exercised"]
    assert run.results["lock"]["belief_overlap_count"] == 0, run.results["lock"]
    assert run.valid is True, run.results
