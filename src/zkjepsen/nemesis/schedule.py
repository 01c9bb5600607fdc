"""Executing a fault plan against a live run: history records, schedule.json, always a heal.

`run_nemesis` is the runner's one blocking entry point. It plans from the seed (or replays an
executed schedule), starts and ends each fault (a `FaultOp`, nemesis/executed.py) on the real
clock, writes a `start` and an `end` nemesis op per fault to the run's nemesis.jsonl, rewrites
its schedule.json after every fault (a crash still leaves what ran), and heals everything
before returning - also on an exception, Ctrl-C (KeyboardInterrupt) or the runner's SIGTERM
(`resources.Terminated`). It names no fault family: each fault's bound implementation and
each family's prepare and heal (faults.families) do what is particular to them.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from zkjepsen.backends.base import Backend
from zkjepsen.docker.signals import signals_deferred
from zkjepsen.faultkinds import landing
from zkjepsen.faultkinds.landing import unobserved
from zkjepsen.nemesis import Nemesis, NemesisError, NoTargets, generator
from zkjepsen.nemesis.arming import MISS_FIELDS, WENT_IN, await_trigger, went_in
from zkjepsen.nemesis.arming import landed as fault_landed
from zkjepsen.nemesis.executed import FaultOp, Planned, PlannedHeal, Table, read_faults
from zkjepsen.nemesis.faults import FAULTS, ROLE_TARGETS, families
from zkjepsen.nemesis.nemesis_log import NemesisLog, record_value
from zkjepsen.nemesis.targets import NemesisContext, ScheduleFiles
from zkjepsen.nemesis.triggers import Trigger


class FaultNemesis(Nemesis):
    """The `Nemesis` for every registered fault kind: `start` and `end` run an op's kind."""

    def __init__(
        self, ctx: NemesisContext, names: list[str], seed: int = 0, log: NemesisLog | None = None
    ) -> None:
        unknown = [n for n in names if n not in FAULTS and n != "heal"]
        if unknown:
            raise NemesisError(f"unknown fault(s) {', '.join(unknown)}")
        self.ctx, self.names, self.seed, self.log = ctx, names, seed, log
        # The started, not yet ended, faults by fault id (lanes overlap: several at once).
        self.current: dict[int | None, FaultOp] = {}
        self.started: dict[int | None, Table] = {}  # fault id -> its start record's value
        self.heal_problems: list[str] = []  # what the last teardown could not heal

    def setup(self) -> None:
        """Each family of the run's faults makes ready for them (most need nothing)."""
        for family in {id(f): f for n in self.names if (f := FAULTS[n].family_impl)}.values():
            family.prepare(self.ctx)

    def fs(self) -> list[str]:
        return list(self.names)

    def start(self, op: FaultOp) -> FaultOp:
        """Resolve whom `op` hits (a replay's op carries its recorded targets), record its
        start, apply it. An apply that raised is recorded in `error`: its end still undoes."""
        kind = FAULTS[op.f]
        targets, detail = op.targets, op.detail
        role = ROLE_TARGETS.get(op.target or "")  # a server read from the lock's state
        if targets is None:
            rng = random.Random(f"{self.seed}:{op.fault_id}")
            target = op.aim or op.target
            read: Table = {}  # what the role adds to the detail
            if role is not None:  # at the firing: whom the trigger's firing named, if anyone
                target, read = role.resolve(self.ctx, (op.fired or {}).get("client"), rng)
            found, detail = kind.resolve(self.ctx, target, rng, dict(op.params))
            detail = {**detail, **read}
            targets = tuple(found)
        # One table for apply and undo to record in; a replay's, without the old observations
        detail = unobserved(detail)
        op = replace(op, targets=targets, detail=detail, start_ns=self._now())
        self._record(op, "start")
        self.current[op.fault_id] = op  # an interrupt inside apply still ends it
        error = None
        try:
            if role is not None:  # its proof at the target, the instant before the hit
                role.observe(self.ctx, list(targets), detail)
            kind.apply(self.ctx, list(targets), detail)
        except Exception as e:  # noqa: BLE001 - recorded; the end undoes what went in
            error = f"{type(e).__name__}: {e}"
        op = replace(op, error=error, applied_ns=self._now())
        self.current[op.fault_id] = op
        return op

    def end(self, op: FaultOp, interrupted: bool = False) -> FaultOp:
        """Undo `op`, record its end and whether it landed (faultkinds.landing)."""
        detail = op.detail if op.detail is not None else {}
        end_error = None
        try:
            FAULTS[op.f].undo(self.ctx, list(op.targets or ()), detail)
        except Exception as e:  # noqa: BLE001 - teardown's heal_all still runs
            end_error = f"{type(e).__name__}: {e}"
        op = replace(
            op, detail=detail, end_error=end_error, end_ns=self._now(), interrupted=interrupted
        )
        op = self._record(op, "end")
        self.current.pop(op.fault_id, None)
        return op

    def invoke(self, op: dict[str, Any]) -> dict[str, Any]:
        """Jepsen's shape: `op` is a fault op's table with a "phase" ("start" or "end"),
        returned completed (the tests and a REPL drive a nemesis this way)."""
        fault = FaultOp.from_json({k: v for k, v in op.items() if k != "phase"}, executed=False)
        done = self.start(fault) if op["phase"] == "start" else self.end(fault)
        return {**done.to_json(), "phase": op["phase"]}

    def teardown(self) -> None:
        """Heal everything; what could not be healed is in `heal_problems`."""
        self.heal_problems = heal_context(self.ctx)

    def _now(self) -> int:
        return self.log.now() if self.log else time.monotonic_ns()

    def _record(self, op: FaultOp, phase: str) -> FaultOp:
        """Write op's start or end to nemesis.jsonl; an end says whether it landed: the power
        line's predicate on the same two records (schedule.json too)."""
        value = record_value(op, phase)
        if phase == "start":
            self.started[op.fault_id] = json.loads(json.dumps(value, default=str))
        else:
            seen = landing(op.f, self.started.pop(op.fault_id, {}), value)
            op = replace(op, observed=seen._asdict())
            value["observed"] = op.observed
            if op.applied_ns is not None:
                # when it went in at its target (arming.went_in: its apply's return, or its
                # effect seen before that), which its start record, written before the apply,
                # is not: the checkers count a silence from here (checker/lease.py FaultSpan)
                value[WENT_IN] = went_in(op)
        if self.log is not None:
            at = op.start_ns if phase == "start" else op.end_ns
            self.log.record(at or 0, op.f, value)
        return op


def heal_context(ctx: NemesisContext, everything: bool = False) -> list[str]:
    """Every family's heal, in its rank's order (thaw before iptables, partitions before
    clocks: faults.families), whatever faults the run had. Returns what could not be healed."""
    problems: list[str] = []
    for family in families():
        problems += family.heal(ctx, everything)
    return problems


def heal_all(backend: Backend, pool: Any = None) -> list[str]:
    """Heal a run from scratch (teardown, a test leaving a shared ensemble whole): every
    family's heal, of everything, remembered or not. Returns what could not be healed."""
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
    custom generator instead of it; `schedule`: an executed schedule (schedule.json's table or
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


@dataclass
class ScheduleRecord:
    """schedule.json as it grows: the run's settings, the plan, the executed faults and what
    happened besides (heals between phases, faults with nothing to hit, triggers that never
    fired, the final heal). Lanes add to it from their threads: under `lock`."""

    path: Path
    settings: Table
    planned: list[Planned]
    executed: list[FaultOp] = field(default_factory=list)
    heals: list[Table] = field(default_factory=list)
    unresolved: list[Table] = field(default_factory=list)
    unfired: list[Table] = field(default_factory=list)
    final_heal: Table | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, op: FaultOp) -> None:
        with self.lock:
            self.executed.append(op)
            self.write()

    def write(self) -> None:
        doc: Table = {**self.settings, "planned": [p.to_json() for p in self.planned]}
        for key in ("heals", "unresolved", "unfired"):
            if getattr(self, key):
                doc[key] = getattr(self, key)
        if self.final_heal is not None:
            doc["final_heal"] = self.final_heal
        doc["faults"] = [f.to_json() for f in self.executed]
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps(doc, indent=1, default=str))
        os.replace(tmp, self.path)


def run_nemesis(
    backend: Backend,
    pool: Any,
    plan: NemesisPlan,
    files: ScheduleFiles,
    stop_event: threading.Event | None = None,
) -> list[FaultOp]:
    """Run `plan`'s faults until its time limit (or `stop_event`), heal, return the executed
    faults (as in schedule.json)."""
    names, seed, t0_ns, time_limit_s = plan.names, plan.seed, plan.t0_ns, plan.time_limit_s
    replaying = plan.schedule is not None
    files.path.mkdir(parents=True, exist_ok=True)
    stop = stop_event or threading.Event()
    log = NemesisLog(files.nemesis_log, t0_ns)
    ctx = NemesisContext(backend, pool, session_timeout_s=plan.session_timeout_s, now_ns=log.now)
    origin_ns = time.monotonic_ns()
    env = generator.Env(plan.session_timeout_s, plan.fault_duration_s, plan.fault_params)
    planned: list[Planned]
    if replaying:
        planned = [f.replay_ready() for f in read_faults(plan.schedule)]
        names = sorted({p.f for p in planned if isinstance(p, FaultOp)})
    else:
        standard = generator.standard(names, time_limit_s=time_limit_s, interval_s=plan.interval_s)
        planned = generator.plan(plan.gen or standard, seed, env)
        names = sorted(set(names) | {p.f for p in planned if isinstance(p, FaultOp)})
    nem = FaultNemesis(ctx, [n for n in names if n != "none"], seed, log)
    record = ScheduleRecord(files.schedule, {
        "seed": seed,
        "names": names,
        "time_limit_s": time_limit_s,
        "interval_s": plan.interval_s,
        "fault_duration_s": plan.fault_duration_s,
        "session_timeout_s": plan.session_timeout_s,
        "replay": replaying,
        "origin_ns": origin_ns - t0_ns,
        "run_id": backend.run_id,
    }, planned)  # fmt: skip
    nem.setup()
    limit_ns = origin_ns + int(time_limit_s * 1e9)
    try:
        lanes = _lanes(planned)
        run = _Lane(nem, log, record, env, replaying, t0_ns, origin_ns, limit_ns)
        if len(lanes) == 1:
            run(lanes[0], stop)
        else:
            _side_by_side(run, lanes, stop)
        _wait_until(limit_ns, stop)
    finally:
        _final_heal(nem, log, record)
    return record.executed


def _lanes(planned: list[Planned]) -> list[list[Planned]]:
    """The plan by lane (generator.lanes), each in its order; heals go with lane 0."""
    by: dict[int, list[Planned]] = {}
    for p in planned:
        by.setdefault(p.lane if isinstance(p, FaultOp) else 0, []).append(p)
    return [by[k] for k in sorted(by)] or [[]]


def _side_by_side(run: _Lane, lanes: list[list[Planned]], stop: threading.Event) -> None:
    """Each lane in a thread of its own until all have ended. A stop (or an interrupt of this
    thread) halts every lane; the first error of a lane is raised here once all have ended,
    so the heal that follows never races a lane still starting a fault."""
    halt = threading.Event()
    errors: list[BaseException] = []

    def one(lane: list[Planned]) -> None:
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
    record: ScheduleRecord
    env: generator.Env
    replay: bool
    t0_ns: int
    origin_ns: int
    limit_ns: int

    def __call__(self, planned: list[Planned], stop: threading.Event) -> None:
        nem, ctx, log, record = self.nem, self.nem.ctx, self.log, self.record
        for i, p in enumerate(planned):
            if isinstance(p, PlannedHeal):
                # A heal between phases runs now; the last one is the teardown's, below.
                at = self.origin_ns + int(p.at_s * 1e9)
                if i < len(planned) - 1 and not _wait_until(at, stop):
                    began, problems = log.now(), heal_context(ctx)
                    with record.lock:
                        record.heals.append(
                            {"start_ns": began, "problems": problems, "end_ns": log.now()}
                        )
                continue
            if p.f == "none":
                continue
            try:
                active = _start_fault(nem, p, log, stop, record, self)
            except NoTargets as e:  # nothing to act on now (e.g. the clients had exited)
                with record.lock:
                    record.unresolved.append(
                        {"fault_id": p.fault_id, "f": p.f, "why": str(e), "at_ns": log.now()}
                    )
                continue
            if active is None:  # the time limit or a stop came first
                break
            hold_s, since_ns = self._hold(p, active)
            active = replace(active, duration_s=round(hold_s, 6))
            _wait_until(self.t0_ns + since_ns + int(hold_s * 1e9), stop)
            record.add(nem.end(active))

    def _hold(self, p: FaultOp, active: FaultOp) -> tuple[float, int]:
        """How long `active` is held (a replay: as recorded), and since when (test ns)."""
        start_ns = active.start_ns or 0
        if self.replay:
            return p.hold_ns / 1e9, start_ns
        client = next((t for t in active.targets or () if t.startswith("c")), None)
        spec = p.duration if p.duration is not None else (p.duration_s or 0.0)  # (plans say it)
        hold_s = self.env.seconds(spec, self.nem.ctx.session_timeout_of(client))
        # A client fault's length is in units of its session: counted from when it went in,
        # not from its start record (docker pause or a sidecar's iptables take 0.1-1 s, and a
        # 1.5x pause must freeze for 1.5 T). Server faults as planned.
        return hold_s, (active.applied_ns if client else None) or start_ns

    def start_at(self, p: FaultOp) -> int:
        """When a timed fault starts (host monotonic ns): its recorded start in a replay, its
        planned offset otherwise; for a triggered one, when its trigger is armed."""
        if p.trigger and self.replay and p.armed_ns:
            return self.t0_ns + p.armed_ns
        if self.replay and not p.trigger:
            return self.t0_ns + (p.start_ns or 0)
        return self.origin_ns + int((p.at_s or 0) * 1e9)


def _start_fault(
    nem: FaultNemesis,
    p: FaultOp,
    log: NemesisLog,
    stop: threading.Event,
    record: ScheduleRecord,
    lane: _Lane,
) -> FaultOp | None:
    """Start planned fault `p` at its time (or on its trigger's event), re-armed while it
    misses the state its trigger began (trigger.retries). The started fault; None when the
    time limit or a stop came first."""
    ctx = nem.ctx
    misses: list[Table] = []
    while True:
        if _wait_until(lane.start_at(p), stop):
            return None
        armed = p
        if p.trigger:
            fired = await_trigger(ctx, p, log.now, stop, lane.limit_ns)
            if fired is None:  # the time limit or a stop came first: it never fired
                with record.lock:
                    record.unfired.append(
                        {"fault_id": p.fault_id, "f": p.f, "trigger": dict(p.trigger)}
                    )
                return None
            if _wait_until(lane.t0_ns + (fired.fired or {})["start_at_ns"], stop):
                return None
            armed = replace(fired, attempt=len(misses) + 1)
        active = nem.start(armed)
        landed = fault_landed(ctx, p, active)
        if landed is None:
            break
        # An apply that failed never went in (seen: docker's pause "unable to freeze" on a
        # loaded machine): a miss like any other, so the trigger is re-armed.
        active = replace(active, landed=landed and not active.error)
        if active.landed or len(misses) >= Trigger.from_json(dict(p.trigger or {})).retries:
            break
        # Missed: undo at once (its start and end are in the history) and re-arm.
        miss = nem.end(active).to_json()
        misses.append({k: miss.get(k) for k in (*MISS_FIELDS, "observed")})
    return replace(active, missed=tuple(misses)) if misses else active


def _final_heal(nem: FaultNemesis, log: NemesisLog, record: ScheduleRecord) -> None:
    """End the faults still on (an interrupt), heal everything, write the final schedule."""
    with signals_deferred():  # a second Ctrl-C must not stop the heal halfway
        for active in list(nem.current.values()):
            ended = nem.end(active, interrupted=True)
            with record.lock:
                record.executed.append(ended)
        heal_start, problems = log.now(), ["heal interrupted"]
        try:
            nem.teardown()
            problems = nem.heal_problems
        except Exception as e:  # noqa: BLE001 - say so in schedule.json, then re-raise
            problems = [f"heal failed: {type(e).__name__}: {e}"]
            raise
        finally:
            record.final_heal = {"start_ns": heal_start, "end_ns": log.now(), "problems": problems}
            with record.lock:
                record.write()
            log.close()
