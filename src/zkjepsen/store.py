"""The store: `store/<test-name>/<YYYYmmddTHHMMSS>/` with a `latest` link per test."""

from __future__ import annotations

import os
import time
from pathlib import Path

DEFAULT_ROOT = Path(os.environ.get("ZKJEPSEN_STORE", "store"))


def new_run_dir(test_name: str, root: Path | None = None) -> Path:
    """Create a fresh directory for one run and point `<test-name>/latest` at it."""
    base = (root or DEFAULT_ROOT) / test_name
    base.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    run_dir = base / stamp
    n = 1
    while run_dir.exists():  # two runs in one second: keep both
        n += 1
        run_dir = base / f"{stamp}-{n}"
    run_dir.mkdir()
    latest = base / "latest"
    tmp = base / f".latest-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(run_dir.name)
    tmp.replace(latest)  # atomic: a reader never sees a missing `latest`
    return run_dir
