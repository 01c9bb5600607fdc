"""The registry of lock services: one line per service, the rest is what each declares
(`backends/<service>/service.py`, a `backends.plugin.Service`).

A backend (`--backend`, TestSpec `backend`) is one shape of a service's servers: a name, its
service (`family`: which recipes can run on it; a recipe declares the backends it needs in
`recipes.RecipeInfo.backends`, `recipes.resolve_backend` picks one), the class that implements
`backends.base.Backend` for it (imported lazily: spec validation and `list` must not import
docker), its fixed server count where its shape has one, and its abilities (what faults may ask
of it). Its service owns the settings, options and images.

To add a service: a package `backends/<name>/` with its `Backend` (a subclass of
`docker.servers.ServerCluster` is the short way: it brings the network, labels, teardown, faults
on nodes and client endpoints) and a `service.py` declaring its `Service`; one line below; its
recipes give `backends=(name, ...)`.
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path
from typing import Any

from zkjepsen.backends import shared
from zkjepsen.backends.plugin import (
    SERVERS_IMAGE,
    SHARED_CLIENTS,
    BackendInfo,
    Service,
    ServiceSettings,
)
from zkjepsen.errors import BadInput
from zkjepsen.spec import TestSpec

SERVICE_MODULES = (  # one line per service; its `service.py` declares the rest
    "zkjepsen.backends.zookeeper.service",
    "zkjepsen.backends.redis.service",
    "zkjepsen.backends.postgres.service",
    "zkjepsen.backends.etcd.service",
    "zkjepsen.backends.memcached.service",
    "zkjepsen.backends.mariadb.service",
)
DEFAULT_BACKEND = "zookeeper"
# zkjepsen's client image (python3, libfaketime, the JVM and Go drivers): the ZooKeeper node
# image, which the clients of a service without their own run.
CLIENT_IMAGE_SERVICE = "zookeeper"


@cache
def services() -> dict[str, Service]:
    out = {}
    for module in SERVICE_MODULES:
        svc: Service = importlib.import_module(module).SERVICE
        out[svc.name] = svc
    return out


def service(name: str) -> Service:
    found = services().get(name)
    if found is None:
        raise BadInput(f"unknown service {name!r}; choose from {', '.join(services())}")
    return found


@cache
def backends() -> dict[str, BackendInfo]:
    """Every backend of every service, by name."""
    return {info.name: info for svc in services().values() for info in svc.backends}


def backend_names() -> list[str]:
    return sorted(backends())


def backend_info(name: str) -> BackendInfo:
    info = backends().get(name)
    if info is None:
        raise BadInput(
            f"unknown backend {name!r}; choose from {', '.join(backend_names())} "
            "(`zkjepsen list backends`)"
        )
    return info


def service_of(backend: str) -> Service:
    """The service a backend's servers belong to."""
    return service(backend_info(backend).family)


def check_nodes(name: str, nodes: int) -> None:
    """Bad input: a server count backend `name` does not run."""
    sizes = backend_info(name).sizes
    if sizes and nodes not in sizes:
        raise BadInput(
            f"backend {name} runs {', '.join(map(str, sizes))} servers, not {nodes}; "
            "give --nodes one of those"
        )


def settings_for(backend: str, settings: ServiceSettings | None) -> ServiceSettings:
    """`settings` settled for `backend`'s service (its defaults when None); refused when they
    are another service's (`--zk-version` on an etcd run: one sentence naming the option)."""
    svc = service_of(backend)
    if settings is None:
        return svc.settings().settled()
    if settings.name != svc.name:
        raise BadInput(service(settings.name).refusal(settings, backend))
    return settings.settled()


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def image_recipe(backend: str, settings: ServiceSettings | None = None):
    """The ImageRecipe of `backend`'s servers for `settings` (its service's defaults: None)."""
    return service_of(backend).server_recipe(settings_for(backend, settings))


def client_recipe(backend: str, settings: ServiceSettings | None = None):
    """The recipe of the image `backend`'s clients run; None: the servers' own image."""
    svc = service_of(backend)
    settled = settings_for(backend, settings)
    if svc.clients == SERVERS_IMAGE:
        return None
    if svc.clients == SHARED_CLIENTS:
        shared = service(CLIENT_IMAGE_SERVICE)
        return shared.server_recipe(shared.settings().settled())
    assert callable(svc.clients)
    return svc.clients(settled)


def make_backend(
    name: str,
    spec: TestSpec,
    store_dir: Path,
    *,
    client: Any,
    engine: str,
    server_image: str,
    client_image: str,
) -> Any:
    """A Backend (not started) for a TestSpec-like `spec` (nodes, service, params, ...)."""
    info = backend_info(name)
    return _load(info.target)(
        spec,
        store_dir,
        backend=info,
        client=client,
        engine=engine,
        server_image=server_image,
        client_image=client_image,
    )


def provide_images(engine, spec: TestSpec, say=None) -> tuple[str, str]:
    """(server image, client image) of the spec's backend, present on `engine` (built there if
    missing; a build's phases go to `say` as lines, one at least every 15 s: a first etcd image
    takes minutes). `--image` names the servers'; the clients run what the service says (the
    servers' image, zkjepsen's client image, or one of its own settings: ZooKeeper's suite)."""
    # here, not at the top: the services' declarations stay import-light (no docker)
    from zkjepsen.docker.image import Heartbeat

    if say is None:
        return _provide_images(engine, spec, lambda line: None)
    with Heartbeat(say) as progress:
        return _provide_images(engine, spec, progress)


def _provide_images(engine, spec: TestSpec, on_build) -> tuple[str, str]:
    # here, not at the top: the services' declarations stay import-light (no docker)
    from zkjepsen.docker.engine import provide_image

    if spec.backend is None:  # a spec is given here once resolved (run/resolve.py settles it)
        raise ValueError("provide_images needs a resolved spec: its backend is not settled")
    server_image = provide_image(
        [engine], spec.image, on_build, recipe=image_recipe(spec.backend, spec.service)
    )
    recipe = client_recipe(spec.backend, spec.service)
    if recipe is None:
        return server_image, server_image
    return server_image, provide_image([engine], on_build=on_build, recipe=recipe)


def settings_from_table(table: dict[str, Any], where: str) -> ServiceSettings:
    """A service's settings from test.json's `service` table (`{"name": "etcd", ...}`)."""
    rest = dict(table)
    name = rest.pop("name", None)
    if not isinstance(name, str):
        raise BadInput(f'{where} needs the name of its service (e.g. name = "zookeeper")')
    return service(name).from_table(rest, f"[{name}]")


def read_service(d: dict[str, Any], family: str | None = None) -> dict[str, Any]:
    """The one place every form of a service's settings is read into `service`: test.json's
    `service` table, a config's `[zookeeper]` / `[etcd]` table (the command line's options come
    in the same way), and the flat keys that runs stored before each service owned its settings
    (`zk_version`, `etcd_version`, ...: each service names its own in `legacy`). `family`: the
    run's service, when known: a flag several services declare (`--fsync`) goes to it alone."""
    d = dict(d)
    tables: dict[str, dict[str, Any]] = {}
    for svc in services().values():
        table = d.pop(svc.name, None)
        if table is not None:
            if not isinstance(table, dict):
                raise BadInput(
                    f"[{svc.name}] must be a table of {svc.label} settings, not {table!r}"
                )
            tables[svc.name] = dict(table)
        for key, name in svc.legacy.items():
            value = d.pop(key, None)
            # Older runs stored ZooKeeper's tick (500) whatever their service: not a setting.
            if value is not None and svc.legacy_ignored.get(key, object()) != value:
                tables.setdefault(svc.name, {}).setdefault(name, value)
    if not tables:
        return d
    tables = shared.fold(tables, services(), family)  # one flag several declare: --fsync
    if len(tables) > 1 or d.get("service") is not None:
        named = sorted(tables) + (["service"] if d.get("service") is not None else [])
        raise BadInput(
            f"settings of more than one service ({', '.join(named)}); a test runs on one"
        )
    ((name, table),) = tables.items()
    d["service"] = {"name": name, **table}
    return d
