"""`--engine` and `--parallel`: which Docker engines a command's runs use, and how many at once."""

from __future__ import annotations

import time

import click
from rich.console import Console

from zkjepsen.cli.options import not_empty
from zkjepsen.docker.engine import Engine, parse_engines, provide_image

console = Console(stderr=True, soft_wrap=True)  # a log line stays one line (CI logs, grep)


def engine_option(f):
    return click.option(
        "--engine",
        "engines",
        multiple=True,
        callback=not_empty,
        metavar="ENGINE",
        help="Docker engine for the runs: a docker context name or a DOCKER_HOST URL "
        "(unix://, tcp://, ssh://); repeat for several. Default: the environment's.",
    )(f)


def parallel_option(f):
    return click.option(
        "--parallel",
        type=click.IntRange(1, 64),
        default=1,
        show_default=True,
        help="Runs at once on each engine (each run in its own process).",
    )(f)


def prepare(
    texts: tuple[str, ...],
    image: str | None = None,
    backends: tuple[str, ...] = (),
    zk_versions: tuple[str, ...] = (),
) -> list[Engine]:
    """Parse `--engine` values, check ZKJEPSEN_FILES and ZKJEPSEN_CONTROLLER (one sentence and
    exit 254 before anything exists), and make the node image present on each (shipped over
    the engines' APIs, never pulled), with progress, and the controller image on each engine
    that needs one (run/controller.py); and the
    server image of every other backend in `backends` and of every ZooKeeper version in
    `zk_versions` (built once here, not by each of several parallel runs)."""
    from zkjepsen.backends.zookeeper.image import zookeeper_recipe
    from zkjepsen.docker import mounts
    from zkjepsen.run import controller

    mounts.files_mode()
    controller.mode()
    engines = parse_engines(texts)
    remote = [e for e in engines if controller.wanted(e)]
    with console.status("checking the node image on every engine") as status:

        def shipped(name: str, done: int, total: int) -> None:
            status.update(
                f"shipping the node image to {name}: {done / 1e6:.0f} of ~{total / 1e6:.0f} MB"
            )

        provide_image(
            engines,
            image,
            recipe=zookeeper_recipe(),
            on_build=lambda s: status.update(f"building: {s}"),
            on_progress=shipped,
            on_shipped=lambda name, secs: console.print(
                f"shipped the node image to engine {name} in {secs:.1f} s"
            ),
        )
        from zkjepsen.backends.registry import backend_info, image_recipe

        for v in dict.fromkeys(zk_versions):
            provide_image(
                engines,
                None,
                on_build=lambda s, v=v: status.update(f"building the ZooKeeper {v} image: {s}"),
                on_progress=shipped,
                recipe=zookeeper_recipe(v),
            )
        for b in dict.fromkeys(backends):
            if backend_info(b).image:
                provide_image(
                    engines,
                    None,
                    on_build=lambda s, b=b: status.update(f"building the {b} image: {s}"),
                    on_progress=shipped,
                    recipe=image_recipe(b),
                )
        for e in remote:
            t0 = time.monotonic()
            tag, shipped_code = controller.prepare(e, on_status=status.update)
            console.print(
                f"engine {e.name}: runs go into a controller container there ({tag}"
                + (
                    f", code put in: {shipped_code['bytes'] / 1e6:.0f} MB in "
                    f"{shipped_code['seconds']:.1f} s)"
                    if shipped_code
                    else f", ready in {time.monotonic() - t0:.1f} s)"
                )
            )
    return engines
