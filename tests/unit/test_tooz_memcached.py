"""Issue 51's pure logic: tooz's coordinator URL for each service's connect string, the service a
client session belongs to, which program serves a recipe of several services, the libraries a
tooz run mounts, memcached's compare-and-set rule for the resource, and the refusals (a recipe on
a service tooz has no driver for; a disk fault on memcached) before anything is created."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkjepsen.backends.memcached.session import MemcachedSession, fenced_value
from zkjepsen.backends.postgres.session import PostgresSession
from zkjepsen.backends.redis.session import RedisSession
from zkjepsen.backends.registry import backend_info
from zkjepsen.backends.session import BadVersion, Fenced
from zkjepsen.client import libraries
from zkjepsen.client.command import PYTHON_DRIVER, SERVICE_DRIVER
from zkjepsen.errors import BadInput
from zkjepsen.recipes import RECIPES, resolve_backend
from zkjepsen.recipes.tooz import (
    DRIVERS,
    client_number,
    family_of,
    lock_name,
    session_ttl,
    tooz_url,
)
from zkjepsen.run.resolve import program_for

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bad_input import assert_refused, here, run_cli  # noqa: E402, F401 - fixtures


# ---- tooz's URL for each service ---------------------------------------------------------------
def query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def test_zookeeper_url_names_every_server_and_the_session_timeout():
    url = tooz_url("zookeeper", "10.0.0.11:2181,10.0.0.12:2181,10.0.0.13:2181", 4.0)
    assert urlsplit(url).scheme == "zookeeper" and urlsplit(url).netloc == "10.0.0.11:2181"
    assert query(url) == {"hosts": ["10.0.0.12:2181", "10.0.0.13:2181"], "timeout": ["4"]}


def test_etcd_url_takes_one_member_per_client_and_the_lease():
    hosts = "10.0.0.11:2379,10.0.0.12:2379,10.0.0.13:2379"
    members = {urlsplit(tooz_url("etcd", hosts, 2.5, c)).netloc for c in range(1, 7)}
    assert members == set(hosts.split(","))
    url = tooz_url("etcd", hosts, 2.5, 2)
    assert url.startswith("etcd3+http://10.0.0.12:2379?")
    assert query(url) == {"timeout": ["3"], "lock_timeout": ["3"]}  # whole seconds, rounded up


def test_redis_url_one_master_and_through_the_sentinels():
    assert tooz_url("redis", "redis://10.0.0.11:6379", 4) == "redis://10.0.0.11:6379?lock_timeout=4"
    url = tooz_url("redis", "redis-sentinel://zkjepsen@10.0.0.31:26379,10.0.0.32:26379", 4)
    assert urlsplit(url).netloc == "10.0.0.31:26379"
    assert query(url) == {
        "sentinel": ["zkjepsen"],
        "sentinel_fallback": ["10.0.0.32:26379"],
        "lock_timeout": ["4"],
    }


def test_database_and_memcached_urls():
    assert (
        tooz_url("postgres", "10.0.0.11:5432", 4) == "postgresql://postgres@10.0.0.11:5432/postgres"
    )
    assert tooz_url("mariadb", "10.0.0.11:3306", 4).startswith(
        "mysql://zkjepsen:zkjepsen@10.0.0.11"
    )
    assert tooz_url("memcached", "10.0.0.11:11211", 0.2) == (
        "memcached://10.0.0.11:11211?lock_timeout=1"  # never 0: memcached's 0 is "never expires"
    )
    with pytest.raises(ValueError, match="no driver"):
        tooz_url("redlock", "redis://a:1", 4)


def test_every_service_tooz_runs_on_has_a_driver_and_no_other():
    services = {backend_info(b).family for b in RECIPES["tooz"].backends}
    assert services == set(DRIVERS)
    assert "redlock" not in RECIPES["tooz"].backends  # five independent masters: no tooz driver


@given(st.text(alphabet="abc/-_.xyz019", min_size=1, max_size=40))
def test_lock_names_are_short_plain_and_one_per_path(path):
    name = lock_name(path)
    assert "/" not in name and " " not in name
    assert lock_name(path) == name


def test_client_numbers_and_session_timeouts():
    assert client_number("client-7") == 7 and client_number("someone") == 1
    assert session_ttl(MemcachedSession("10.0.0.11:11211", timeout=2.5)) == 2.5

    class Kazooish:
        _session_timeout = 6000

    assert session_ttl(Kazooish()) == 6.0


def test_the_session_says_its_service():
    from kazoo.client import KazooClient

    assert family_of(KazooClient(hosts="10.0.0.11:2181")) == "zookeeper"
    assert family_of(RedisSession("redis://10.0.0.11:6379")) == "redis"
    assert family_of(PostgresSession("10.0.0.11:5432")) == "postgres"
    assert family_of(MemcachedSession("10.0.0.11:11211")) == "memcached"
    with pytest.raises(ValueError):
        family_of(object())


# ---- which program serves the recipe -----------------------------------------------------------
def test_tooz_is_served_with_the_session_of_the_runs_service():
    on_zk = program_for("tooz", "lock", backend="zookeeper")
    assert on_zk is not None and on_zk.argv == (*PYTHON_DRIVER, "tooz")
    for backend in ("etcd", "redis-sentinel", "postgres", "memcached"):
        plan = program_for("tooz", "lock", backend=backend)
        assert plan is not None
        assert plan.argv == (*SERVICE_DRIVER, "tooz", backend_info(backend).family)
        assert plan.libraries == RECIPES["tooz"].distributions


def test_a_one_service_recipe_keeps_its_command_and_mounts_nothing_more():
    for backend in (None, "redis-sentinel"):
        plan = program_for("redis-set-px", "lock", backend=backend)
        assert plan is not None and plan.argv == (*SERVICE_DRIVER, "redis-set-px")
        assert plan.libraries == ()
    plan = program_for("memcached-add", "lock")
    assert plan is not None and plan.argv == (*SERVICE_DRIVER, "memcached-add")


# ---- the libraries a tooz run mounts ------------------------------------------------------------
def test_requirements_parse_and_extras_choose():
    assert libraries.parse("tooz[redis, mysql]>=9") == ("tooz", frozenset({"redis", "mysql"}), "")
    name, extras, marker = libraries.parse('kazoo>=2.6; extra == "zookeeper"')
    assert (name, extras) == ("kazoo", frozenset())
    assert libraries.wanted(marker, frozenset({"zookeeper"}))
    assert not libraries.wanted(marker, frozenset({"redis"}))
    assert libraries.wanted("", frozenset())


def test_tooz_mounts_its_drivers_and_its_metadata_not_other_extras():
    binds = libraries.binds(RECIPES["tooz"].distributions, "/site")
    mounted = {v["bind"].removeprefix("/site/") for v in binds.values()}
    for top in ("tooz", "etcd3gw", "pymemcache", "pymysql", "psycopg2", "kazoo", "stevedore"):
        assert top in mounted, top
    assert any(m.startswith("tooz-") and m.endswith(".dist-info") for m in mounted)
    assert "kubernetes" not in mounted and "sysv_ipc" not in mounted  # extras not asked for
    assert all(v["mode"] == "ro" for v in binds.values())


# ---- memcached's resource: compare-and-set with a fence ----------------------------------------
def test_a_fresh_resource_and_a_version_check():
    assert fenced_value(None, "a", -1, None, False) == {"data": "a", "version": 1, "top": 0}
    with pytest.raises(BadVersion):
        fenced_value({"data": "a", "version": 3, "top": 0}, "b", 2, None, False)


@given(st.lists(st.tuples(st.integers(1, 20), st.booleans()), max_size=30))
def test_a_fence_never_accepts_a_token_below_one_it_accepted(writes):
    """Over any sequence of plain and fenced writes: a fenced write is refused exactly when its
    token is below the highest fenced token accepted before it, and the version counts the
    accepted writes."""
    stored, top, accepted = None, 0, 0
    for token, fenced in writes:
        try:
            stored = fenced_value(stored, "d", -1, token, fenced)
        except Fenced:
            assert fenced and token < top
            continue
        assert not fenced or token >= top
        top = token if fenced else top
        accepted += 1
        assert stored["version"] == accepted and stored["top"] == top


# ---- refused before anything is created --------------------------------------------------------
def test_tooz_on_a_service_it_has_no_driver_for_is_refused():
    with pytest.raises(BadInput, match="recipe tooz runs on .*not on backend redlock"):
        resolve_backend("tooz", "redlock")


@pytest.mark.parametrize(
    "args,words",
    [
        (["--recipe", "tooz", "--backend", "redlock"], ["recipe tooz runs on", "redlock"]),
        (
            ["--recipe", "memcached-add", "--nemesis", "power-loss-all"],
            ["does not apply to backend memcached"],
        ),
        (["--recipe", "memcached-add", "--fsync", "strict"], ["--fsync", "memcached"]),
    ],
)
def test_refused_in_one_sentence_before_anything_is_created(args, words, here, capsys):  # noqa: F811
    code, err = run_cli(["test", *args], capsys)
    assert_refused(code, err, here, *words)
