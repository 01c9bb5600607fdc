"""The code a controller container runs (run/controller.py): zkjepsen and its dependencies,
as an image derived from the node image on the engine itself.

Why an image and not a copy per run: the node image already carries Debian bookworm's python3
(3.11, like ours, so the same wheels load), and the code is the same for every run of one
zkjepsen installation. So it is put once per engine and per version of the code: a container of
the node image is created (never started), a tar of our package and its dependencies'
installed files is put into it through the engine's API (`put_archive`, the only channel an
engine on another host offers), and it is committed as `zkjepsen/controller:<hash>`, the hash
of the files' names, sizes and times and of the base image. A matrix of 100 runs ships the code
once; a new checkout ships it again. No registry and no builder are involved.

What goes in: the distributions zkjepsen requires (their installed files, as recorded in their
RECORD, with their metadata: the controller mounts kazoo & co. into client containers by
distribution name, as the runner does here) and the client libraries (client/pool.py), except
the plotting stack (matplotlib, numpy, pillow, ...: ~125 of ~150 MB): reports are rendered on
this machine once the run's folder is back.
"""

from __future__ import annotations

import hashlib
import os
import re
import tarfile
import tempfile
import time
from importlib import metadata
from pathlib import Path

from zkjepsen.docker import resources
from zkjepsen.errors import EnvironmentProblem

REPO = "zkjepsen/controller"
CODE_DIR = "/opt/zkjepsen-controller"
SITE = f"{CODE_DIR}/site"  # the dependencies
SRC = f"{CODE_DIR}/src"  # zkjepsen alone: what the runner mounts into client containers
# Reports are rendered locally after the fetch: the controller needs none of these.
PLOTTING = {"matplotlib", "numpy", "pillow", "fonttools", "kiwisolver", "contourpy", "cycler"}
SKIP_PARTS = ("__pycache__",)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions() -> list[metadata.Distribution]:
    """zkjepsen's installed dependency closure (no extras, no plotting) plus the client
    libraries the runner mounts into client containers."""
    from zkjepsen.client.pool import CLIENT_DISTRIBUTIONS

    seen: dict[str, metadata.Distribution] = {}
    todo = ["zkjepsen", *CLIENT_DISTRIBUTIONS]
    while todo:
        name = todo.pop()
        key = _norm(name)
        if key in seen or key in PLOTTING:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional one (the runner skips it too)
        seen[key] = dist
        for req in dist.requires or ():
            if "extra ==" in req:
                continue
            todo.append(re.split(r"[ <>=!~;\[(]", req.strip(), maxsplit=1)[0])
    return [d for k, d in sorted(seen.items()) if k != "zkjepsen"]


def files() -> list[tuple[Path, str]]:
    """(local file, path in the image) of everything the controller needs."""
    import zkjepsen

    out: list[tuple[Path, str]] = []
    pkg = Path(zkjepsen.__file__).resolve().parent
    for p in sorted(pkg.rglob("*")):
        if p.is_file() and not any(s in p.parts for s in SKIP_PARTS):
            out.append((p, f"{SRC}/zkjepsen/{p.relative_to(pkg)}"))
    for dist in distributions():
        for f in dist.files or ():
            if ".." in f.parts or any(s in f.parts for s in SKIP_PARTS):
                continue  # scripts outside site-packages, bytecode
            local = Path(str(dist.locate_file(f)))
            if local.is_file():
                out.append((local, f"{SITE}/{f.as_posix()}"))
    return out


def code_hash(items: list[tuple[Path, str]], base_id: str) -> str:
    h = hashlib.sha256(base_id.encode())
    for local, inside in items:
        st = local.stat()
        h.update(f"{inside}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def tar_of(items: list[tuple[Path, str]], fileobj) -> int:
    """Write a tar of `items` (paths in the image, without the leading /); returns its size."""
    with tarfile.open(fileobj=fileobj, mode="w") as tar:
        for local, inside in items:
            info = tar.gettarinfo(str(local), arcname=inside.lstrip("/"))
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode = 0o644
            with local.open("rb") as f:
                tar.addfile(info, f)
    return fileobj.tell()


def put_files(client, cid: str, items: list[tuple[Path, str]]) -> int:
    """Put local files into a (created, maybe not started) container; returns bytes sent."""
    with tempfile.TemporaryFile() as f:
        size = tar_of(items, f)
        f.seek(0)
        if not client.api.put_archive(cid, "/", f):
            raise EnvironmentProblem(f"the engine refused the files put into container {cid[:12]}")
    return size


def controller_image(client, base: str, on_status=lambda msg: None) -> tuple[str, dict]:
    """The controller image for this code on the engine behind `client`, committed from the
    node image `base` if the engine lacks it. Returns (tag, figures: bytes, seconds; empty when
    the engine had it already)."""
    import docker.errors

    items = files()
    base_id = client.images.get(base).id
    tag = f"{REPO}:{code_hash(items, base_id)}"
    try:
        client.images.get(tag)
        return tag, {}
    except docker.errors.ImageNotFound:
        pass
    t0 = time.monotonic()
    # Unique per builder: two zkjepsen processes that both find the image missing (two `test`
    # commands at once) each build and commit the same tag, instead of clashing on a name.
    build_id = f"zkj-ctlbuild-{time.strftime('%Y%m%d%H%M%S')}-{tag[-6:]}-{os.urandom(3).hex()}"
    api = client.api
    cid = api.create_container(
        base,
        name=build_id,
        entrypoint=["true"],
        labels=resources.labels(build_id, "controller-build"),
    )["Id"]
    try:
        on_status(f"putting zkjepsen and its libraries ({len(items)} files) into the engine")
        size = put_files(client, cid, items)
        api.commit(
            cid,
            repository=REPO,
            tag=tag.partition(":")[2],
            conf={
                "Env": [
                    f"PYTHONPATH={SRC}:{SITE}",
                    "PYTHONDONTWRITEBYTECODE=1",
                    "PYTHONUNBUFFERED=1",
                ],
                "Entrypoint": ["python3", "-m", "zkjepsen.run.inside"],
                "Cmd": [],
                "WorkingDir": "/",
                "Labels": {"zkjepsen.controller-of": base},
            },
        )
    finally:
        resources.remove_run(client, build_id)
    return tag, {"bytes": size, "files": len(items), "seconds": time.monotonic() - t0}


def read_tar_stream(chunks, dest: Path) -> None:
    """Extract a get_archive stream under `dest` (spooled: a run's folder is a few MB)."""
    with tempfile.SpooledTemporaryFile(max_size=64 << 20) as f:
        for chunk in chunks:
            f.write(chunk)
        f.seek(0)
        with tarfile.open(fileobj=f, mode="r") as tar:
            tar.extractall(dest, filter="data")
