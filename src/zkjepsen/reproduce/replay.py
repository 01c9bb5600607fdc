"""Replay a stored run's fault schedule, and shrink it to the smallest schedule that still breaks.

Real systems are not deterministic: the same faults at the same times give a different
interleaving every time. So a replay is judged by a *rate* ("the belief overlap recurred in 4 of
5 replays"), and shrinking keeps a candidate only if its violation recurs at a stated rate.

Replay semantics: every fault is re-run at its recorded offset from the test's start, for its
recorded length. A fault whose target was a *role* (the lock holder, the leader) is re-aimed at
whoever has that role at replay time (`retarget=True`, the default): the client that held the
lock at 14.1 s in the original need not hold it at 14.1 s in the replay, and pausing a waiter
reproduces nothing. Faults aimed at a random or explicit target keep the recorded identity.
A triggered fault is re-armed when it was armed and fires on its event again (not at the time
the original fired), aimed at whoever the new event names.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from zkjepsen.checker import Result, as_result
from zkjepsen.docker.engine import Engine
from zkjepsen.nemesis.executed import FaultOp
from zkjepsen.nemesis.triggers import Trigger
from zkjepsen.run.fanout import Job
from zkjepsen.run.many import run_jobs
from zkjepsen.run.recording import record_schedule
from zkjepsen.run.runner import RunResult
from zkjepsen.run.stored import StoredRun
from zkjepsen.spec import TestSpec

ROLE_CHOICES = ("holder", "leader")
WARMUP_S = 4.0  # clients connected and contending before the first fault of a shifted schedule
MARGIN_S = 3.0  # main phase kept after the last fault / the violation


def violation_kinds(results: Result | Mapping[str, Any] | None) -> set[str]:
    """What broke, as comparable labels `checker:kind` (`lock:belief`, `lock:effect`,
    `counter:lost`, `liveness:stuck`...), or the bare checker name for a checker that says
    only "invalid". Takes a Result or a stored results.json table."""
    kinds: set[str] = set()
    res = as_result(results)
    for name, part in (res.parts or {"": res}).items():
        if part.valid is not False:
            continue
        labels = {f"{name}:{v.kind}" if name else v.kind for v in part.violations}
        kinds |= labels or ({name} if name else set())
    return kinds


def first_violation_ns(results: Result | Mapping[str, Any] | None) -> int | None:
    """Earliest end of any reported violation window (when the break was complete)."""
    times = [v.end or v.start for _, v in as_result(results).named_violations()]
    return min((t for t in times if t is not None), default=None)


def faults_text(faults: list[FaultOp]) -> str:
    """Faults as `replay` and `shrink` print them: each its name, its trigger (else when it
    started, in seconds since the test's start) and its lane when not the first."""

    def one(f: FaultOp) -> str:
        when = f" {Trigger.from_json(dict(f.trigger)).describe()}" if f.trigger else ""
        when = when or f"@{f.start_s:.1f}s"
        return f"{f.f}{when}" + (f" lane {f.lane}" if f.lane else "")

    return ", ".join(one(f) for f in faults) or "no fault"


def faults_for_replay(faults: list[FaultOp], retarget: bool = True) -> list[FaultOp]:
    """A run's executed faults made replay-ready (`FaultOp.replay_ready`: only what a replay
    re-runs, in its lane), re-aimed at a role's holder where the original was."""
    out = []
    for f in faults:
        g = f.replay_ready()
        chosen = (f.detail or {}).get("chosen")
        if f.trigger:
            # Re-armed, not re-timed: armed when the original was, it fires on its event again.
            g = replace(g, armed_ns=(f.fired or {}).get("armed_ns", f.armed_ns))
            if f.target == "trigger":
                g = replace(g, targets=None, detail=None)  # aimed at whom the new event names
        elif retarget and (chosen in ROLE_CHOICES or f.target in ROLE_CHOICES):
            # re-resolved at replay time by role
            target = chosen if chosen in ROLE_CHOICES else f.target
            g = replace(g, targets=None, target=target, detail=None)
        out.append(g)
    return out


def replay(
    run: StoredRun,
    runs: int = 1,
    retarget: bool = True,
    store_root: Path | None = None,
    spec: TestSpec | None = None,
    faults: list[FaultOp] | None = None,
    on_result: Callable[[int, RunResult], None] = lambda i, r: None,
    engine: Engine | None = None,
    parallel: int = 1,
    cluster=None,
) -> list[RunResult]:
    """Re-execute the schedule (or `faults`) against fresh ensembles `runs` times, at most
    `parallel` at once on `engine` (default: the environment's engine), or as tasks on the
    Dask `cluster` (a connected client)."""
    spec = copy.deepcopy(spec or run.spec)
    if faults is None:
        faults = faults_for_replay(run.faults, retarget)
    schedule = {"faults": [f.to_json() for f in faults]}
    record_schedule(spec, None, schedule)  # it names the faults it replays, runs no generator
    spec.name = f"{run.spec.name or spec.test_name}-replay"
    jobs = [Job(spec, schedule, i) for i in range(runs)]
    outcomes = run_jobs(
        jobs,
        engine,
        parallel,
        store_root,
        on_done=lambda i, o: on_result(i, o.run),
        cluster=cluster,
    )
    return [o.run for o in outcomes]
