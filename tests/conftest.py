"""Shared fixtures. Integration tests run against a real ZooKeeper ensemble in Docker; the
image is built (with a progress line) the first time a test needs it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def docker_client():
    from zkjepsen.docker import resources
    from zkjepsen.errors import ZkJepsenError

    try:
        return resources.docker_client()
    except ZkJepsenError as e:
        pytest.fail(f"integration tests need a Docker engine: {e}")


@pytest.fixture(scope="session")
def zk_image(docker_client) -> str:
    """The node image, built now if this machine does not have it yet."""
    from zkjepsen.backends.zookeeper.image import zookeeper_recipe
    from zkjepsen.docker.image import build_image, default_tag, image_exists

    recipe = zookeeper_recipe()
    tag = default_tag(recipe)
    if not image_exists(docker_client, tag):
        print(f"\nbuilding {tag} (first run on this machine, ~1-2 min)...", file=sys.stderr)
        info = build_image(
            docker_client,
            tag,
            on_progress=lambda s: print(f"  {s}", file=sys.stderr, flush=True),
            recipe=recipe,
        )
        print(f"built {tag} in {info.build_seconds:.0f} s", file=sys.stderr)
    return tag


@pytest.fixture
def sigint_default():
    """Started in the background (a CI runner, `cmd &`), we would ignore SIGINT, and so would the
    zkjepsen processes a test starts (and rightly ignore the SIGINT it sends them)."""
    import signal

    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


@pytest.fixture
def store_root(tmp_path) -> Path:
    return tmp_path / "store"


@pytest.fixture(scope="module")
def ensemble3(docker_client, zk_image, tmp_path_factory):
    """A 3-node ensemble shared by one test module (tests must leave it healthy)."""
    from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble

    store = tmp_path_factory.mktemp("ens3")
    with ZooKeeperEnsemble(
        EnsembleSpec(nodes=3, image=zk_image), store, client=docker_client
    ) as ens:
        yield ens


pytest_plugins = ["pytester"]
