"""Lock services are siblings (issue 24): no class in one service's package (backends/<service>/)
derives, directly or through its ancestors, from a class of another service's package. Every
ancestor comes from the same service, the backends root (the protocols), docker/ (the plumbing
every service shares) or the standard library."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys

import zkjepsen.backends as backends_pkg

SERVICES = sorted(m.name for m in pkgutil.iter_modules(backends_pkg.__path__) if m.ispkg)


def allowed(service: str, module: str) -> bool:
    top = module.split(".")[0]
    return (
        module.startswith(f"zkjepsen.backends.{service}.")
        or module == f"zkjepsen.backends.{service}"
        or (module.startswith("zkjepsen.backends.") and module.count(".") == 2
            and module.split(".")[2] not in SERVICES)
        or module.startswith("zkjepsen.docker.")
        or top in sys.stdlib_module_names
        or top == "builtins"
    )  # fmt: skip


def classes_of(service: str) -> list[type]:
    pkg = importlib.import_module(f"zkjepsen.backends.{service}")
    found = []
    for info in pkgutil.walk_packages(pkg.__path__, f"{pkg.__name__}."):
        mod = importlib.import_module(info.name)
        found += [
            c for _, c in inspect.getmembers(mod, inspect.isclass) if c.__module__ == mod.__name__
        ]
    return found


def test_there_are_several_services():
    assert {"zookeeper", "redis", "postgres"} <= set(SERVICES)


def test_no_service_class_derives_from_another_service():
    bad = [
        f"{c.__module__}.{c.__qualname__} <- {a.__module__}.{a.__qualname__}"
        for service in SERVICES
        for c in classes_of(service)
        for a in c.__mro__[1:]
        if not allowed(service, a.__module__)
    ]
    assert not bad, bad


def test_the_rule_catches_a_cousin():
    assert allowed("redis", "zkjepsen.docker.servers")
    assert allowed("redis", "zkjepsen.backends.base")
    assert not allowed("redis", "zkjepsen.backends.zookeeper.ensemble")
