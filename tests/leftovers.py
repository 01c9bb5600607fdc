"""What an interrupted test suite left: `./run test` runs this on exit.

Usage: python tests/leftovers.py OWNERS_FILE. OWNERS_FILE lists the owner token of every process
of the suite (tests/conftest.py writes them); the runs whose every owner is one of those are the
suite's own, and `zkjepsen cleanup RUN_IDS` removes those whose owner is gone. So another
process's run, live or not, is never touched, nor a run of this suite still being torn down.
A `zkjepsen` a test started owns its runs itself: conftest.py's signal handler lets it tear them
down before the test is unwound (`let_children_tear_down`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from zkjepsen.docker import resources
from zkjepsen.errors import ZkJepsenError


def suite_runs(runs: dict[str, resources.RunResources], owners: set[str]) -> list[str]:
    """The runs every owner of which is a process of the suite (a run nobody names an owner of
    is not known to be ours)."""
    return sorted(
        r.run_id for r in runs.values() if (known := {o for o in r.owners if o}) and known <= owners
    )


def _state(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) of a live process; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0]


def zkjepsen_children(parent: int) -> list[int]:
    """The child processes of `parent` that run zkjepsen (a test's `zkjepsen test` or matrix, a
    fan-out's run): each owns its runs, which the suite's owners file does not name."""
    kids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or (_state(int(entry.name)) or (0, ""))[0] != parent:
            continue
        try:
            if b"zkjepsen" in (entry / "cmdline").read_bytes():
                kids.append(int(entry.name))
        except OSError:
            continue
    return kids


def let_children_tear_down(bound_s: float = 120.0) -> list[int]:
    """SIGTERM to this process's zkjepsen children, then wait (without reaping them: their
    Popen still does) until each has ended or `bound_s` passed; the pids still running then.
    Interrupted, a test would kill its `zkjepsen` child with SIGKILL on its way out (Popen's
    __exit__, subprocess.run), midway through that child's own teardown: its run was left up."""
    kids = zkjepsen_children(os.getpid())
    for pid in kids:
        try:
            os.kill(pid, signal.SIGTERM)  # the tool's own teardown; a second one cannot cut it
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + bound_s
    while kids and time.monotonic() < deadline:
        kids = [pid for pid in kids if (_state(pid) or (0, "Z"))[1] not in "ZX"]
        time.sleep(0.2)
    return kids


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
