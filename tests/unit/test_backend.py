"""Every service's cluster is a `Backend`: every method the protocol declares exists with the
same parameters (what nemeses and the client pool call, checked without Docker)."""

from __future__ import annotations

import inspect

import pytest

from zkjepsen.backends.base import Backend
from zkjepsen.backends.postgres.cluster import PostgresBackend
from zkjepsen.backends.redis.cluster import RedisBackend
from zkjepsen.backends.zookeeper.ensemble import ZooKeeperEnsemble


@pytest.mark.parametrize("cls", [ZooKeeperEnsemble, RedisBackend, PostgresBackend])
def test_each_service_implements_backend(cls):
    declared = {n: f for n, f in vars(Backend).items() if callable(f) and not n.startswith("_")}
    assert {
        "connect_string",
        "leader",
        "kill",
        "restart",
        "pause",
        "resume",
        "state",
        "exec",
        "set_clock",
        "logs",
        "client_endpoint",
        "down",
        "host_session",
    } <= set(declared)
    for name, proto in declared.items():
        impl = getattr(cls, name, None)
        assert callable(impl), f"{cls.__name__} has no {name}"
        assert list(inspect.signature(impl).parameters) == list(
            inspect.signature(proto).parameters
        ), name
