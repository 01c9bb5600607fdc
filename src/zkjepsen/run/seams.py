"""The runner's seams with what is around it: the live display it reports to, its log, the
settled client count, and what it asks of the nemesis (split from runner.py, which composes
them)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from zkjepsen.history.live import LiveHistory
from zkjepsen.spec import TestSpec

if TYPE_CHECKING:
    from zkjepsen.nemesis.generator import Gen
    from zkjepsen.nemesis.schedule import NemesisPlan


class Display(Protocol):
    """The live view of a run (cli/display.py): the runner's log lines, and the run's live
    history (history/live.py) subscribed to from the main phase to the teardown."""

    def log(self, msg: str) -> None: ...
    def attach(self, live: LiveHistory, t0_ns: int, spec: TestSpec) -> None: ...
    def detach(self) -> None: ...


def settled_clients(spec: TestSpec) -> int:
    """The spec's client count, which `resolve` settles (None before: the recipe's default)."""
    if spec.clients is None:
        raise ValueError("the spec's client count is settled by run.resolve.resolve first")
    return spec.clients


def nemesis_plan(
    spec: TestSpec, faults: list[str], t0_ns: int, schedule: Any, gen: Gen | None
) -> NemesisPlan:
    """The spec's fault settings as the nemesis takes them (`schedule`: one to replay)."""
    # here, not at the top: the nemesis loads every fault's module; only a run with faults needs it
    from zkjepsen.nemesis.schedule import FAULT_PARAMS, NemesisPlan

    return NemesisPlan(
        faults,
        seed=spec.seed,
        time_limit_s=spec.time_limit_s,
        t0_ns=t0_ns,
        interval_s=spec.interval_s,
        fault_duration_s=spec.fault_duration_s,
        session_timeout_s=spec.session_timeout_s,
        schedule=schedule,
        gen=gen,
        fault_params={k: v for k, v in spec.params.items() if k in FAULT_PARAMS},
    )


class RunLog:
    """run.log in the store, mirrored to the live display when there is one."""

    def __init__(self, path: Path, display: Display | None = None) -> None:
        self.path = path
        self.display = display
        self.t0 = time.monotonic()

    def __call__(self, msg: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} +{time.monotonic() - self.t0:6.1f}s {msg}"
        with self.path.open("a") as f:
            f.write(line + "\n")
        if self.display:
            self.display.log(msg)
