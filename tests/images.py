"""The images the selected integration tests need, built once each, in the background.

On a fresh machine the images take minutes each to build (ZooKeeper 3.8 ~2 min, 3.4 ~2.5,
etcd ~1.5...). Built one by one as each module first asked for its own, they added their
build times to the suite's. Here the first integration test that needs an image starts one
background thread that builds every missing image the session's tests need, in the order the
tests will want them; a fixture waits only for its own. The ZooKeeper image comes first (nearly
every module needs it); the others build while the ZooKeeper-only modules run
(conftest.py runs the modules that need another image last).

One build at a time: a build is mostly CPU (dpkg, the drivers' javac and go build) on a 2-core
machine already running a test cluster, so a second build beside it would only slow both."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

# Which images a test needs, from the fixtures it uses (the fixtures in conftest.py).
ZK = "zookeeper"
FIXTURE_IMAGES: dict[str, tuple[str, ...]] = {
    "zk_image": (ZK,),
    "etcd_image": ("etcd",),
    "etcd_next_image": ("etcd-3.5",),  # a rolling upgrade's target (test_membership.py)
    "redis_image": ("redis",),
    "pg_image": ("postgres",),
    "memcached_image": ("memcached",),
    "mariadb_image": ("mariadb",),
}


def versions() -> list[str]:
    from zkjepsen.backends.zookeeper import versions as zkversions

    return list(zkversions.VERSIONS)


def needed(fixturenames: Iterable[str]) -> list[str]:
    """The image keys one test needs ("zookeeper", "zookeeper-3.4", "etcd", ...)."""
    names = set(fixturenames)
    out = [k for f, keys in FIXTURE_IMAGES.items() if f in names for k in keys]
    if names & {"version", "other_version"}:  # test_versions_docker: every ZooKeeper version
        out += [f"{ZK}-{v}" for v in versions()]
    return out


def recipe_of(key: str) -> Any:
    from zkjepsen.backends.etcd.image import etcd_image
    from zkjepsen.backends.registry import image_recipe
    from zkjepsen.backends.zookeeper.image import zookeeper_recipe

    if key == ZK:
        return zookeeper_recipe()
    if key.startswith(f"{ZK}-"):
        return zookeeper_recipe(key.removeprefix(f"{ZK}-"))
    if key.startswith("etcd-"):
        return etcd_image(key.removeprefix("etcd-"))
    return image_recipe(key)


class Builds:
    """Every image in `keys` (in that order), built if missing by one background thread."""

    def __init__(self, client_factory: Callable[[], Any], keys: list[str]) -> None:
        from zkjepsen.docker.image import default_tag

        self.keys = list(dict.fromkeys(keys))
        self.tags = {k: default_tag(recipe_of(k)) for k in self.keys}
        self.futures: dict[str, Future[str]] = {k: Future() for k in self.keys}
        self._client_factory = client_factory
        self._started = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def tag(self, key: str) -> str:
        """`key`'s image tag once the image exists (built now if it is not in `keys`)."""
        with self._lock:
            if key not in self.futures:
                self.keys.append(key)
                self.tags[key] = _tag_of(key)
                self.futures[key] = Future()
            if self._closed and not self.futures[key].done():
                raise RuntimeError("the session ended before it was built")
        self._start()
        return self.futures[key].result()

    def _start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
            self._thread = threading.Thread(target=self._build_all, name="image-builds")
            self._thread.start()

    def close(self) -> None:
        """Start no other build and wait for the one under way: a build cut off by the end of
        the session would leave its debootstrap folder behind (build_image removes it)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is not None:
            thread.join()
        for future in self.futures.values():  # nobody waits for these any more; say why if so
            if not future.done():
                future.set_exception(RuntimeError("the session ended before it was built"))

    def _build_all(self) -> None:
        from zkjepsen.docker.image import build_image

        client = self._client_factory()  # its own connection: the tests use theirs meanwhile
        i = 0
        while True:
            with self._lock:
                if i >= len(self.keys) or self._closed:
                    self._started = False  # a key added later starts a new thread
                    return
                key = self.keys[i]
            i += 1
            future = self.futures[key]
            if future.done():
                continue
            try:
                info = build_image(client, self.tags[key], recipe=recipe_of(key))
                if info.built:
                    print(
                        f"\nbuilt {info.tag} ({key}) in {info.build_seconds:.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )
                future.set_result(info.tag)
            except BaseException as e:  # noqa: BLE001 - the test that waits for it says so
                future.set_exception(e)


def _tag_of(key: str) -> str:
    from zkjepsen.docker.image import default_tag

    return default_tag(recipe_of(key))
