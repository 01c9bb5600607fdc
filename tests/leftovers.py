"""What an interrupted test suite left: `./run test` runs this on exit.

Usage: python tests/leftovers.py OWNERS_FILE. OWNERS_FILE lists the owner token of every process
of the suite (tests/conftest.py writes them); the runs whose every owner is one of those are the
suite's own, and `zkjepsen cleanup RUN_IDS` removes those whose owner is gone. So another
process's run, live or not, is never touched, nor a run of this suite still being torn down."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from zkjepsen.docker import resources
from zkjepsen.errors import ZkJepsenError


def suite_runs(runs: dict[str, resources.RunResources], owners: set[str]) -> list[str]:
    """The runs every owner of which is a process of the suite (a run nobody names an owner of
    is not known to be ours)."""
    return sorted(
        r.run_id for r in runs.values() if (known := {o for o in r.owners if o}) and known <= owners
    )


def _runs() -> dict[str, resources.RunResources]:
    try:
        return resources.find_runs(resources.docker_client())
    except ZkJepsenError:
        return {}  # no engine: nothing of ours can be on one


def main(owners_file: str) -> int:
    try:
        owners = set(Path(owners_file).read_text().split())
    except OSError:
        return 0  # the suite never started a process
    ours = suite_runs(_runs(), owners)
    if not ours:
        return 0
    print(f"run: removing what the test suite left: {' '.join(ours)}", file=sys.stderr)
    cmd = [sys.executable, "-m", "zkjepsen.cli", "cleanup", *ours]
    return subprocess.run(cmd, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
