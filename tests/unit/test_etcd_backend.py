"""The etcd backend's pieces that need no Docker (issue 25): bad input refused up front (a
member count etcd is not run with, ZooKeeper-only options, faults that cannot reach etcd),
what the registry and the recipe list say, the image's Go driver hook, and the transactions
the session sends."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from zkjepsen.backends.etcd import driver_build, gateway, image
from zkjepsen.backends.etcd.session import EtcdSession, compare, ranged
from zkjepsen.backends.plugin import SERVERS_IMAGE
from zkjepsen.backends.registry import backend_info, check_nodes, service
from zkjepsen.docker.image import default_tag
from zkjepsen.errors import BadInput
from zkjepsen.recipes import RECIPES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bad_input import assert_refused, here, run_cli  # noqa: E402, F401 - fixtures

ETCD = ["test", "--recipe", "etcd3-python", "--workload", "lock"]


@pytest.mark.parametrize(
    "args,words",
    [
        (["--nodes", "4"], ["backend etcd runs 1, 3, 5, 7 servers, not 4"]),
        (["--nodes", "9"], ["not 9"]),
        (["--nodes", "3", "--zk-version", "3.9"], ["--zk-version is ZooKeeper's"]),
        (["--nodes", "3", "--client-suite", "3.9"], ["--client-suite is ZooKeeper's"]),
        (["--nodes", "3", "--nemesis", "partition-redlock"], ["does not apply to backend etcd"]),
        (["--nodes", "3", "--backend", "redis"], ["runs on etcd, not on backend redis"]),
        (["--nodes", "3", "--nemesis", "pg-terminate-holder"], ["no PostgreSQL"]),
    ],
)
def test_bad_input_for_etcd_is_refused_up_front(args, words, here, capsys):  # noqa: F811
    code, err = run_cli([*ETCD, *args], capsys)
    assert_refused(code, err, here, *words)


def test_cluster_up_refuses_an_even_cluster_up_front(here, capsys):  # noqa: F811
    code, err = run_cli(["cluster", "up", "--backend", "etcd", "--nodes", "4"], capsys)
    assert_refused(code, err, here, "not 4")


def test_registry_and_recipe_list():
    info = backend_info("etcd")
    assert (info.family, info.sizes) == ("etcd", (1, 3, 5, 7))
    assert service("etcd").clients == SERVERS_IMAGE  # its clients run its servers' image
    for n in (1, 3, 5, 7):
        check_nodes("etcd", n)
    with pytest.raises(BadInput):
        check_nodes("etcd", 2)
    r = RECIPES["etcd3-python"]
    assert (r.backends, r.language, r.source) == (("etcd",), "python", "library")


def test_the_go_driver_hook_changes_the_image_tag(monkeypatch):
    before = default_tag(image.etcd_image())
    assert driver_build.BUILD_PACKAGES == () or isinstance(driver_build.BUILD_PACKAGES, tuple)
    monkeypatch.setattr(driver_build, "build_script", lambda: "echo other build")
    assert default_tag(image.etcd_image()) != before


def test_the_fenced_write_compares_the_lock_keys_create_revision(monkeypatch):
    sent = []

    def fake_call(address, path, body, timeout):
        sent.append((address, path, body))
        return {"succeeded": True, "responses": [{}, {"response_range": {"kvs": [
            {"key": gateway.b64("/zkjepsen/res/r"), "version": "3"}]}}]}  # fmt: skip

    monkeypatch.setattr(gateway, "call", fake_call)
    s = EtcdSession("10.0.0.11:2379,10.0.0.12:2379")
    assert s.lock_key("/zkjepsen/lock") == "zkjepsen/lock"
    assert s.fenced_set("/r", b"x", 1, 42).version == 2
    (_, path, body), = sent  # fmt: skip
    assert path == "v3/kv/txn"
    assert body["compare"] == [
        compare(b"/locks/zkjepsen/lock", "CREATE", 42),
        compare(b"/zkjepsen/res/r", "VERSION", 2),
    ]
    assert body["compare"][0]["create_revision"] == "42"


def test_a_session_without_an_answer_moves_to_the_next_member(monkeypatch):
    def dead(address, path, body, timeout):
        raise gateway.Unreachable(address)

    monkeypatch.setattr(gateway, "call", dead)
    s = EtcdSession("10.0.0.11:2379,10.0.0.12:2379")
    first = s.endpoints[0]
    with pytest.raises(gateway.Unreachable, match=first):
        s.set("/r", b"x")  # unknown outcome: raised, never retried
    with pytest.raises(gateway.Unreachable, match=s.endpoints[1]):
        s.set("/r", b"x")


def test_gateway_fields_in_either_spelling():
    assert ranged({"response_range": {"kvs": [{"create_revision": "7"}]}})["create_revision"] == 7
    assert ranged({"responseRange": {"kvs": [{"createRevision": "7"}]}})["create_revision"] == 7
    assert ranged({"response_range": {}}) is None
