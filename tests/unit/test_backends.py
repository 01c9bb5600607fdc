"""The backend registry, image recipes and the client side of other lock services, without
Docker: which backend a recipe runs on, what is refused before anything starts, and the pure
parts of the Redis session and client clock faults."""

from __future__ import annotations

import pytest

from zkjepsen.backends import registry as backends
from zkjepsen.backends.zookeeper import image as zkimage
from zkjepsen.backends.zookeeper.image import zookeeper_recipe as zk_recipe
from zkjepsen.docker import image, powerfs
from zkjepsen.errors import BadInput
from zkjepsen.recipes import resolve_backend
from zkjepsen.run.resolve import validate_spec
from zkjepsen.run.spec import TestSpec


def test_the_zookeeper_image_hash_is_the_one_from_before_image_recipes():
    # The same inputs in the same order as the old inputs_hash(), then the power-loss layer's
    # (issue 34: its libfuse3 among the packages, its source and boot script at the end).
    legacy = [
        image.SUITE,
        zkimage.BUILD_RECIPE_VERSION,
        zkimage.ENTRYPOINT,
        *zkimage.PACKAGES,
        *zkimage.EXTRA_JARS,
        *zkimage.drivers.hash_parts(),
        *powerfs.hash_parts(),
    ]
    zk = zkimage.zookeeper_recipe()
    assert zk.inputs() == legacy
    assert zkimage.zookeeper_tag() == f"zkjepsen/zookeeper:{image.inputs_hash(zk)}"


def test_another_backend_image_has_its_own_repo_and_hash():
    recipe = backends.image_recipe("redis")
    assert "redis-server" in recipe.packages and "redis-sentinel" in recipe.packages
    tag = image.default_tag(recipe)
    assert tag.startswith("zkjepsen/redis:") and tag.split(":")[1] != image.inputs_hash(zk_recipe())


@pytest.mark.parametrize(
    "recipe, asked, got",
    [
        ("kazoo", None, "zookeeper"),
        ("redis-setnx", None, "redis"),
        ("redis-set-px", "redis-sentinel", "redis-sentinel"),
        ("redlock", None, "redlock"),
        ("mypkg.locks:Lock", "redis", "redis"),  # a user's recipe may run anywhere
    ],
)
def test_a_recipe_runs_on_its_own_backend_unless_told(recipe, asked, got):
    assert resolve_backend(recipe, asked) == got


def test_a_recipe_on_a_backend_it_does_not_suit_is_refused_in_one_sentence():
    with pytest.raises(BadInput, match="recipe kazoo runs on zookeeper, not on backend redis"):
        resolve_backend("kazoo", "redis")
    with pytest.raises(BadInput, match="unknown backend 'mongo'"):
        resolve_backend("kazoo", "mongo")


def test_validate_spec_records_the_backend_and_its_fixed_shape():
    spec = TestSpec(recipe="redlock", workload="counter", nodes=3)
    validate_spec(spec)
    assert (spec.backend, spec.nodes) == ("redlock", 5)
    spec = TestSpec(recipe="kazoo", nodes=3)
    validate_spec(spec)
    assert (spec.backend, spec.nodes) == ("zookeeper", 3)


def test_what_a_redis_lock_cannot_do_is_refused_before_anything_starts(monkeypatch):
    with pytest.raises(
        BadInput, match="serves the lock, counter, election, semaphore, rwlock workloads"
    ):
        validate_spec(TestSpec(recipe="redis-set-px", workload="queue"))
    with pytest.raises(BadInput, match="wire proxy speaks ZooKeeper"):
        validate_spec(TestSpec(recipe="redis-set-px", proxy=True))
    go = TestSpec(recipe="go-zk", nemesis=["clock-skew-client"])
    validate_spec(go)  # zkj-timewarp reaches a Go program (x86_64)
    with monkeypatch.context() as m:
        m.setattr("platform.machine", lambda: "aarch64")
        with pytest.raises(BadInput, match="cannot reach the go program .*aarch64"):
            validate_spec(TestSpec(recipe="go-zk", nemesis=["clock-skew-client"]))
        with pytest.raises(BadInput, match="cannot reach the redis servers"):
            validate_spec(TestSpec(recipe="redis-set-px", nemesis=["clock-bump"]))
    with pytest.raises(BadInput, match="not --client-mode in-process"):
        validate_spec(
            TestSpec(recipe="kazoo", nemesis=["clock-rate-client"], client_mode="in-process")
        )


def test_a_service_recipe_runs_through_the_service_driver():
    from zkjepsen.client.command import SERVICE_DRIVER
    from zkjepsen.run.resolve import program_for

    plan = program_for("redis-setnx", "lock")
    assert plan is not None and plan.argv == (*SERVICE_DRIVER, "redis-setnx")
    assert program_for("kazoo", "lock").argv[-1] == "kazoo"


def test_redis_connect_strings():
    from zkjepsen.backends.redis.session import parse_hosts

    assert parse_hosts("redis://10.0.0.11:6379") == ("redis", None, [("10.0.0.11", 6379)])
    kind, name, addrs = parse_hosts("redis-sentinel://zkjepsen@10.0.0.31:26379,10.0.0.32:26379")
    assert (kind, name, len(addrs)) == ("redis-sentinel", "zkjepsen", 2)
    with pytest.raises(ValueError):
        parse_hosts("10.0.0.11:2181")


def test_client_clock_faults_skew_the_program_never_the_recorder():
    from zkjepsen.client.spec import ClientSpec
    from zkjepsen.nemesis.client_clock import program_env

    py, java = program_env(3, "python"), program_env(3, "java")
    assert py["FAKETIME_TIMESTAMP_FILE"] == "/control/faketime-c3"
    assert py["FAKETIME_DONT_FAKE_MONOTONIC"] == "1"  # python3 hangs with monotonic faking
    assert "FAKETIME_DONT_FAKE_MONOTONIC" not in java  # the JVM needs it on (timed waits)
    spec = ClientSpec(1, 1, "h", 4.0, "lock", "redis-setnx", 0, program_env=py)
    assert "LD_PRELOAD" not in spec.env  # the container's (the recorder's) environment


def test_the_client_libraries_are_mounted_like_kazoo():
    from zkjepsen.client.pool import SITE_DIR, client_library_binds

    binds = {v["bind"] for v in client_library_binds().values()}
    for top in ("kazoo", "redis", "async_timeout", "psycopg"):
        assert f"{SITE_DIR}/{top}" in binds
