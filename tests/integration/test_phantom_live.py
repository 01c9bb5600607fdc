"""A program's grants checked against the service (issue 48, run/observer.py and
checker/phantom.py), on the real services: a `--client-cmd` program that never connects and
answers every `acquire` with a grant is never VALID (its grants are phantom grants, naming the
client), also under `pause-client`; a real recipe's grants are all seen by the service (no false
positive). One short run each."""

from __future__ import annotations

from pathlib import Path

import pytest

from zkjepsen.history import read_jsonl
from zkjepsen.run.runner import run_test
from zkjepsen.run.spec import TestSpec

SUBJECTS = Path(__file__).resolve().parents[1] / "subjects"


def fake_spec(backend: str, **kw) -> TestSpec:
    return TestSpec(
        client_cmd="python3 fake_grant.py",
        client_dir=str(SUBJECTS),
        backend=backend,
        workload="lock",
        nodes=1,
        clients=2,
        time_limit_s=12,
        recovery_s=1,
        session_timeout_s=3.0,
        seed=3,
        **kw,
    )


def real_spec(recipe: str) -> TestSpec:
    return TestSpec(
        recipe=recipe,
        workload="lock",
        nodes=1,
        clients=2,
        time_limit_s=10,
        recovery_s=1,
        session_timeout_s=3.0,
        seed=3,
    )


def _phantoms(run) -> list[dict]:
    return [v for v in run.results["phantom"].get("violations", []) if v["kind"] == "phantom-grant"]


def assert_faked(run) -> None:
    """Never VALID, and because the service never showed the grants: each a phantom grant."""
    assert run.valid is not True, run.results
    phantom = run.results["phantom"]
    assert phantom["valid"] is False, phantom
    found = _phantoms(run)
    assert found and {c for v in found for c in v["clients"]} <= {1, 2}
    assert all("none of" in v["evidence"]["why"] for v in found)
    # the readings are the recorder side's, in the history: the verdict comes from it alone
    ops = read_jsonl(run.store_dir / "history.jsonl").ops
    readings = [o for o in ops if o.process == "observer" and o.f == "holders"]
    assert readings and all(o.value["holders"] == [] for o in readings if o.value["ok"])


def assert_seen(run) -> None:
    """A real recipe: every checked grant was seen by the service, and some were checked."""
    phantom = run.results["phantom"]
    assert phantom["valid"] is True and not _phantoms(run), phantom
    assert phantom["checked"] > 3, phantom
    assert run.valid is True, run.results


def test_zookeeper_a_faked_lock_is_never_valid_under_pause_client(zk_image, store_root):
    spec = fake_spec(
        "zookeeper", image=zk_image, nemesis=["pause-client"], interval_s=3, fault_duration_s=2
    )
    assert_faked(run_test(spec, store_root))


def test_zookeeper_kazoos_grants_are_all_seen(zk_image, store_root):
    run = run_test(real_spec("kazoo"), store_root)
    assert_seen(run)
    assert run.results["phantom"]["identity"] == "node"


@pytest.mark.parametrize("recipe", ["redis-set-px"])
def test_redis_a_faked_lock_is_never_valid_and_a_real_one_is_seen(recipe, redis_image, store_root):
    assert_faked(run_test(fake_spec("redis"), store_root))
    assert_seen(run_test(real_spec(recipe), store_root))


def test_etcd_a_faked_lock_is_never_valid_and_a_real_one_is_seen(etcd_image, store_root):
    assert_faked(run_test(fake_spec("etcd"), store_root))
    run = run_test(real_spec("etcd3-python"), store_root)
    assert_seen(run)
    assert run.results["phantom"]["identity"] == "token"


def test_zookeeper_a_real_programs_nodes_are_owned_by_the_sessions_it_named(zk_image, store_root):
    """The template driver (kazoo) names its session in its `session` event: each grant is
    matched by its node and that node's ephemeral owner, and every one is seen."""
    templates = Path(__file__).resolve().parents[2] / "docs" / "templates"
    spec = TestSpec(
        client_cmd="python3 python_driver.py",
        client_dir=str(templates),
        backend="zookeeper",
        workload="lock",
        nodes=1,
        clients=2,
        time_limit_s=10,
        recovery_s=1,
        session_timeout_s=3.0,
        image=zk_image,
        seed=3,
    )
    run = run_test(spec, store_root)
    assert_seen(run)
    ops = read_jsonl(run.store_dir / "history.jsonl").ops
    owners = {
        owner
        for o in ops
        if o.process == "observer" and o.f == "holders" and o.value["ok"]
        for owner in o.value["owners"].values()
    }
    sessions = {o.value["session_id"] for o in ops if o.f == "session"}
    assert owners and owners <= {hex(int(s, 16)) for s in sessions}
