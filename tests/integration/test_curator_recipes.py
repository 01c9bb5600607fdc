"""Curator's other recipes (issue 51) in the real Java driver: InterProcessSemaphoreV2,
InterProcessReadWriteLock and LeaderSelector. First each spoken to directly over the client wire
protocol on the shared ensemble (what each grants, and the semaphore's known flaw); then each
through a short whole run of the workload that judges it (the semaphore's permits, the rwlock's
sides, one leader), through the recorder's own loop."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from test_drivers import _ok, kz, programs  # noqa: F401 - the fixtures, shared

from zkjepsen.docker import freeze
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec


def _fail_timeout(reply) -> None:
    assert reply["type"] == "fail" and reply["error"] == "timeout", reply


def test_semaphore_v2_grants_its_permits_and_no_more(programs, kz):  # noqa: F811
    base = f"/t/sem-{uuid.uuid4().hex[:6]}"
    a, b, c = (programs("curator-java-semaphore-v2", base, permits=2) for _ in range(3))
    ta = _ok(a.request("acquire", timeout_ms=10000), "a")
    tb = _ok(b.request("acquire", timeout_ms=10000), "b")
    for t in (ta, tb):  # a lease node of its own, under the semaphore's leases directory
        assert t["node"].startswith(f"{base}/leases/"), t
        assert t["token"] == kz.exists(t["node"]).czxid
    _fail_timeout(c.request("acquire", timeout_ms=1000))  # the third of two permits waits
    assert _ok(c.request("holding")) is False
    _ok(a.request("release"))
    assert kz.exists(ta["node"]) is None
    assert _ok(a.request("holding")) is False
    tc = _ok(c.request("acquire", timeout_ms=10000), "c after a's release")
    assert sorted(kz.get_children(f"{base}/leases")) == sorted(
        t["node"].rsplit("/", 1)[1] for t in (tb, tc)
    )
    r = a.request("release")  # a holds nothing now: a definite no
    assert r["type"] == "fail" and r["error"] == "NotHeld", r


def test_a_frozen_permit_holder_believes_in_a_permit_another_took(
    programs,  # noqa: F811
    kz,  # noqa: F811
    docker_client,
):
    """The flaw the recipe's entry names: a Lease has no belief but its own existence. Frozen
    past its session, the holder's lease node goes; the waiter takes the permit; the woken
    holder still holds its Lease: two holders of one permit."""
    base = f"/t/sem-pause-{uuid.uuid4().hex[:6]}"
    a, b = (programs("curator-java-semaphore-v2", base, 3000, permits=1) for _ in range(2))
    ta = _ok(a.request("acquire", timeout_ms=5000))
    freeze.pause(docker_client.containers.get(a.container))
    try:
        _ok(b.request("acquire", timeout_ms=15000), "b, once a's session expired")
    finally:
        docker_client.api.unpause(a.container)
    assert kz.exists(ta["node"]) is None  # a's lease went with its session
    assert _ok(a.request("holding")) is True
    assert _ok(b.request("holding")) is True


def test_rwlock_readers_share_and_a_writer_excludes(programs, kz):  # noqa: F811
    base = f"/t/rw-{uuid.uuid4().hex[:6]}"
    r1, r2, w = (programs("curator-java-rwlock", base) for _ in range(3))
    n1 = _ok(r1.request("acquire", timeout_ms=10000, mode="read"))["node"]
    n2 = _ok(r2.request("acquire", timeout_ms=10000, mode="read"))["node"]
    assert "__READ__" in n1 and "__READ__" in n2
    _fail_timeout(w.request("acquire", timeout_ms=1000, mode="write"))
    assert _ok(r1.request("holding", mode="read")) is True
    assert _ok(r1.request("holding", mode="write")) is False  # the other side is not held
    _ok(r1.request("release", mode="read"))
    _ok(r2.request("release", mode="read"))
    nw = _ok(w.request("acquire", timeout_ms=10000, mode="write"))["node"]
    assert "__WRIT__" in nw and kz.exists(nw) is not None
    _fail_timeout(r1.request("acquire", timeout_ms=1000, mode="read"))
    _ok(w.request("release", mode="write"))
    _ok(r1.request("acquire", timeout_ms=10000, mode="read"))


@pytest.mark.parametrize("recipe", ["curator-java-selector", "curator-java-selector-tolerant"])
def test_selector_elects_one_leader_and_the_next_after_it_resigns(
    recipe,
    programs,  # noqa: F811
    kz,  # noqa: F811
):
    base = f"/t/sel-{uuid.uuid4().hex[:6]}"
    a, b = programs(recipe, base), programs(recipe, base)
    na = _ok(a.request("acquire", timeout_ms=10000))["node"]
    assert kz.exists(na) is not None and _ok(a.request("holding")) is True
    _fail_timeout(b.request("acquire", timeout_ms=1000))
    assert _ok(b.request("holding")) is False
    assert kz.get_children(base) == [na.rsplit("/", 1)[1]]  # b's timed-out selector closed
    _ok(a.request("release"))  # takeLeadership returns; the node is gone when it answers
    assert kz.exists(na) is None and _ok(a.request("holding")) is False
    nb = _ok(b.request("acquire", timeout_ms=10000))["node"]
    assert nb != na and _ok(b.request("holding")) is True


@pytest.mark.parametrize(
    "recipe, workload, params",
    [
        ("curator-java-semaphore-v2", "semaphore", {"permits": 2}),
        ("curator-java-rwlock", "rwlock", {}),
        ("curator-java-selector", "election", {"resource": "fenced"}),
    ],
)
def test_a_short_run_of_the_workload_that_judges_it(recipe, workload, params, zk_image, tmp_path):
    """No fault: every checker passes, and the run did what its checkers judge (holds by
    several clients; the rwlock's both sides; the semaphore's permits shared)."""
    spec = TestSpec(
        recipe=recipe,
        workload=workload,
        nodes=1,
        clients=3,
        time_limit_s=6,
        recovery_s=2,
        seed=1,
        image=zk_image,
        params={"hold_s": 0.2, **params},
    )
    started = time.monotonic()
    r = run_test(spec, tmp_path)
    assert r.valid is True, (recipe, r.results)
    history = [json.loads(x) for x in (r.store_dir / "history.jsonl").read_text().splitlines()]
    ops = [op for op in history if op["type"] == "ok" and op["f"] in ("acquire", "elected")]
    assert len({op["process"] for op in ops}) >= 2, ops[:5]
    if workload == "rwlock":
        assert {op["value"]["mode"] for op in ops} == {"read", "write"}
    print(f"{recipe}: {len(ops)} holds in {time.monotonic() - started:.0f} s")
