"""The files containers read and write, on an engine that shares this machine's filesystem or not.

What a run's containers need of this machine's files, and what they give back:
- ZooKeeper servers read their config (/zk/conf: zoo.cfg, log4j.properties), their data dir
  (/zk/data: myid) and their libfaketime control file (/zk/faketime, rewritten by clock faults
  during the run); they write their log into the run's folder (/zk/log).
- Redis/PostgreSQL servers read /srv/conf, /srv/data and /srv/faketime the same way.
- Clients read our package (/opt/zkjepsen/src/zkjepsen, from a checkout or site-packages), the
  client libraries (/opt/zkjepsen/site: kazoo, redis, psycopg, ...), a user's recipe package
  (/opt/zkjepsen/user), a wire-protocol program's directory (/opt/zkjepsen/program) and the
  run's control dir (/control: their spec, their libfaketime control file, the start barrier
  written when the main phase begins); they write their history into /out, which the runner
  tails live (the display, the holder tracker that triggered faults follow, the start barrier's
  connect check).

On an engine that shares this machine's filesystem (the machine's own dockerd, a second one
beside it) these are bind mounts: nothing is copied and a write on either side is seen at once.
On one that does not (another host; a dockerd in its own mount namespace), a bind mount names a
path the engine lacks: Docker refuses a `Mount`, and a `-v` bind silently makes an empty
directory there, so ZooKeeper has no config and the clients no code. There the same files go
through the engine's API instead: each bind's contents are put into the container before it
starts (put_archive, so there is nothing extra to clean up: they live and die with it), a
rewritten control file is put again into the containers that mount it, and what containers write
is fetched back into the local store (get_archive): live every POLL_S for the clients' /out
(files there are append-only, so only new bytes are appended locally and tailers work
unchanged), and once more before the containers are removed.

Shared or not is asked of the engine itself, not guessed from its URL (a unix socket can lead
into another mount namespace; a tcp:// address can be this machine): a container is created, not
started, with this run's scratch dir as a `Mount` of type bind, which Docker refuses when the
source does not exist on the engine's side; when it does exist, a random token written there is
read back through the engine (get_archive) and compared. `ZKJEPSEN_FILES=copy` forces the API
path on any engine (tests and benchmarks compare the two on one engine).
"""

from __future__ import annotations

import io
import os
import secrets
import tarfile
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from zkjepsen.docker import resources
from zkjepsen.errors import BadInput

MODE_ENV = "ZKJEPSEN_FILES"  # auto (default): probe the engine; copy: never bind; bind: always
POLL_S = 0.1  # how often the clients' /out is fetched on a copying engine (the tailers' pace)
SKIP = ("__pycache__",)


def files_mode() -> str:
    """ZKJEPSEN_FILES, checked: auto, copy or bind; anything else is bad input."""
    value = os.environ.get(MODE_ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "copy", "bind"):
        raise BadInput(
            f"{MODE_ENV}={os.environ[MODE_ENV]!r} is not one of auto, copy, bind (auto: bind "
            "mounts when the engine shares this machine's files, copies otherwise)"
        )
    return value


def shares_filesystem(client, image: str, run_id: str, scratch: Path) -> bool:
    """Does the engine behind `client` see this machine's `scratch` dir as we do? (Above.)"""
    # here, not at the top: the Docker SDK (requests, urllib3) only where Docker is used
    import docker.errors
    from docker.types import Mount

    forced = files_mode()
    if forced in ("copy", "bind"):
        return forced == "bind"
    probe = scratch / "fs-probe"
    probe.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(16)
    (probe / "token").write_text(token)
    api = client.api
    try:
        cid = api.create_container(
            image,
            # A name of its own: a run may probe twice (`client check --in-image`, then its
            # ensemble) while the first probe is still being removed in the background.
            name=f"{run_id}-fsprobe-{secrets.token_hex(3)}",
            entrypoint=["true"],
            network_disabled=True,
            labels=resources.labels(run_id, "probe"),
            host_config=api.create_host_config(
                mounts=[Mount("/probe", str(probe), type="bind", read_only=True)]
            ),
        )["Id"]
    except docker.errors.APIError as e:
        if "No such image" in str(e):
            return True  # cannot tell; creating the servers says the image is missing
        if "does not exist" in str(e) or "no such file" in str(e).lower():
            return False  # the engine has no such path: it does not share our filesystem
        raise
    try:
        seen = _read_member(b"".join(api.get_archive(cid, "/probe/token")[0]))
        return seen == token.encode()
    except docker.errors.NotFound:
        return False
    finally:
        # Removed beside the run's start, not before it (a call takes ~0.3 s on a busy
        # engine); if this process ends first, the run's teardown or `cleanup` removes it by
        # its label.
        threading.Thread(target=_remove, args=(api, cid), daemon=True).start()


def _remove(api, cid: str) -> None:
    try:
        api.remove_container(cid, force=True)
    except Exception:  # noqa: BLE001 - already gone (the teardown got there first)
        pass


def _read_member(tar_bytes: bytes) -> bytes | None:
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as t:
        for m in t.getmembers():
            if m.isfile():
                f = t.extractfile(m)
                return f.read() if f else None
    return None


def _skip(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    parts = Path(info.name).parts
    if any(p in SKIP for p in parts) or info.name.endswith(".pyc"):
        return None
    return info


def tar_of(binds: Iterable[tuple[str, str]], files: dict[str, Path] | None = None) -> bytes:
    """A tar (names relative to /) with each host path at its container path; `files`: single
    files, container path -> host path."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for host, cpath in binds:
            if Path(host).exists():
                t.add(host, arcname=cpath.lstrip("/"), filter=_skip)
        for cpath, source in (files or {}).items():
            t.add(str(source), arcname=cpath.lstrip("/"), recursive=False)
    return buf.getvalue()


class Files:
    """One run's container files on one engine: bind mounts when `shared`, copies otherwise."""

    def __init__(self, client=None, shared: bool = True) -> None:
        self.client = client
        self.shared = shared
        self._binds: dict[str, dict[str, dict]] = {}  # container id -> its binds
        self._out: dict[str, list[tuple[str, Path]]] = {}  # id -> (container dir, host dir)
        self._live: set[str] = set()  # ids whose out dirs are fetched every POLL_S
        self._done: set[str] = set()  # ids fetched after they stopped: nothing more to fetch
        self._cache: dict[tuple, bytes] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_engine(cls, client, image: str, run_id: str, scratch: Path) -> Files:
        return cls(client, shares_filesystem(client, image, run_id, scratch))

    @property
    def mode(self) -> str:
        return "bind" if self.shared else "copy"

    def binds(self, binds: dict[str, dict]) -> dict[str, dict]:
        """What to give create_host_config(binds=...): all of them, or none on a copying
        engine."""
        return binds if self.shared else {}

    def attach(
        self,
        cid: str,
        binds: dict[str, dict],
        out: Iterable[str] = (),
        static: Iterable[str] = (),
        live: bool = False,
    ) -> None:
        """Before container `cid` starts: copy every bind's contents into it (on a copying
        engine). `out`: container paths it writes that belong in the local store (fetched back
        at `collect`, and every POLL_S while `live`); `static`: host paths whose contents do not
        change during the run (their tar is made once, e.g. the client code)."""
        if self.shared:
            return
        static = set(static)
        fixed = tuple(sorted((h, b["bind"]) for h, b in binds.items() if h in static))
        rest = [(h, b["bind"]) for h, b in binds.items() if h not in static]
        if fixed:
            with self._lock:
                data = self._cache.get(fixed)
            if data is None:
                data = tar_of(fixed)
                with self._lock:
                    self._cache[fixed] = data
            self.client.api.put_archive(cid, "/", data)
        if rest:
            self.client.api.put_archive(cid, "/", tar_of(rest))
        by_cpath = {b["bind"]: Path(h) for h, b in binds.items()}
        with self._lock:
            self._binds[cid] = binds
            self._out[cid] = [(c, by_cpath[c]) for c in out]
            if live:
                self._live.add(cid)

    def push(self, host_file: Path) -> None:
        """`host_file` (under some container's bind) was rewritten here: put it into every
        container that mounts it. Atomic enough for its readers: they retry a file that is
        momentarily absent or empty (the start barrier) or keep the last value they read
        (libfaketime)."""
        if self.shared:
            return
        host_file = Path(host_file)
        with self._lock:
            targets = [
                (cid, b["bind"], Path(h))
                for cid, binds in self._binds.items()
                for h, b in binds.items()
                if host_file.is_relative_to(h)
            ]

        def put(target: tuple[str, str, Path]) -> None:
            cid, cpath, h = target
            where = f"{cpath.rstrip('/')}/{host_file.relative_to(h)}" if host_file != h else cpath
            try:
                self.client.api.put_archive(cid, "/", tar_of((), {where: host_file}))
            except Exception:  # noqa: BLE001 - a removed container needs no clock any more
                pass

        _each(put, targets)  # at once: the start barrier reaches every client together

    def pull(self, cid: str) -> None:
        """Fetch container `cid`'s out dirs into their local dirs (new bytes are appended)."""
        if self.shared:
            return
        with self._lock:
            outs = list(self._out.get(cid, ()))
        for cpath, host in outs:
            try:
                stream, _ = self.client.api.get_archive(cid, cpath)
                data = b"".join(stream)
            except Exception:  # noqa: BLE001 - not there (yet), or the container is gone
                continue
            _merge(data, host)

    def pull_all(self, ids: Iterable[str] | None = None) -> None:
        """Fetch `ids` (default: every container not collected yet) at once."""
        with self._lock:
            ids = [i for i in (self._out if ids is None else ids) if i not in self._done]
        _each(self.pull, ids)

    def start_live(self) -> None:
        """Fetch the live containers' out dirs every POLL_S until `collect()`."""
        if self.shared or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._follow, name="files-live", daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        # One get_archive is ~10 ms on an idle engine but ~200 ms on a loaded one (measured at
        # load 32): fetch the clients at once, so a round takes the slowest one, not their sum.
        with ThreadPoolExecutor(max_workers=8, thread_name_prefix="files-live") as pool:
            while not self._stop.wait(POLL_S):
                with self._lock:
                    ids = list(self._live)
                list(pool.map(self.pull, ids))

    def collect(self, ids: Iterable[str] | None = None) -> None:
        """Stop the live fetch and fetch once more: `ids`, stopped containers (the clients,
        once they exited), are not fetched again; default every container left, before the
        containers are removed."""
        if self.shared:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        ids = list(ids) if ids is not None else None
        self.pull_all(ids)
        if ids is not None:
            with self._lock:
                self._done.update(ids)


def _each(fn, items: list) -> None:
    """fn(item) for every item, at once (API calls that each wait on the engine)."""
    if len(items) <= 1:
        for item in items:
            fn(item)
        return

    with ThreadPoolExecutor(max_workers=min(8, len(items))) as pool:
        list(pool.map(fn, items))


def _merge(tar_bytes: bytes, host_dir: Path) -> None:
    """Write a fetched dir's files under `host_dir`: append the bytes a local copy lacks (the
    files are append-only, and tailers read by offset), rewrite one that shrank."""
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as t:
        for m in t.getmembers():
            parts = Path(m.name).parts[1:]  # the archive's first part is the dir's own name
            if not m.isfile() or not parts or ".." in parts:
                continue
            f = t.extractfile(m)
            if f is None:
                continue
            data = f.read()
            local = host_dir.joinpath(*parts)
            local.parent.mkdir(parents=True, exist_ok=True)
            have = local.stat().st_size if local.exists() else 0
            if len(data) == have:
                continue
            if len(data) > have:
                with open(local, "ab") as fh:
                    fh.write(data[have:])
            else:
                tmp = local.with_name(f".{local.name}.fetch")
                tmp.write_bytes(data)
                os.replace(tmp, local)
