"""Shared fixtures. Integration tests run against real services in Docker; the images they
need are built in the background from the first test that needs one (tests/images.py).

How the suite runs (pyproject.toml: `-n 2 --dist loadgroup`, pytest-xdist): a group runs whole
on one worker, in order; xdist hands the groups out in the order set here (its reordering by
test count is turned off), each to the next worker that is free.
- "docker": the modules that share a session-scoped cluster (SHARED: the 3-node ensemble that
  every module's `ensemble3` is), on one worker, first: one ensemble serves them all.
- the unit tests, one group per module (its module-scoped fixtures set up once);
- every other integration module, one group of its own (it starts its own clusters): the
  ZooKeeper ones, then those that need another image (etcd, Redis, PostgreSQL...; rank 1), then
  the other ZooKeeper versions (rank 2), so that those images build in the background meanwhile;
  within a rank the longest first (LONG), so that the last to go are short.
One worker takes "docker" while the other runs unit modules; then both take whatever is next.
(Two fixed groups, every ZooKeeper module and every other image's, left a worker idle at the
end: on the same measured times, 2093 s of a 5681 s wall; this order: 136 s of 4702.)"""

from __future__ import annotations

from pathlib import Path

import images  # tests/images.py (pytest puts the conftest's folder on sys.path)
import leftovers  # tests/leftovers.py
import pytest
from hypothesis import HealthCheck, settings

# No property test may fail on time: Hypothesis's default 200 ms deadline per example and its
# too_slow health check are timed assertions, and a busy machine once failed a correct example
# at 363 ms (test_hunt_state). Every test file gets this profile, whatever it forgets to say.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

REPO = Path(__file__).resolve().parents[1]

# Modules that need an image besides ZooKeeper's run after the others, so that those images
# build in the background meanwhile: rank 1 one other image (any image not named here too),
# rank 2 the other ZooKeeper versions.
RANKS = {"etcd": 1, "etcd-3.5": 1, "redis": 1, "postgres": 1, "mariadb": 1, "memcached": 1}

# Session-scoped clusters that modules share: the modules using one are its group (one worker:
# one cluster for them all; on both workers each would start its own).
SHARED = {"ensemble3": "docker", "shared_ensemble3": "docker"}

# Ordering only: the integration modules that take minutes (seconds on a 2-core machine at load
# 40, 2026-11-28; `benchmarks/suite_time.py`), handed out first within their rank. A module not
# named counts as short; a wrong figure costs balance at the end, never a result.
LONG = {
    "test_hunt_live": 450,  # rank 1; 774-951 s at load 40-80; 1 s sessions: 93 s quiet (eaa742d)
    "test_pytest_plugin": 750,  # 940 x 110/138 s (730f150, 2026-11-29)
    "test_redis_backend": 540,  # rank 1
    "test_interrupts": 390,  # 480 x 91/111 s (1de93f7)
    "test_etcd": 470,  # rank 1
    "test_session_scenarios_live": 220,  # 370 x 88/148 s (3819d5a)
    "test_cluster": 230,  # 320 x 174/239 s (dbb6969)
    "test_client_clock_forms": 300,  # rank 1
    "test_etcd_go": 300,  # rank 1
    "test_redlock_faults": 270,  # rank 1
    "test_site_browser": 180,  # 250 x 43/61 s (f40a4e3)
    "test_stop_early": 150,  # 250 x 40/66 s (2b568dc)
    "test_phantom_live": 190,  # rank 1
    "test_install": 160,
    "test_multistep_barrier": 150,
    "test_triggered_faults": 140,
    "test_cli_e2e": 110,
    "test_clock_rate_one": 70,  # rank 1 (5 Redlock masters; 70 s at load ~50, 2026-11-29)
}


def _rank(item) -> int:
    keys = images.needed(getattr(item, "fixturenames", ()))
    ranks = [0 if k == images.ZK else RANKS.get(k, 2 if k.startswith("zookeeper-") else 1)
             for k in keys]  # fmt: skip
    return max(ranks or [0])


_interrupted = False


def _interrupt_once(signum, frame) -> None:
    """The first SIGINT/SIGTERM/SIGHUP ends the session the way Ctrl-C does (KeyboardInterrupt:
    pytest then tears down every fixture, the session's clusters too); later ones are ignored so
    that they cannot cut that teardown short (`./run test` forwards a signal to every process of
    the suite, which a terminal's Ctrl-C has already reached). First, a `zkjepsen` the test
    started is asked to end and waited for: unwound, the test would SIGKILL it midway through
    its own teardown, and its run (which the owners file does not name) would stay up."""
    global _interrupted
    if _interrupted:
        return
    _interrupted = True
    leftovers.let_children_tear_down()  # a test's `zkjepsen` child ends its runs first
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
    # xdist's controller hands the groups out in collection order, not by test count (its
    # default), so that a worker runs the unit tests before the services' group (see above).
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    owners = os.environ.get("ZKJEPSEN_SUITE_OWNERS")
    if owners:
        with open(owners, "a") as f:
            f.write(resources.owner_token() + "\n")


# tryfirst: xdist's worker adds each item's group to its node id in its own hook of this name,
# which would otherwise run before this one and find no group (the integration tests then spread
# over both workers, each starting its own shared ensemble).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Each item's group and the order xdist hands the groups out in (module docstring)."""
    ranks: dict[str, int] = {}
    shared: dict[str, str] = {}
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)
            module = str(item.fspath)
            ranks[module] = max(ranks.get(module, 0), _rank(item))
            for f in getattr(item, "fixturenames", ()):
                if f in SHARED:
                    shared[module] = SHARED[f]
    for item in items:
        module = str(item.fspath)
        group = shared.get(module, item.module.__name__)
        item.add_marker(pytest.mark.xdist_group(group))
    order = {id(item): i for i, item in enumerate(items)}

    def place(it) -> tuple[int, int, float, int]:  # shared clusters, unit tests, the others
        module = str(it.fspath)
        if module in shared:
            return (0, 0, 0.0, order[id(it)])
        if module not in ranks:
            return (1, 0, 0.0, order[id(it)])
        return (2, ranks[module], -LONG.get(it.module.__name__, 0), order[id(it)])

    items.sort(key=place)  # the order xdist hands the groups out in (pytest_configure)


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
def memcached_image(image_builds) -> str:
    return _image(image_builds, "memcached")


@pytest.fixture(scope="session")
def mariadb_image(image_builds) -> str:
    return _image(image_builds, "mariadb")


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
