"""The zkjepsen a Dask cluster's workers run, against this machine's (run/dask_executor.py's
connect): a run travels as a spec in JSON and is run and judged by the worker's own code, so a
worker with another version would run another test than the one asked for."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

import zkjepsen
from zkjepsen.errors import EnvironmentProblem

RESOURCE = "docker"  # the worker resource a run asks for (run/dask_executor.py)


@functools.lru_cache(maxsize=1)
def build_id() -> str:
    """This installation of zkjepsen: its version and a digest of its package's sources (code,
    drivers, image recipes), so that a worker with another commit installed is told apart from
    one with the same version number."""

    root = Path(zkjepsen.__file__).parent
    digest = hashlib.sha256()
    # What a wheel and a checkout both carry (pyproject's package-data): not the C sources or
    # what was compiled from them, which give the same answers by design.
    for f in sorted(root.rglob("*")):
        if f.suffix in (".py", ".go", ".java") and "__pycache__" not in f.parts:
            digest.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return f"{zkjepsen.__version__}+{digest.hexdigest()[:12]}"


def check_builds(client: Any, address: str) -> None:
    """Every worker that runs runs (has the `docker` resource) has the same zkjepsen as this
    machine: a run is a spec shipped as JSON and run by the worker's own code, so another
    version there would run (and judge) another test than the one asked for."""
    workers = [
        a
        for a, w in client.scheduler_info().get("workers", {}).items()
        if w.get("resources", {}).get(RESOURCE, 0) >= 1
    ]
    try:
        theirs = client.run(build_id, workers=workers)
    except Exception as e:  # e.g. zkjepsen not importable on a worker
        raise EnvironmentProblem(
            f"a worker of the Dask cluster at {address} cannot run zkjepsen "
            f"({type(e).__name__}: {str(e)[:120]}); install it there: "
            "pip install 'zkjepsen[cluster]'"
        ) from None
    mine = build_id()
    other = {a: b for a, b in theirs.items() if b != mine}
    if other:
        a, b = sorted(other.items())[0]
        raise EnvironmentProblem(
            f"worker {a} of the Dask cluster at {address} runs zkjepsen {b}, this machine {mine}"
            f"{f' (and {len(other) - 1} more differ)' if len(other) > 1 else ''}; install the "
            "same zkjepsen on every worker and restart it"
        )
