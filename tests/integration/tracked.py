"""Helpers of the integration tests that run zkjepsen on a second engine (test_remote_files):
zkjepsen processes tracked with their children, and the runs they left on an engine."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from zkjepsen.docker import resources

TESTS = Path(__file__).resolve().parents[1]
ZKJEPSEN = [sys.executable, "-m", "zkjepsen.cli"]
ENV = {**os.environ, "PYTHONPATH": f"{TESTS}:{os.environ.get('PYTHONPATH', '')}"}


class Descendants:
    """A process and every process it starts, remembered while they live (a run's owner label
    names the run's process, a child or grandchild of the one the test started)."""

    def __init__(self, root: int) -> None:
        self.pids = {str(root)}
        self._stop = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            for d in Path("/proc").iterdir():
                if d.name.isdigit():
                    try:
                        ppid = (d / "stat").read_text().rsplit(")", 1)[1].split()[1]
                    except (OSError, IndexError):
                        continue
                    if ppid in self.pids:
                        self.pids.add(d.name)
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()


class Tracked:
    """A zkjepsen process and every process it starts (its run workers), remembered while they
    live: other helpers share the machine's engine, so "what this test left" means the runs
    whose owner was one of these processes."""

    def __init__(self, argv: list[str], env: dict | None = None, **kw) -> None:
        self.proc = subprocess.Popen(
            [*ZKJEPSEN, *argv],
            env=env or ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **kw,
        )
        self.tree = Descendants(self.proc.pid)
        self.pids = self.tree.pids

    def communicate(self, timeout: float = 300) -> tuple[int, str]:
        out, err = self.proc.communicate(timeout=timeout)
        self.tree.stop()
        return self.proc.returncode, out + err


def zkj(*argv: str, timeout: float = 300) -> tuple[int, str, set[str]]:
    t = Tracked(list(argv))
    code, err = t.communicate(timeout)
    return code, err, t.pids


def client_of(url: str):
    from zkjepsen.docker.engine import Engine

    return Engine.parse(url).client()


def leftovers(url: str, pids: set[str] | None = None) -> list[str]:
    """Runs on the engine (containers, networks or scratch dirs) owned by one of `pids`
    (None: any owner, for the second engine, which only this module uses)."""
    runs = resources.find_runs(client_of(url), client_of_key(url))
    return sorted(
        r for r, v in runs.items() if pids is None or any(o.split(":")[0] in pids for o in v.owners)
    )


def client_of_key(url: str) -> str:
    from zkjepsen.docker.engine import Engine

    return Engine.parse(url).key
