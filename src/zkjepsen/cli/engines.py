"""`--engine` and `--parallel`: which Docker engines a command's runs use, and how many at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.console import Console

from zkjepsen.cli.options import not_empty
from zkjepsen.docker.engine import Engine, parse_engines, provide_image
from zkjepsen.errors import BadInput

if TYPE_CHECKING:  # its module loads subprocess and the image builds: only the type here
    from zkjepsen.docker.image import ImageRecipe

console = Console(stderr=True, soft_wrap=True)  # a log line stays one line (CI logs, grep)


def engine_option(f):
    return click.option(
        "--engine",
        "engine",
        default=None,
        callback=not_empty,
        metavar="ENGINE",
        help="Docker engine of this machine for the runs: a docker context name or a "
        "DOCKER_HOST URL (unix://, tcp://). Default: the environment's. Several hosts: --cluster.",
    )(f)


def parallel_option(f):
    return click.option(
        "--parallel",
        type=click.IntRange(1, 64),
        default=1,
        show_default=True,
        help="Runs at once on the engine (each run in its own process).",
    )(f)


def cluster_option(f):
    return click.option(
        "--cluster",
        default=None,
        callback=_cluster_address,
        metavar="tcp://HOST:PORT",
        help="Run every run as a task on this Dask scheduler's workers, each on its own host's "
        "Docker engine (workers started with `--resources docker=N`; docs/ci.md).",
    )(f)


def _cluster_address(ctx, param, value):
    from zkjepsen.run.dask_executor import check_address

    return None if value is None else check_address(value)


def connect_cluster(address: str | None, engine: str | None = None, parallel: int = 1):
    """The Dask client for `--cluster` (None without it), connected before anything is
    created: `--engine` and `--parallel` are the workers' business there."""
    if address is None:
        return None
    if engine or parallel != 1:
        raise BadInput(
            "--cluster runs every run on the Dask workers' own engines, as many at once as "
            "their `docker` resource says; leave out --engine and --parallel"
        )
    from zkjepsen.run.dask_executor import connect

    with console.status(f"connecting to the Dask scheduler at {address}"):
        return connect(address)


def prepare(
    texts: tuple[str, ...] | str | None, image: str | None = None, specs: tuple = ()
) -> Engine:
    """The `--engine` (one; several hosts are `--cluster`'s), checked with ZKJEPSEN_FILES (one
    sentence and exit 254 before anything exists), with the node image present on it (built if
    missing, never pulled), with progress; and every image the validated `specs` need (their
    servers' and their clients', as their services say: built once here, not by each of
    several parallel runs)."""
    from zkjepsen.backends.registry import client_recipe, image_recipe
    from zkjepsen.backends.zookeeper.image import zookeeper_recipe
    from zkjepsen.docker import mounts
    from zkjepsen.docker.image import default_tag

    mounts.files_mode()
    texts = (texts,) if isinstance(texts, str) else tuple(texts or ())
    engines = parse_engines(texts)
    if len(engines) > 1:
        raise BadInput(
            "give one --engine: runs over several Docker hosts go to a Dask cluster with a "
            "worker on each host (--cluster tcp://SCHEDULER:8786; docs/ci.md)"
        )
    engine = engines[0]
    engine.require_local()
    recipes: dict[str, tuple[str | None, str | None, ImageRecipe]] = {
        "": (None, image, zookeeper_recipe())
    }
    for spec in specs:
        said = spec.service.describe() if spec.service is not None else ""
        for recipe in (image_recipe(spec.backend, spec.service),
                       client_recipe(spec.backend, spec.service)):  # fmt: skip
            if recipe is not None:
                what = f"the {spec.backend} image" + (f" ({said})" if said else "")
                recipes.setdefault(default_tag(recipe), (what, None, recipe))
    with console.status(f"checking the node image on engine {engine.name}") as status:
        for which, img, wanted in recipes.values():
            label = f"building{' ' + which if which else ''}: "

            def on_build(s: str, label: str = label) -> None:
                status.update(label + s)

            provide_image([engine], img, recipe=wanted, on_build=on_build)
    return engine
