"""Shrink a failing run's schedule to the smallest one whose violation still recurs.

Greedy delta debugging over real replays: a candidate (fewer, earlier, shorter faults; a
holder-aimed fault fired on the next acquire instead of at a time; fewer clients) is kept only
if its violation recurs in at least `min_hits` of `tries` replays, since the same faults meet
a different interleaving every time.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from zkjepsen.checker import as_result
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import acquire_triggered
from zkjepsen.nemesis.executed import FaultOp
from zkjepsen.nemesis.triggers import on_acquire
from zkjepsen.reproduce.replay import (
    MARGIN_S,
    WARMUP_S,
    faults_for_replay,
    faults_text,
    first_violation_ns,
    replay,
    violation_kinds,
)
from zkjepsen.run.outcome import note_many, reraise
from zkjepsen.run.recording import record_schedule
from zkjepsen.run.resolve import reportable_kinds
from zkjepsen.run.stored import StoredRun
from zkjepsen.spec import TestSpec


@dataclass
class Candidate:
    spec: TestSpec
    faults: list[FaultOp]  # replay-ready (see faults_for_replay)
    why: str

    def __post_init__(self) -> None:
        # Its spec names its faults and runs no generator: what minimal/test.json records.
        self.spec = copy.deepcopy(self.spec)
        record_schedule(self.spec, None, [f.to_json() for f in self.faults])

    def summary(self) -> str:
        fs = ", ".join(f"{faults_text([f])}+{f.hold_ns / 1e9:.1f}s" for f in self.faults)
        return (
            f"{len(self.faults)} faults [{fs}], {self.spec.clients} clients, "
            f"{self.spec.time_limit_s:.0f}s"
        )


@dataclass
class ShrinkResult:
    best: Candidate
    hits: int
    tries: int
    log: list[dict] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)  # the violations the search kept


# Faults that hit a client and can be aimed at "whoever just acquired" instead of a time.
TRIGGERABLE = acquire_triggered()  # their declarations say so (FaultKind.on_acquire)
# At once, and again on the next acquire while it lands after the hold ended (docker pause takes
# 0.1-0.3 s, a sidecar's iptables 0.3-1 s: a short hold often ends first; see Trigger.retries).
TRIGGER_DELAY_S = 0.0
TRIGGER_RETRIES = 10
# A client fault shorter than this many session timeouts meets the expiry's own jitter (the
# server's tick, when the last ping went out): it may reproduce 3 times in 3 and still fail
# to repeat in CI, so shrink does not shorten one below it.
SESSION_FLOOR = 1.5


def triggered(f: FaultOp) -> FaultOp | None:
    """A timed fault aimed at the lock holder, as the same fault fired on the next acquire and
    aimed at the client that acquired, re-armed while it lands after that hold ended; None if
    it cannot be."""
    chosen = (f.detail or {}).get("chosen")
    if f.trigger or f.f not in TRIGGERABLE or "holder" not in (f.target, chosen):
        return None
    return replace(
        f,
        trigger=on_acquire(delay_s=TRIGGER_DELAY_S, retries=TRIGGER_RETRIES).to_json(),
        target="trigger",
        targets=None,
        detail=None,
        armed_ns=max(0, int((f.start_ns or 0) - 1e9)),  # the first acquire in the second before
    )


def _with(
    c: Candidate, why: str, faults: list[FaultOp] | None = None, **spec_changes: Any
) -> Candidate:
    spec = copy.deepcopy(c.spec)
    for k, v in spec_changes.items():
        setattr(spec, k, v)
    return Candidate(spec, copy.deepcopy(c.faults if faults is None else faults), why)


def _fit_time_limit(c: Candidate) -> Candidate:
    last = max((f.end_ns or 0 for f in c.faults), default=0) / 1e9
    c.spec.time_limit_s = max(WARMUP_S + 1, round(last + MARGIN_S, 1))
    return c


def _shifted(c: Candidate) -> Candidate | None:
    """The same faults, moved so the first starts right after the warm-up. Not for a schedule
    with a triggered fault: its times are since the test's start, setup included (10-30 s on a
    loaded machine), so an arm moved "to 4 s" fires on the clients' very first moves instead of
    the event it was meant for (the newest waiter becomes whoever asked first)."""
    if any(f.trigger for f in c.faults):
        return None
    first = min((f.start_ns or 0 for f in c.faults), default=0)
    delta = int(first - WARMUP_S * 1e9)
    if delta <= 1e9:
        return None
    faults = [
        replace(
            f,
            start_ns=(f.start_ns or 0) - delta,
            end_ns=(f.end_ns or 0) - delta,
            armed_ns=max(0, f.armed_ns - delta) if f.armed_ns else f.armed_ns,
        )
        for f in c.faults
    ]
    return _fit_time_limit(_with(c, f"start {delta / 1e9:.1f}s earlier", faults))


def candidates(run: StoredRun, current: Candidate) -> list[Candidate]:
    """Simpler variants of `current`, most promising first (one step of the search)."""
    out: list[Candidate] = []
    faults = current.faults
    # 1. Faults that started after the original break cannot have caused it.
    t_v = first_violation_ns(run.results)
    if t_v is not None:
        early = [f for f in faults if (f.start_ns or 0) <= t_v]
        if early and len(early) < len(faults):
            out.append(_fit_time_limit(_with(current, "drop faults after the violation", early)))
    # 2. Each fault alone, those active during a violation first; then drop one at a time.
    if len(faults) > 1:
        active = _violation_fault_ids(run)
        ranked = sorted(faults, key=lambda f: f.fault_id not in active)
        for f in ranked:
            # Alone and on the next acquire first: simpler and more repeatable at once.
            t = triggered(f)
            if t is not None:
                why = f"only {f.f}, on the next acquire instead of at {f.start_s:.1f}s"
                out.append(_with(current, why, [t]))
            out.append(_fit_time_limit(_with(current, f"only {f.f}@{f.start_s:.1f}s", [f])))
        if len(faults) > 2:
            out += [
                _fit_time_limit(
                    _with(
                        current,
                        f"without {f.f}@{f.start_s:.1f}s",
                        [g for g in faults if g is not f],
                    )
                )
                for f in faults
            ]
    # 3. A holder-aimed fault fired on an acquire instead of at a time: what makes it repeat.
    for i, f in enumerate(faults):
        t = triggered(f)
        if t is not None:
            out.append(
                _with(
                    current,
                    f"{f.f} on the next acquire instead of at {f.start_s:.1f}s",
                    [*faults[:i], t, *faults[i + 1 :]],
                )
            )
    # 4. Earlier, shorter, fewer clients.
    shifted = _shifted(current)
    if shifted:
        out.append(shifted)
    for f in faults:
        length = f.hold_ns
        floor = SESSION_FLOOR * current.spec.session_timeout_s * 1e9 if f.f in TRIGGERABLE else 0
        if length > 1.5e9 and length * 0.75 >= floor:
            shorter = [
                replace(g, end_ns=(g.start_ns or 0) + int(length * 0.75)) if g is f else g
                for g in faults
            ]
            out.append(_fit_time_limit(_with(current, f"{f.f} 25% shorter", shorter)))
    clients = current.spec.clients or 0  # (set: a run's spec was resolved)
    if clients > 2:
        out.append(_with(current, "half the clients", clients=max(2, clients // 2)))
    return out


def _violation_fault_ids(run: StoredRun) -> set:
    """Ids of the faults the checkers found active during a violation window."""
    out: set = set()
    for _, v in as_result(run.results).named_violations():
        out |= v.fault_ids
    return out


def check_kinds(run: StoredRun, kinds: set[str] | None, not_in_run: bool = False) -> set[str]:
    """The violations to preserve, checked before any replay: each a kind the workload's
    checkers can report, and one the run recorded unless `not_in_run` (searching for a
    violation the run never showed is a deliberate choice, not a typo's consequence)."""
    recorded = violation_kinds(run.results)
    if not kinds:
        if not recorded:
            raise BadInput(
                f"{run.store_dir} recorded no violation (valid: "
                f"{as_result(run.results).valid}); shrink needs a failing run"
            )
        return recorded
    known = reportable_kinds(run.spec)
    bad = sorted(kinds - known)
    if bad:
        raise BadInput(
            f"--kind {', '.join(bad)}: not a violation the {run.spec.workload} workload's "
            f"checkers report; choose from {', '.join(sorted(known))}"
        )
    missing = sorted(kinds - recorded)
    if missing and not not_in_run:
        raise BadInput(
            f"--kind {', '.join(missing)}: {run.store_dir} did not record it (it recorded "
            f"{', '.join(sorted(recorded)) or 'no violation'}); pass --kind-not-in-run to "
            "search for it anyway"
        )
    return set(kinds)


@dataclass
class Judge:
    """Replays a candidate until its fate is decided: kept if its violation recurs in at least
    `min_hits` of `tries` replays. Each wave runs as many replays as could keep it (`parallel`
    at once on `engine`, or on the Dask `cluster`'s slots), and no wave starts that could not
    end within the budget."""

    run: StoredRun
    target: set[str]
    tries: int
    min_hits: int
    deadline: float
    progress: Callable[[str], None]
    store_root: Path | None = None
    engine: Any = None
    parallel: int = 1
    cluster: Any = None
    log: list[dict] = field(default_factory=list)
    wave_s: float = 0.0  # the longest wave so far
    folders: list[Path] = field(default_factory=list)  # every replay's, for an interrupt's line

    def __call__(self, c: Candidate, budgeted: bool = True) -> int:
        try:
            return self._judge(c, budgeted)
        except BaseException as e:  # the earlier candidates' replays too, in the last line
            reraise(e, note_many(e, self.folders, []))

    def _judge(self, c: Candidate, budgeted: bool) -> int:
        hits = done = 0
        width = max(1, self.parallel)
        while done < self.tries and (
            not budgeted or time.monotonic() + self.wave_s <= self.deadline
        ):
            # As many replays as could keep the candidate if they all reproduce.
            wave = max(1, min(width, self.min_hits - hits, self.tries - done))
            started = time.monotonic()
            for r in replay(
                self.run,
                wave,
                store_root=self.store_root,
                spec=c.spec,
                faults=c.faults,
                engine=self.engine,
                parallel=self.parallel,
                cluster=self.cluster,
            ):
                got = violation_kinds(r.results)
                ok = self.target <= got
                hits += ok
                done += 1
                self.folders.append(r.store_dir)
                self.progress(
                    f"    try {done}/{self.tries}: {sorted(got) or 'valid'} -> "
                    f"{'reproduced' if ok else 'not reproduced'} ({r.store_dir})"
                )
            self.wave_s = max(self.wave_s, time.monotonic() - started)
            if hits >= self.min_hits or hits + (self.tries - done) < self.min_hits:
                break  # decided either way: save the machine time
        self.log.append({"candidate": c.summary(), "why": c.why, "hits": hits, "tries": self.tries})
        return hits


def shrink(
    run: StoredRun,
    *,
    kinds: set[str] | None = None,
    tries: int = 3,
    min_hits: int = 2,
    budget_s: float = 1800,
    store_root: Path | None = None,
    progress: Callable[[str], None] = lambda line: None,
    engine=None,
    parallel: int = 1,
    cluster=None,
    not_in_run: bool = False,
) -> ShrinkResult:
    """Greedy delta debugging over the schedule: take the first simpler candidate whose
    violation recurs in at least `min_hits` of `tries` replays; repeat until no candidate does
    or the wall-clock budget is spent. A candidate's replays run `parallel` at once on
    `engine` (or the Dask `cluster`'s slots), in waves of the replays still needed to keep it
    (so a wave may run a replay that a one-at-a-time search would have skipped after an early
    miss); the decision rule is the same, so the search visits the same candidates in the same
    order whatever the parallelism."""
    target = check_kinds(run, kinds, not_in_run)
    deadline = time.monotonic() + budget_s
    best = _fit_time_limit(
        Candidate(
            copy.deepcopy(run.spec),
            faults_for_replay(run.faults),
            "the original schedule",
        )
    )
    best_hits = None
    judge = Judge(
        run, target, tries, min_hits, deadline, progress, store_root, engine, parallel, cluster
    )
    log = judge.log
    progress(
        f"shrinking {run.store_dir}: target {sorted(target)}, keep a candidate if it "
        f"reproduces in >= {min_hits} of {tries} replays"
    )
    improved = True
    while improved and time.monotonic() + judge.wave_s < deadline:
        improved = False
        for c in candidates(run, best):
            if time.monotonic() + judge.wave_s > deadline:
                progress("budget spent; keeping the best so far")
                break
            progress(f"  trying {c.why}: {c.summary()}")
            hits = judge(c)
            if hits >= min_hits:
                best, best_hits, improved = c, hits, True
                progress(f"  kept: {best.summary()}")
                break
    if best_hits is None:  # nothing simpler reproduced: measure the original itself
        progress(f"  no simpler candidate reproduced; replaying the original: {best.summary()}")
        # Measured even past the budget: the emitted test must say how often it recurs.
        best_hits = judge(best, budgeted=False)
    return ShrinkResult(best, best_hits, tries, log, set(target))
