"""The backend registry: which servers a test runs against (`--backend`, TestSpec `backend`).

Each backend is a name, a family (which recipes can run on it: a recipe declares the backends
it needs in `recipes.RecipeInfo.backends`; `recipes.resolve_backend` picks one), the class that
implements `backends.base.Backend` for it (imported lazily: spec validation and `list` must not
import docker), the image recipe of its servers (`docker.image.ImageRecipe`; the ZooKeeper image
when empty) and, for
backends whose shape is fixed (one Redis master, five Redlock masters), the server count.

The client containers of every backend run zkjepsen's client image (the ZooKeeper node image:
python3, libfaketime, the JVM and Go drivers), so a backend adds only its servers' image; a
backend whose client libraries live in its own image (etcd: gRPC, its Go driver) says
`own_clients`, and its clients run its servers' image.

To add a backend: implement `Backend` (a subclass of `docker.servers.ServerCluster` is the
short way: it brings the network, labels, teardown, faults on nodes and client endpoints) and
a factory for it, add a `BackendInfo` below, and give its recipes `backends=(name, ...)`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkjepsen.errors import BadInput


@dataclass(frozen=True)
class BackendInfo:
    name: str
    family: str  # zookeeper | redis | postgres: a recipe's backends name backends of one family
    description: str
    target: str  # "module:factory": (spec, store_dir, **make_backend's keywords) -> Backend
    image: str = ""  # "module:function" returning the servers' ImageRecipe ("": ZooKeeper's)
    nodes: int | None = None  # fixed number of servers; None: the spec's `nodes`
    # Ready to serve within this many seconds after the containers start, or the run fails.
    ready_timeout_s: float = 60.0
    sizes: tuple[int, ...] = ()  # the server counts it runs (); any
    own_clients: bool = False  # its clients run its servers' image (their libraries are there)
    service: str = ""  # the server software and version, for tables ("": ZooKeeper's versions)


_REDIS = "zkjepsen.backends.redis.cluster"
BACKENDS: dict[str, BackendInfo] = {
    "zookeeper": BackendInfo(
        "zookeeper",
        "zookeeper",
        "a ZooKeeper ensemble of --nodes servers (3.8.0, Debian bookworm)",
        "zkjepsen.backends.registry:zookeeper_backend",
    ),
    "redis": BackendInfo(
        "redis",
        "redis",
        "one Redis 7.0 master (no replicas, no persistence)",
        f"{_REDIS}:redis_backend",
        image=f"{_REDIS}:redis_image",
        nodes=1,
        ready_timeout_s=30.0,
        service="Redis 7.0",
    ),
    "redis-sentinel": BackendInfo(
        "redis-sentinel",
        "redis",
        "a Redis 7.0 master, 2 replicas and 3 Sentinels (quorum 2): kill the master and a "
        "replica is promoted",
        f"{_REDIS}:redis_backend",
        image=f"{_REDIS}:redis_image",
        nodes=3,
        ready_timeout_s=60.0,
        service="Redis 7.0",
    ),
    "redlock": BackendInfo(
        "redlock",
        "redis",
        "5 independent Redis 7.0 masters (Redlock)",
        f"{_REDIS}:redis_backend",
        image=f"{_REDIS}:redis_image",
        nodes=5,
        ready_timeout_s=30.0,
        service="Redis 7.0",
    ),
    "postgres": BackendInfo(
        "postgres",
        "postgres",
        "one PostgreSQL 15 server (Debian bookworm); TCP keepalives tuned so a cut-off client "
        "is dropped within ~5 s",
        "zkjepsen.backends.postgres.cluster:postgres_backend",
        image="zkjepsen.backends.postgres.image:postgres_image",
        nodes=1,
        ready_timeout_s=60.0,
        service="PostgreSQL 15",
    ),
    "etcd": BackendInfo(
        "etcd",
        "etcd",
        "an etcd 3.4.23 cluster of --nodes (1, 3, 5 or 7) members (Debian bookworm)",
        "zkjepsen.backends.etcd.cluster:etcd_backend",
        image="zkjepsen.backends.etcd.image:etcd_image",
        sizes=(1, 3, 5, 7),
        own_clients=True,
        service="etcd 3.4.23",
    ),
}
DEFAULT_BACKEND = "zookeeper"


def backend_names() -> list[str]:
    return sorted(BACKENDS)


def backend_info(name: str) -> BackendInfo:
    info = BACKENDS.get(name)
    if info is None:
        raise BadInput(
            f"unknown backend {name!r}; choose from {', '.join(backend_names())} "
            "(`zkjepsen list backends`)"
        )
    return info


def check_nodes(name: str, nodes: int) -> None:
    """Bad input: a server count backend `name` does not run."""
    sizes = backend_info(name).sizes
    if sizes and nodes not in sizes:
        raise BadInput(
            f"backend {name} runs {', '.join(map(str, sizes))} servers, not {nodes}; "
            "give --nodes one of those"
        )


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def image_recipe(name: str, zk_version: str | None = None, version: str | None = None):
    """The ImageRecipe of backend `name`'s servers (harness.image), ZooKeeper's (of
    `zk_version`, default 3.8) by default; `version`: another backend's own (etcd's)."""
    info = backend_info(name)
    if not info.image:
        from zkjepsen.backends.zookeeper.image import zookeeper_recipe

        return zookeeper_recipe(zk_version)
    return _load(info.image)(version) if version is not None else _load(info.image)()


def make_backend(
    name: str,
    spec: Any,
    store_dir: Path,
    *,
    client: Any,
    engine: str,
    server_image: str,
    client_image: str,
) -> Any:
    """A Backend (not started) for a TestSpec-like `spec` (nodes, tick_ms, params, ...)."""
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


def zookeeper_backend(
    spec: Any, store_dir: Path, *, backend: BackendInfo, client, engine, server_image, client_image
):
    from zkjepsen.backends.zookeeper.config import ZkSettings
    from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble

    settings = ZkSettings(
        tick_ms=spec.tick_ms, zk_version=getattr(spec, "zk_version", None) or "3.8"
    )
    ens_spec = EnsembleSpec(
        nodes=spec.nodes, image=server_image, client_image=client_image, settings=settings
    )
    return ZooKeeperEnsemble(ens_spec, store_dir, client=client, engine=engine)


def provide_images(engine, spec: Any, say=None) -> tuple[str, str]:
    """(server image, client image) of the spec's backend, present on `engine` (built
    there if missing; a build's phases go to `say` as lines, one at least every 15 s: a first
    etcd image takes minutes). Clients always run zkjepsen's client image (the ZooKeeper node
    image of `client_suite`, default the servers' version); `--image` names the servers'."""
    from zkjepsen.docker.image import Heartbeat

    if say is None:
        return _provide_images(engine, spec, lambda line: None)
    with Heartbeat(say) as progress:
        return _provide_images(engine, spec, progress)


def _provide_images(engine, spec: Any, on_build) -> tuple[str, str]:
    from functools import partial

    from zkjepsen.backends.zookeeper import versions as zkversions
    from zkjepsen.backends.zookeeper.image import zookeeper_recipe
    from zkjepsen.docker import engine as engines

    provide_image = partial(engines.provide_image, on_build=on_build)
    clients = zkversions.client_suite(spec.client_suite, spec.zk_version).name
    if not backend_info(spec.backend).image:
        recipe = image_recipe(spec.backend, spec.zk_version)
        server_image = provide_image([engine], spec.image, recipe=recipe)
        if spec.client_suite is None:  # the servers' image runs the clients, as it always did
            return server_image, server_image
        return server_image, provide_image([engine], recipe=zookeeper_recipe(clients))
    if backend_info(spec.backend).own_clients:
        version = getattr(spec, "etcd_version", None)
        recipe = image_recipe(spec.backend, version=version)
        server_image = provide_image([engine], spec.image, recipe=recipe)
        return server_image, server_image
    client_image = provide_image([engine], recipe=zookeeper_recipe(clients))
    return provide_image([engine], spec.image, recipe=image_recipe(spec.backend)), client_image
