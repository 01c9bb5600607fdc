"""`--engine` and `--parallel`: which Docker engines a command's runs use, and how many at once."""

from __future__ import annotations

import click
from rich.console import Console

from zkjepsen.harness.engine import Engine, parse_engines, provide_image

console = Console(stderr=True, soft_wrap=True)  # a log line stays one line (CI logs, grep)


def engine_option(f):
    return click.option(
        "--engine",
        "engines",
        multiple=True,
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
    """Parse `--engine` values, refuse engines on other machines, and make the node image
    present on each (shipped over the engines' APIs, never pulled), with progress; and the
    server image of every other backend in `backends` and of every ZooKeeper version in
    `zk_versions` (built once here, not by each of several parallel runs)."""
    engines = parse_engines(texts)
    for e in engines:
        e.require_local()
    with console.status("checking the node image on every engine") as status:

        def shipped(name: str, done: int, total: int) -> None:
            status.update(
                f"shipping the node image to {name}: {done / 1e6:.0f} of ~{total / 1e6:.0f} MB"
            )

        provide_image(
            engines,
            image,
            on_build=lambda s: status.update(f"building: {s}"),
            on_progress=shipped,
            on_shipped=lambda name, secs: console.print(
                f"shipped the node image to engine {name} in {secs:.1f} s"
            ),
        )
        from zkjepsen.harness.backends import backend_info, image_recipe
        from zkjepsen.harness.image import zookeeper_recipe

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
    return engines
