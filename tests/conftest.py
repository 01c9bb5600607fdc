"""Shared fixtures. Integration tests run against real services in Docker; the images they
need are built in the background from the first test that needs one (tests/images.py).

How the suite runs (pyproject.toml: `-n 2 --dist loadgroup`, pytest-xdist): the integration
tests are one group, run in collection order by one worker (one cluster at a time, the
module-scoped clusters shared as before); the unit tests run meanwhile on the other worker,
grouped by module. On 2 cores the integration tests mostly wait (for sessions to expire, for
Docker), so the unit tier's minutes come off the suite's."""

from __future__ import annotations

from pathlib import Path

import images  # tests/images.py (pytest puts the conftest's folder on sys.path)
import pytest

REPO = Path(__file__).resolve().parents[1]

# Modules that need an image besides ZooKeeper's run after the others, so that those images
# build in the background meanwhile: rank 1 one other image, rank 2 the other ZooKeeper versions.
RANKS = {"etcd": 1, "etcd-3.5": 1, "redis": 1, "postgres": 1}


def _rank(item) -> int:
    keys = images.needed(getattr(item, "fixturenames", ()))
    return max([RANKS.get(k, 2 if k.startswith("zookeeper-") else 0) for k in keys] or [0])


# tryfirst: xdist's worker adds each item's group to its node id in its own hook of this name,
# which would otherwise run before this one and find no group (the integration tests then spread
# over both workers, each starting its own shared ensemble).
_interrupted = False


def _interrupt_once(signum, frame) -> None:
    """The first SIGINT/SIGTERM/SIGHUP ends the session the way Ctrl-C does (KeyboardInterrupt:
    pytest then tears down every fixture, the session's clusters too); later ones are ignored so
    that they cannot cut that teardown short (`./run test` forwards a signal to every process of
    the suite, which a terminal's Ctrl-C has already reached)."""
    global _interrupted
    if _interrupted:
        return
    _interrupted = True
    raise KeyboardInterrupt


def pytest_configure(config):
    """In every process of the suite (the controller and each xdist worker): signals end the
    session with its teardown (pytest's default for SIGTERM is to die with the clusters up; a
    suite started in the background ignores SIGINT), and the process's owner token goes to the
    file `./run test` names, whose cleanup on exit removes what a killed worker left
    (tests/leftovers.py)."""
    import os
    import signal

    from zkjepsen.docker import resources

    try:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, _interrupt_once)
    except ValueError:
        pass  # not the main thread: nothing can be installed here
    owners = os.environ.get("ZKJEPSEN_SUITE_OWNERS")
    if owners:
        with open(owners, "a") as f:
            f.write(resources.owner_token() + "\n")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    ranks: dict[str, int] = {}
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.xdist_group("docker"))
            module = str(item.fspath)
            ranks[module] = max(ranks.get(module, 0), _rank(item))
        else:  # one module's unit tests on one worker: its module-scoped fixtures set up once
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda it: (ranks.get(str(it.fspath), 3), order[id(it)]))  # unit tests last


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session):
    """xdist 3.8 writes an item's group suffix to `item._nodeid`, which pytest 9.2 no longer
    reads (a node's id is `item._id`): without this, `--dist loadgroup` sees no group at all.
    Before xdist's own hook of this name, which sends the ids to the controller."""
    from _pytest.nodeid import coerce_node_id

    for item in session.items:
        grouped = item.__dict__.get("_nodeid")
        if isinstance(grouped, str) and grouped != item.nodeid:
            item._id = coerce_node_id(grouped)


@pytest.fixture(scope="session")
def docker_client():
    from zkjepsen.docker import resources
    from zkjepsen.errors import ZkJepsenError

    try:
        return resources.docker_client()
    except ZkJepsenError as e:
        pytest.fail(f"integration tests need a Docker engine: {e}")


@pytest.fixture(scope="session")
def image_builds(docker_client, request):
    """Every image the session's tests need, ZooKeeper's first, then in the order the tests
    run; each built once, if missing, by one background thread."""
    from zkjepsen.docker import resources

    keys = [
        k
        for item in request.session.items
        if "/integration/" in str(item.fspath)
        for k in images.needed(getattr(item, "fixturenames", ()))
    ]
    builds = images.Builds(resources.docker_client, sorted(keys, key=lambda k: k != images.ZK))
    yield builds
    builds.close()  # the build under way finishes (and removes its folder); no other starts


def _image(image_builds: images.Builds, key: str) -> str:
    try:
        return image_builds.tag(key)
    except Exception as e:  # noqa: BLE001 - one sentence, in every test that needed it
        pytest.fail(f"the {key} image could not be built: {e}")


@pytest.fixture(scope="session")
def zk_image(image_builds) -> str:
    """ZooKeeper's node image (also every ZooKeeper-family client's)."""
    return _image(image_builds, images.ZK)


@pytest.fixture(scope="session")
def etcd_image(image_builds) -> str:
    return _image(image_builds, "etcd")


@pytest.fixture(scope="session")
def etcd_next_image(image_builds) -> str:
    """etcd 3.5's image (trixie): what a rolling upgrade from 3.4 moves to."""
    return _image(image_builds, "etcd-3.5")


@pytest.fixture(scope="session")
def redis_image(image_builds) -> str:
    return _image(image_builds, "redis")


@pytest.fixture(scope="session")
def pg_image(image_builds) -> str:
    return _image(image_builds, "postgres")


@pytest.fixture(scope="session")
def zk_version_image(image_builds):
    """ZooKeeper version v's node image: zk_version_image(v) -> its tag."""
    return lambda v: _image(image_builds, f"{images.ZK}-{v}")


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


def _ensemble3(docker_client, zk_image, store: Path):
    from zkjepsen.backends.zookeeper.ensemble import EnsembleSpec, ZooKeeperEnsemble

    return ZooKeeperEnsemble(EnsembleSpec(nodes=3, image=zk_image), store, client=docker_client)


@pytest.fixture(scope="session")
def shared_ensemble3(docker_client, zk_image, tmp_path_factory):
    """The one 3-node ensemble every module's `ensemble3` is (starting and removing one per
    module took ~10 s each, nine modules)."""
    with _ensemble3(docker_client, zk_image, tmp_path_factory.mktemp("ens3")) as ens:
        yield ens


def _remove_all_but_servers(docker_client, run_id: str) -> None:
    """What a module started on the ensemble's network beside its servers (clients, drivers,
    sidecars, with the run's label): the next module's clients take the same names and IPs."""
    from zkjepsen.docker import resources

    flt = {"label": f"{resources.RUN_LABEL}={run_id}"}
    for c in docker_client.containers.list(all=True, filters=flt, ignore_removed=True):
        if c.labels.get(resources.ROLE_LABEL) != "server":
            c.remove(force=True)


@pytest.fixture(scope="module")
def ensemble3(shared_ensemble3, docker_client, zk_image, tmp_path_factory):
    """A 3-node ensemble for one test module: serving with one leader when the module starts,
    its servers' containers only (tests must leave it healthy; what else a module started on it
    is removed after the module). If an earlier module left it broken (that module's own tests
    say so), this module gets a fresh one of its own."""
    from zkjepsen.errors import EnvironmentProblem

    ens = shared_ensemble3
    try:
        _remove_all_but_servers(docker_client, ens.run_id)
        ens.wait_for_quorum(60)
    except EnvironmentProblem as e:
        print(f"\nthe shared ensemble is broken ({e}): a fresh one for this module")
        with _ensemble3(docker_client, zk_image, tmp_path_factory.mktemp("ens3")) as fresh:
            yield fresh
        return
    yield ens
    _remove_all_but_servers(docker_client, ens.run_id)


pytest_plugins = ["pytester"]
