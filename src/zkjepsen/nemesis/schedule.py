"""Executing a fault plan against a live run: history records, schedule.json, always a heal.

`run_nemesis` is the runner's one blocking entry point. It plans from the seed (or replays an
executed schedule), starts and ends each fault on the real clock, writes a `start` and an `end`
nemesis op per fault to the run's nemesis.jsonl, rewrites its schedule.json after
every fault (a crash still leaves what ran), and heals everything before returning - also on an
exception, Ctrl-C (KeyboardInterrupt) or the runner's SIGTERM (`resources.Terminated`).
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkjepsen.backends.base import Backend
from zkjepsen.docker.signals import signals_deferred
from zkjepsen.faultkinds import landing
from zkjepsen.faultkinds.landing import unobserved
from zkjepsen.nemesis import (
    Nemesis,
    NemesisError,
    NoTargets,
    clock,
    disk,
    generator,
    partition,
    process,
)
from zkjepsen.nemesis.arming import MISS_FIELDS, await_trigger
from zkjepsen.nemesis.arming import landed as fault_landed
from zkjepsen.nemesis.executed import replay_plan
from zkjepsen.nemesis.faults import FAULTS
from zkjepsen.nemesis.nemesis_log import NemesisLog
from zkjepsen.nemesis.targets import NemesisContext, ScheduleFiles
from zkjepsen.nemesis.triggers import Trigger


class FaultNemesis(Nemesis):
    """The `Nemesis` for every registered fault kind; `invoke` runs op["f"]'s kind."""

    def __init__(
        self, ctx: NemesisContext, names: list[str], seed: int = 0, log: NemesisLog | None = None
    ) -> None:
        unknown = [n for n in names if n not in FAULTS and n != "heal"]
        if unknown:
            raise NemesisError(f"unknown fault(s) {', '.join(unknown)}")
        self.ctx, self.names, self.seed, self.log = ctx, names, seed, log
        # The started, not yet ended, faults by fault id (lanes overlap: several at once).
        self.current: dict[Any, dict[str, Any]] = {}
        self.started: dict[Any, dict[str, Any]] = {}  # fault id -> its start record's value
        self.heal_problems: list[str] = []  # what the last teardown could not heal

    def setup(self) -> None:
        # Every fault acts on containers the harness already made; the disk faults' layer
        # first settles what the servers wrote while starting (nemesis/disk.py).
        if any(FAULTS[n].family == "disk" for n in self.names):
            disk.settle(self.ctx)

    def fs(self) -> list[str]:
        return list(self.names)

    def invoke(self, op: dict[str, Any]) -> dict[str, Any]:
        kind = FAULTS[op["f"]]
        op = dict(op)
        if op["phase"] == "start":
            if op.get("targets") is None:  # replays carry resolved targets; plans do not
                rng = random.Random(f"{self.seed}:{op['fault_id']}")
                op["targets"], op["detail"] = kind.resolve(
                    self.ctx, op.get("aim") or op.get("target"), rng, op.get("params") or {}
                )
            # One dict for apply and undo to record in; a replay's, without the old observations
            op["detail"] = unobserved(op.get("detail"))
            op["start_ns"] = self._now()
            self._record(op, "start")
            self.current[op["fault_id"]] = op  # an interrupt inside apply still ends it
            try:
                kind.apply(self.ctx, op["targets"], op["detail"])
            except Exception as e:  # noqa: BLE001 - recorded; the end undoes what went in
                op["error"] = f"{type(e).__name__}: {e}"
            op["applied_ns"] = self._now()
        else:
            try:
                kind.undo(self.ctx, op["targets"], op.setdefault("detail", {}))
            except Exception as e:  # noqa: BLE001 - teardown's heal_all still runs
                op["end_error"] = f"{type(e).__name__}: {e}"
            op["end_ns"] = self._now()
            self._record(op, "end")
            self.current.pop(op["fault_id"], None)
        return op

    def teardown(self) -> None:
        """Heal everything; what could not be healed is in `heal_problems`."""
        self.heal_problems = heal_context(self.ctx)

    def _now(self) -> int:
        return self.log.now() if self.log else time.monotonic_ns()

    def _record(self, op: dict[str, Any], phase: str) -> None:
        value = {"fault_id": op["fault_id"], "phase": phase, "targets": op["targets"]}
        if op.get("detail"):
            value["detail"] = op["detail"]
        for k in ("trigger", "fired", "attempt", "error", "end_error"):
            if op.get(k):
                value[k] = op[k]
        if phase == "end" and op.get("landed") is not None:
            value["landed"] = op["landed"]  # where it landed: inside the event's state or not
        if phase == "start":
            self.started[op["fault_id"]] = json.loads(json.dumps(value, default=str))
        else:  # did it land? the power line's predicate on the same two records (schedule.json)
            seen = landing(op["f"], self.started.pop(op["fault_id"], {}), value)
            op["observed"] = value["observed"] = seen._asdict()
        if self.log is not None:
            self.log.record(op["start_ns"] if phase == "start" else op["end_ns"], op["f"], value)


def heal_context(ctx: NemesisContext, everything: bool = False) -> list[str]:
    """Thaw first (iptables cannot run in a frozen container), then remove the run's chain
    everywhere, then put clocks back on real time. Returns what could not be healed."""
    problems = process.heal(ctx)
    problems += partition.heal(ctx)
    problems += clock.heal(ctx, everything=everything)
    return problems


def heal_all(backend: Backend, pool: Any = None) -> list[str]:
    """Heal a run from scratch (teardown, a test leaving a shared ensemble whole): resume every
    frozen container, start stopped servers, drop the run's iptables chain in every container,
    reset every server's clock. Returns what could not be healed."""
    return heal_context(NemesisContext(backend, pool), everything=True)


def _wait_until(deadline_ns: int, stop: threading.Event) -> bool:
    """Sleep until the monotonic deadline; True if stopped first."""
    while True:
        left = (deadline_ns - time.monotonic_ns()) / 1e9
        if left <= 0:
            return stop.is_set()
        if stop.wait(min(left, 0.5)):
            return True


FAULT_PARAMS = generator.FAULT_PARAMS  # for the runner, which loads the nemesis lazily


@dataclass(frozen=True)
class NemesisPlan:
    """What the runner asks of the nemesis. `names`: the faults of the standard mix; `gen`: a
    custom generator instead of it; `schedule`: an executed schedule (schedule.json's dict or
    its "faults" list) to replay at its recorded times since `t0_ns` with its resolved
    targets. Faults run until `time_limit_s` after the start."""

    names: list[str]
    seed: int
    time_limit_s: float
    t0_ns: int
    interval_s: float = 10.0
    fault_duration_s: float = 8.0
    session_timeout_s: float = 4.0
    schedule: Any = None
    gen: generator.Gen | None = None
    fault_params: dict[str, Any] = field(default_factory=dict)  # generator.FAULT_PARAMS


def run_nemesis(
    backend: Backend,
    pool: Any,
    plan: NemesisPlan,
    files: ScheduleFiles,
    stop_event: threading.Event | None = None,
) -> list[dict]:
    """Run `plan`'s faults until its time limit (or `stop_event`), heal, return the executed
    faults (as in schedule.json)."""
    names, seed, t0_ns, time_limit_s = plan.names, plan.seed, plan.t0_ns, plan.time_limit_s
    interval_s, fault_duration_s = plan.interval_s, plan.fault_duration_s
    session_timeout_s, schedule, gen = plan.session_timeout_s, plan.schedule, plan.gen
    files.path.mkdir(parents=True, exist_ok=True)
    stop = stop_event or threading.Event()
    log = NemesisLog(files.nemesis_log, t0_ns)
    ctx = NemesisContext(backend, pool, session_timeout_s=session_timeout_s)
    origin_ns = time.monotonic_ns()
    env = generator.Env(session_timeout_s, fault_duration_s, plan.fault_params)
    if schedule is not None:
        planned = replay_plan(schedule)
        names = sorted({p["f"] for p in planned})
    else:
        g = gen or generator.standard(names, time_limit_s=time_limit_s, interval_s=interval_s)
        planned = generator.plan(g, seed, env)
        names = sorted(set(names) | {p["f"] for p in planned if p["f"] != "heal"})
    nem = FaultNemesis(ctx, [n for n in names if n != "none"], seed, log)
    meta: dict[str, Any] = {
        "seed": seed,
        "names": names,
        "time_limit_s": time_limit_s,
        "interval_s": interval_s,
        "fault_duration_s": fault_duration_s,
        "session_timeout_s": session_timeout_s,
        "replay": schedule is not None,
        "planned": planned,
        "origin_ns": origin_ns - t0_ns,
        "run_id": backend.run_id,
    }
    executed: list[dict] = []
    nem.setup()
    try:
        lanes = _lanes(planned)
        run = _Lane(nem, log, meta, executed, files, env, schedule is not None, t0_ns, origin_ns,
                    origin_ns + int(time_limit_s * 1e9))  # fmt: skip
        if len(lanes) == 1:
            run(lanes[0], stop)
        else:
            _side_by_side(run, lanes, stop)
        _wait_until(origin_ns + int(time_limit_s * 1e9), stop)
    finally:
        _final_heal(nem, log, meta, executed, files)
    return executed


def _lanes(planned: list[dict]) -> list[list[dict]]:
    """The plan by lane (generator.lanes), each in its order; heals go with lane 0."""
    by: dict[int, list[dict]] = {}
    for p in planned:
        by.setdefault(int(p.get("lane") or 0), []).append(p)
    return [by[k] for k in sorted(by)] or [[]]


def _side_by_side(run: Any, lanes: list[list[dict]], stop: threading.Event) -> None:
    """Each lane in a thread of its own until all have ended. A stop (or an interrupt of this
    thread) halts every lane; the first error of a lane is raised here once all have ended,
    so the heal that follows never races a lane still starting a fault."""
    halt = threading.Event()
    errors: list[BaseException] = []

    def one(lane: list[dict]) -> None:
        try:
            run(lane, halt)
        except BaseException as e:  # noqa: BLE001 - raised in the caller's thread below
            errors.append(e)
            halt.set()

    threads = [threading.Thread(target=one, args=(lane,), daemon=True) for lane in lanes]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            if stop.wait(0.05):
                halt.set()
            for t in threads:
                t.join(0.01)
    finally:
        halt.set()
        for t in threads:
            t.join()
    if errors:
        raise errors[0]


@dataclass
class _Lane:
    """Runs one lane's planned faults, one after another (the nemesis's one loop)."""

    nem: FaultNemesis
    log: NemesisLog
    meta: dict
    executed: list[dict]
    files: ScheduleFiles
    env: generator.Env
    replay: bool
    t0_ns: int
    origin_ns: int
    limit_ns: int
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, planned: list[dict], stop: threading.Event) -> None:
        nem, ctx, log = self.nem, self.nem.ctx, self.log
        for i, p in enumerate(planned):
            if p["f"] == "none":
                continue
            if p["f"] == "heal":
                # A heal between phases runs now; the last one is the teardown's, below.
                at = self.origin_ns + int(p["at_s"] * 1e9)
                if i < len(planned) - 1 and not _wait_until(at, stop):
                    self.meta.setdefault("heals", []).append(
                        {"start_ns": log.now(), "problems": heal_context(ctx), "end_ns": log.now()}
                    )
                continue
            try:
                active = _start_fault(
                    nem, p, log, stop, self.meta, replay=self.replay, t0_ns=self.t0_ns,
                    origin_ns=self.origin_ns, limit_ns=self.limit_ns,
                )  # fmt: skip
            except NoTargets as e:  # nothing to act on now (e.g. the clients had exited)
                skipped = {"fault_id": p.get("fault_id"), "f": p["f"], "why": str(e)}
                with self.lock:
                    self.meta.setdefault("unresolved", []).append({**skipped, "at_ns": log.now()})
                continue
            if active is None:  # the time limit or a stop came first
                break
            if self.replay:
                hold_s, since_ns = (p["end_ns"] - p["start_ns"]) / 1e9, active["start_ns"]
            else:
                client = next((t for t in active["targets"] if t.startswith("c")), None)
                hold_s = self.env.seconds(p["duration"], ctx.session_timeout_of(client))
                # A client fault's length is in units of its session: counted from when it went
                # in, not from its start record (docker pause or a sidecar's iptables take
                # 0.1-1 s, and a 1.5x pause must freeze for 1.5 T). Server faults as planned.
                since_ns = (client and active.get("applied_ns")) or active["start_ns"]
            active["duration_s"] = round(hold_s, 6)
            _wait_until(self.t0_ns + since_ns + int(hold_s * 1e9), stop)
            ended = _done(nem.invoke({**active, "phase": "end"}))
            with self.lock:
                self.executed.append(ended)
                _write_schedule(self.files.schedule, self.meta, self.executed)


def _start_fault(
    nem: FaultNemesis,
    p: dict,
    log: NemesisLog,
    stop: threading.Event,
    meta: dict,
    *,
    replay: bool,
    t0_ns: int,
    origin_ns: int,
    limit_ns: int,
) -> dict | None:
    """Start planned fault `p` at its time (or on its trigger's event), re-armed while it
    misses the state its trigger began (trigger.retries). The started fault; None when the
    time limit or a stop came first."""
    ctx = nem.ctx
    misses: list[dict] = []
    while True:
        extra: dict[str, Any] = {}
        if p.get("trigger"):
            armed = (
                t0_ns + p["armed_ns"]
                if replay and p.get("armed_ns")
                else origin_ns + int(p.get("at_s", 0) * 1e9)
            )
            if _wait_until(armed, stop):
                return None
            fired = await_trigger(ctx, p, log.now, stop, limit_ns)
            if fired is None:  # the time limit or a stop came first: it never fired
                meta.setdefault("unfired", []).append(
                    {"fault_id": p.get("fault_id"), "f": p["f"], "trigger": p["trigger"]}
                )
                return None
            extra = fired
            if _wait_until(t0_ns + extra["fired"]["start_at_ns"], stop):
                return None
        elif _wait_until(
            t0_ns + p["start_ns"] if replay else origin_ns + int(p["at_s"] * 1e9), stop
        ):
            return None
        attempt = {"attempt": len(misses) + 1} if p.get("trigger") else {}
        active = nem.invoke({**p, **extra, **attempt, "phase": "start"})
        landed = fault_landed(ctx, p, active)
        if landed is None:
            break
        if active.get("error"):
            # It never went in (seen: docker's pause "unable to freeze" on a loaded machine):
            # a miss like any other, so the trigger is re-armed.
            landed = False
        active["landed"] = landed
        if landed or len(misses) >= Trigger.from_json(p["trigger"]).retries:
            break
        # Missed: undo at once (its start and end are in the history) and re-arm.
        miss = nem.invoke({**active, "phase": "end"})
        misses.append({k: miss.get(k) for k in (*MISS_FIELDS, "observed")})
    if misses:
        active["missed"] = misses
    return active


def _final_heal(
    nem: FaultNemesis, log: NemesisLog, meta: dict, executed: list[dict], files: ScheduleFiles
) -> None:
    """End the faults still on (an interrupt), heal everything, write the final schedule."""
    with signals_deferred():  # a second Ctrl-C must not stop the heal halfway
        for active in list(nem.current.values()):
            executed.append(_done(nem.invoke({**active, "phase": "end", "interrupted": True})))
        heal_start, problems = log.now(), ["heal interrupted"]
        try:
            nem.teardown()
            problems = nem.heal_problems
        except Exception as e:  # noqa: BLE001 - say so in schedule.json, then re-raise
            problems = [f"heal failed: {type(e).__name__}: {e}"]
            raise
        finally:
            meta["final_heal"] = {"start_ns": heal_start, "end_ns": log.now(), "problems": problems}
            _write_schedule(files.schedule, meta, executed)
            log.close()


def _done(op: dict) -> dict:
    op.pop("phase", None)
    return op


def _write_schedule(path: Path, meta: dict, executed: list[dict]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps({**meta, "faults": executed}, indent=1, default=str))
    os.replace(tmp, path)
