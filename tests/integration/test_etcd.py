"""The etcd backend against real etcd 3.4.23 members in Docker (issue 25): up, healthy with one
leader from etcd's own status, a killed leader replaced and back; the revision fence refusing
a holder whose lease expired (directly, through etcd's transactions); the etcd3 PyPI client's
Lock driven end to end by real client containers, under no fault and with a paused holder
past its TTL, on the fenced resource (refused) and on an unguarded one (its writes land); and
`cleanup` after a SIGKILLed `zkjepsen test`. The pause runs are those of the findings' matrix
(20 s, 5 clients, a pause every ~3 s), where 10 of 10 runs of each showed what is asserted.
"""

from __future__ import annotations

import time
from collections import Counter
from types import SimpleNamespace

import pytest
from bounded import until
from killed_runs import killed_then_cleaned, labelled

from zkjepsen.backends.etcd import gateway
from zkjepsen.backends.plugin import SERVERS_IMAGE
from zkjepsen.backends.registry import make_backend, service_of
from zkjepsen.backends.session import Fenced
from zkjepsen.docker import resources
from zkjepsen.history import read_jsonl
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec


@pytest.fixture(scope="module")
def etcd3(docker_client, etcd_image, tmp_path_factory):
    """Three members shared by the module's cluster tests (they leave it healthy)."""
    b = make_backend(
        "etcd",
        SimpleNamespace(nodes=3, tick_ms=500, params={}, service=None),
        tmp_path_factory.mktemp("etcd3"),
        client=docker_client,
        engine=resources.DEFAULT_ENGINE,
        server_image=etcd_image,
        client_image=etcd_image,
    )
    with b:  # how soon it is up is benchmarks/etcd_ready.py's figure
        yield b
    assert labelled(docker_client, b.run_id) == ([], [])


def test_up_healthy_with_one_leader_from_etcds_own_status(etcd3):
    assert service_of("etcd").clients == SERVERS_IMAGE  # its clients run its servers' image
    assert [n.name for n in etcd3.nodes] == ["n1", "n2", "n3"]
    assert all(gateway.health(n.address) for n in etcd3.nodes)
    statuses = etcd3.statuses()
    assert len({s["leader"] for s in statuses.values()}) == 1  # every member names one leader
    roles = Counter(etcd3.role_of(n) for n in etcd3.nodes)
    assert roles == {"leader": 1, "follower": 2}
    assert etcd3.role_of(etcd3.leader()) == "leader"
    code, out = etcd3.exec(etcd3.nodes[0], ["etcdctl", "endpoint", "health"])  # etcd's own tool
    assert code == 0 and "is healthy" in out, out
    # `zkjepsen cluster status` attaches by the containers' labels, as etcd, not as ZooKeeper.
    from zkjepsen.cli.attach import attach

    rows = attach(etcd3.client, etcd3.run_id).status()
    assert Counter(row["mode"] for row in rows) == {"leader": 1, "follower": 2}
    assert all(row["position"].startswith("term ") for row in rows), rows  # etcd's raft log


def test_a_killed_leader_is_replaced_and_rejoins(etcd3):
    old = etcd3.leader()
    etcd3.kill(old)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        new = etcd3.leader()
        if new is not None and new != old:
            break
        time.sleep(0.2)
    assert new is not None and new != old
    etcd3.restart(old)
    etcd3.wait_ready(30)  # all three healthy again, agreeing on one leader
    assert etcd3.role_of(old) in ("leader", "follower")


def test_the_revision_fence_refuses_a_holder_whose_lease_expired(etcd3):
    s = etcd3.host_session(4.0)
    s.start(timeout=10)
    address = etcd3.nodes[0].address
    name = s.lock_key("/fence-test")
    key = s.fence_key
    assert name == "fence-test" and key == b"/locks/fence-test"
    s.create("/fence-res", b"{}")

    def hold(ttl: int) -> int:
        lease = gateway.call(address, "v3/lease/grant", {"TTL": str(ttl)}, 2)["ID"]
        body = {"key": gateway.b64(key), "value": gateway.b64("me"), "lease": lease}
        gateway.call(address, "v3/kv/put", body, 2)
        kvs = gateway.call(address, "v3/kv/range", {"key": gateway.b64(key)}, 2)["kvs"]
        return gateway.kv(kvs[0])["create_revision"]

    first = hold(2)
    assert s.fenced_set("/fence-res", b"first", -1, first).version == 1
    # The leader expires the lease (2 s) and the key goes with it.
    until(
        lambda: not gateway.call(address, "v3/kv/range", {"key": gateway.b64(key)}, 2).get("kvs"),
        what="the lease never expired",
        bound_s=15,
        poll_s=0.2,
    )
    with pytest.raises(Fenced, match=f"created at revision 0, not {first}"):
        s.fenced_set("/fence-res", b"stale", -1, first)  # nobody holds: refused
    second = hold(30)  # another holder
    assert second > first
    with pytest.raises(Fenced, match=f"created at revision {second}, not {first}"):
        s.fenced_set("/fence-res", b"stale", -1, first)  # the stale holder: refused
    assert s.fenced_set("/fence-res", b"second", 1, second).version == 2
    assert s.get("/fence-res")[0] == b"second"  # the refused writes changed nothing
    s.stop()


def test_the_lock_and_election_services_orphan_a_60_s_session_when_called_without_a_lease(
    etcd3,
):
    """etcd's v3lock and v3election services (issue 51), through the gateway: without a lease
    the member grants the lock key a lease of 60 s and keeps nothing alive (its TTL falls while
    it is held: the lock will end by itself 60 s after the grant, scenario
    etcd-v3lock-orphaned-session); with the client's own 2 s lease kept alive, the key outlives
    two TTLs. A released lock is free at once."""
    from zkjepsen.recipes import make_recipe

    s = etcd3.host_session(4.0)
    s.start(timeout=10)
    address = etcd3.nodes[0].address

    def lease_of(key: bytes) -> dict:
        kvs = gateway.call(address, "v3/kv/range", {"key": gateway.b64(key)}, 2).get("kvs")
        assert kvs, f"no key {key!r}"
        lease = gateway.field(kvs[0], "lease")
        return gateway.call(address, "v3/lease/timetolive", {"ID": lease}, 2)

    try:
        for name, path in (
            ("etcd-v3lock-nolease", "/t/v3lock"),
            ("etcd-v3election-nolease", "/t/v3election"),
        ):
            held = make_recipe(name, s, path, identifier="a", params={})
            assert held.acquire(5.0) is not None
            first = lease_of(held.key)
            assert gateway.num(first, "grantedTTL") == 60, first  # the server's own session
            time.sleep(2.5)  # an orphan: no keep-alive, so its TTL runs down
            assert gateway.num(lease_of(held.key), "TTL") < gateway.num(first, "TTL")
            held.release()
            again = make_recipe(name, s, path, identifier="b", params={})
            assert again.acquire(5.0) is not None  # released: free at once
            again.release()
        # 2 s: the shortest these members grant (etcd raises a TTL below its minimum, which
        # follows the election timeout: 1 s was granted as 2 s)
        kept = make_recipe("etcd-v3lock", s, "/t/v3lock-kept", params={"lock_ttl_s": 2.0})
        token = kept.acquire(5.0)
        assert token is not None and gateway.num(lease_of(kept.key), "grantedTTL") == 2
        time.sleep(5.0)  # two and a half TTLs: only the keep-alive thread keeps the key
        assert gateway.num(lease_of(kept.key), "TTL") > 0
        kept.release()
        kept.close()
    finally:
        s.stop()


def lock_spec(**kw) -> TestSpec:
    base = dict(recipe="etcd3-python", workload="lock", nodes=3, clients=4, seed=3)
    return TestSpec(**{**base, "recovery_s": 2, **kw})


def test_the_etcd3_lock_excludes_with_no_fault_and_every_client_acquires(etcd_image, store_root):
    run = run_test(lock_spec(time_limit_s=8), store_root)
    assert run.spec.backend == "etcd"
    assert run.valid is True, run.results
    lock = run.results["lock"]
    assert lock["belief_overlap_count"] == 0 and lock["holds"] > 8, lock
    ops = read_jsonl(run.store_dir / "history.jsonl").ops
    acquired = {o.client for o in ops if o.f == "acquire" and o.type == "ok"}
    assert acquired == {1, 2, 3, 4}


def paused_holder_spec(resource: str, seed: int = 3) -> TestSpec:
    return lock_spec(
        time_limit_s=20,
        clients=5,
        nemesis=["pause-client"],
        session_timeout_s=2,  # the lease TTL: the pause lasts 3 s
        interval_s=3,
        params={"resource": resource},
        seed=seed,
    )


def split_run(resource: str, store_root):
    """A run in which a paused holder's lease ran out under it (a belief overlap). The split
    is the lock's known flaw, but on a loaded machine (load 9-13) one 20 s run once had no
    pause after which a waiter acquired before the holder thawed; up to three runs are
    allowed, and the assertions are made on the run that split."""
    for seed in (3, 4, 5):  # 3: the seed the tests ran with alone
        run = run_test(paused_holder_spec(resource, seed), store_root)
        if run.results["lock"]["belief_overlap_count"] > 0:
            break
    return run


def test_a_paused_holder_past_its_ttl_splits_the_lock_and_the_fence_holds(etcd_image, store_root):
    run = split_run("fenced", store_root)
    lock = run.results["lock"]
    assert lock["belief_overlap_count"] > 0, lock  # the woken holder still believed
    assert lock["effect_overlap_count"] == 0, lock  # its writes were refused
    assert lock["rejected_writes"] > 0, lock
    assert run.results["fencing"]["valid"] is True
    assert run.valid is False


def test_a_paused_holder_past_its_ttl_writes_over_the_next_on_an_unguarded_resource(
    etcd_image, store_root
):
    run = split_run("unguarded", store_root)
    lock = run.results["lock"]
    assert lock["belief_overlap_count"] > 0, lock
    assert lock["effect_overlap_count"] > 0, lock  # its late writes landed
    assert run.valid is False


def test_a_killed_test_run_is_removed_by_cleanup(docker_client, etcd_image, tmp_path):
    argv = ["test", "--recipe", "etcd3-python", "--workload", "lock", "--nodes", "3"]
    killed_then_cleaned(
        docker_client, [*argv, "--clients", "2", "--time-limit", "60", "--store", str(tmp_path)]
    )


def test_client_check_passes_the_etcd3_recipe_and_the_template(etcd3, etcd_image):
    """`client check` on etcd (issue 40): the etcd3-python recipe's program and the etcd
    template (docs/templates/etcd_lock.py, written from client-protocol.md alone) conform, in a
    client container of the etcd image, checked against etcd itself; a program whose fence
    never refuses is named."""
    from pathlib import Path

    from zkjepsen.cli.client import in_container, recipe_argv
    from zkjepsen.client.conformance import Conformance
    from zkjepsen.client.serverview import ServiceView

    templates = Path(__file__).resolve().parents[2] / "docs" / "templates"
    hosts = etcd3.connect_string()
    for argv, where in (
        (recipe_argv("etcd3-python"), None),
        (["python3", "etcd_lock.py"], str(templates)),
    ):
        report = Conformance(
            in_container(argv, etcd_image, etcd3.run_id, where),
            hosts,
            view=ServiceView("etcd", etcd3.host_session(4.0)),
        ).run()
        assert report.ok, (argv, report.problems)
