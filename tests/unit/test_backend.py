"""ZooKeeperEnsemble is a `Backend`: every method the protocol declares exists with the same
parameters (what nemeses and the client pool call, checked without Docker)."""

from __future__ import annotations

import inspect

from zkjepsen.backends.base import Backend
from zkjepsen.backends.zookeeper.ensemble import ZooKeeperEnsemble


def test_docker_ensemble_implements_backend():
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
    } <= set(declared)
    for name, proto in declared.items():
        impl = getattr(ZooKeeperEnsemble, name, None)
        assert callable(impl), f"ZooKeeperEnsemble has no {name}"
        assert list(inspect.signature(impl).parameters) == list(
            inspect.signature(proto).parameters
        ), name
