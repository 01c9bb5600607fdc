"""etcd's own locks through the Go driver (client/drivers/etcd, compiled into the etcd image from
Debian's etcd 3.4.23 source), against real etcd members in Docker (issue 25): clientv3/
concurrency's Mutex (`etcd-mutex-go`) and the v3lock Lock RPC (`etcd-lock-rpc`).

- With no fault each excludes, and every client acquires.
- A holder paused past its lease TTL keeps believing (the library never looks at its session
  again): belief overlaps. On the fenced resource (a Txn comparing the lock key's create
  revision, Mutex.IsOwner()) its stale writes are refused: effect overlap 0.

- etcd-io/etcd#22082 with no fault: an application that retries a failed Unlock of the same
  Mutex later deletes the newer lock its session took meanwhile (belief overlaps; the fence
  still holds).

Each run brings up its own 3 members (a few seconds); the runs are short (8 s, 16 s).
"""

from __future__ import annotations

import pytest

from zkjepsen.history import read_jsonl
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec

RECIPES = ("etcd-mutex-go", "etcd-lock-rpc")


def lock_spec(recipe: str, **kw) -> TestSpec:
    base = dict(recipe=recipe, workload="lock", nodes=3, clients=4, seed=5, recovery_s=2)
    return TestSpec(**{**base, **kw})


@pytest.mark.parametrize("recipe", RECIPES)
def test_with_no_fault_the_lock_excludes_and_every_client_acquires(recipe, etcd_image, store_root):
    run = run_test(lock_spec(recipe, time_limit_s=8), store_root)
    assert run.spec.backend == "etcd"
    assert run.valid is True, run.results
    lock = run.results["lock"]
    assert lock["belief_overlap_count"] == 0 and lock["holds"] > 8, lock
    ops = read_jsonl(run.store_dir / "history.jsonl").ops
    acquired = [o for o in ops if o.f == "acquire" and o.type == "ok"]
    assert {o.client for o in acquired} == {1, 2, 3, 4}
    tokens = [o.value["token"] for o in acquired]
    assert len(set(tokens)) == len(tokens) and all(isinstance(t, int) for t in tokens)
    assert all(o.value["node"].startswith("/zkjepsen/lock/") for o in acquired)


@pytest.mark.parametrize("recipe", RECIPES)
def test_a_paused_holder_past_its_lease_keeps_believing_and_the_revision_fence_holds(
    recipe, etcd_image, store_root
):
    # The split is the lock's known flaw, but on a loaded machine (a CI run at load 7-24) one
    # 16 s run had no pause after which a waiter acquired before the holder thawed: up to
    # three runs, and every assertion is made on the one that split (as test_etcd.py's).
    for seed in (5, 6, 7):  # 5: the seed the test ran with alone
        spec = lock_spec(
            recipe,
            time_limit_s=16,
            nemesis=["pause-client"],
            session_timeout_s=2,  # the lease TTL: the pause lasts 3 s
            interval_s=3,
            params={"resource": "fenced"},
            seed=seed,
        )
        run = run_test(spec, store_root)
        if run.results["lock"]["belief_overlap_count"] > 0:
            break
    lock = run.results["lock"]
    assert lock["belief_overlap_count"] > 0, lock  # the woken holder still believed
    assert lock["effect_overlap_count"] == 0, lock  # its writes were refused
    assert run.results["fencing"]["valid"] is True
    assert run.valid is False
    ops = read_jsonl(run.store_dir / "history.jsonl").ops
    refused = [
        o for o in ops if o.f == "write" and o.type == "fail" and o.extra.get("error") == "Fenced"
    ]
    assert refused, "no stale write reached the fence"
    lost = [o for o in ops if o.f == "session-state" and o.value == "LOST"]
    assert lost, "the paused holder's session was never reported lost"


def test_a_retried_unlock_deletes_a_newer_lock_of_the_same_session(etcd_image, store_root):
    # etcd-io/etcd#22082 with no fault: the application gives up on Unlock after 0.2 ms (the
    # delete often commits anyway) and retries the same Mutex's Unlock in the background; by
    # then its session has locked again under the same key name, and the retry deletes that.
    params = {"resource": "fenced", "unlock_timeout_ms": 0.2, "unlock_retry": "background"}
    run = run_test(lock_spec("etcd-mutex-go", time_limit_s=8, params=params), store_root)
    lock = run.results["lock"]
    assert lock["belief_overlap_count"] > 0, lock
    assert lock["effect_overlap_count"] == 0, lock  # the revision fence still holds
    ops = read_jsonl(run.store_dir / "history.jsonl").ops
    retried = [o for o in ops if o.f == "program-event" and o.value["event"] == "unlock-retried"]
    assert retried, "no Unlock was retried"
    assert not [o for o in ops if o.process == "nemesis"]  # no fault was injected
