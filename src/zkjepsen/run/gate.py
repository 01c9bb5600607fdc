"""`zkjepsen gate`: the recommended CI gate for a lock, as a small set of triggered scenarios.

`--hunt BUDGET`: after the scenarios, what is left of BUDGET hunts (run/hunt.py, `hunt_left`);
its verdict joins theirs (`verdict`).

Each scenario is one run whose faults fire on the live history (the spec's `fault_trigger`):
a client paused past its session the moment it acquires, a client cut off from every server the
moment it acquires, the leader killed while the lock is held. Every run stops at the first
violation the online checker confirms (`stop_on_violation`) or once the bound on the
per-fault violation rate is below the power target (`until_power`), else at the time limit;
and once one scenario is invalid, the gate's answer is known: the others end their main phase
there (checked on what they ran) and those not started are not run.
They run at once where the fan-out's slots allow (run/fanout.py), or as tasks on a Dask
cluster's workers (run/dask_executor.py). The gate's verdict is the
worst of theirs: invalid if any found a violation, unknown if any could not tell, else valid.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from zkjepsen.backends.registry import backend_info
from zkjepsen.errors import BadInput
from zkjepsen.report.junit import case_of, folder_of
from zkjepsen.run.fanout import NOT_RUN, Job
from zkjepsen.run.finding import finding, natures_said
from zkjepsen.run.many import run_jobs
from zkjepsen.run.resolve import spec_from_json, validate_spec

# name -> (what it does, the spec settings that make it)
SCENARIOS: dict[str, tuple[str, dict[str, Any]]] = {
    "client-pause": (
        "each client, the moment it acquires, is frozen for 1.5x its session timeout",
        {"nemesis": ["pause-client"], "fault_trigger": "acquired-each"},
    ),
    "client-cut": (
        "each client, the moment it acquires, is cut off from every server for 2x its session "
        "timeout",
        {"nemesis": ["isolate-client"], "fault_trigger": "acquired-each"},
    ),
    "leader-kill": (
        "once every server serves, the leader is killed (restarted at once) just after a "
        "client acquired",
        {
            "nemesis": ["kill-leader"],
            "fault_trigger": "acquired",
            "fault_target": "leader",
            # What makes a kill count is who held at the kill (the instant rule), not how long
            # the server stays down: the others elect a leader within ~0.5-1 s, before the
            # restarted JVM serves (1-2 s). The next kill waits for every server to serve
            # (nemesis/arming.py).
            "fault_duration_s": 0.1,
        },
    ),
}
# A gate is short: small ensembles, short sessions and holds long enough for a fault to land.
DEFAULTS: dict[str, Any] = {
    "workload": "lock",
    "nodes": 3,
    "clients": 3,
    "session_timeout_s": 2.0,
    "recovery_s": 1.0,
    "interval_s": 1.0,
    "time_limit_s": 60.0,
}
WORKLOADS = ("lock", "election")  # what `acquired` triggers on and a split holder means
# The client faults' scenarios on ZooKeeper: the shortest session its servers grant at their
# 500 ms tick (2 ticks). A client pause or cut lasts 1.5x / 2x the session, so the session sets
# how many land per minute (docs/verdicts.md, "How much power a run gets"). Not for leader
# kills (what makes one count is who held at the kill, not the session; a 1 s session under
# back-to-back elections on a loaded machine lost every session and hung a client's write),
# nor on other services (an etcd lease's TTL has a floor of its own).
ZOOKEEPER_SESSION_S = 1.0
SHORT_SESSION = frozenset({"client-pause", "client-cut"})
# The client scenarios fault each client on its own acquires (a trigger per client), so a lock
# goes from one faulted holder to the next as fast as the service expires a session; two
# independent locks of three clients each double that (`--param locks`, `--clients` win).
# A leader kill waits for an acquire once the ensemble is whole: two locks halve that wait
# (the kill still counts once, however many hold: docs/verdicts.md).
CLIENT_LOCKS = {"locks": 2, "clients_per_lock": 3}
TWO_LOCKS = frozenset({"client-pause", "client-cut", "leader-kill"})
# Leader kills on ZooKeeper kill and restart the server process inside its container
# (docker/supervise.py): docker start took 0.6-7 s of each kill's cycle at load 35-45, a
# signal 0.02-0.15 s (docs/verdicts.md). A `restart` the user set wins.
IN_PLACE = frozenset({"leader-kill"})
# A hold of exactly 1.5 s: a fault aimed at whoever just acquired must go in before the hold
# ends (docker pause 0.1-1 s, a sidecar's iptables up to ~1.8 s at load 20) or it misses and is
# re-armed; a hold drawn from [0, 2 x 1 s) ended under a third of the cuts first.
DEFAULT_PARAMS = {"hold_s": 1.5, "hold_fixed": True}
DEFAULT_POWER = 0.10
REASONS = {"asked": "another scenario failed", "power": "power target reached"}


def scenario_names(text: str | None) -> list[str]:
    """`--scenarios a,b` checked against SCENARIOS (None: all of them)."""
    if text is None:
        return list(SCENARIOS)
    names = [n.strip() for n in text.split(",")]
    bad = [n for n in names if n not in SCENARIOS]
    if bad or not names:
        raise BadInput(
            f"unknown gate scenario(s) {', '.join(map(repr, bad)) or repr(text)}; "
            f"choose from {', '.join(SCENARIOS)}"
        )
    return list(dict.fromkeys(names))


def gate_specs(settings: dict[str, Any], names: list[str], until_power: float) -> list[Any]:
    """One TestSpec per scenario: the user's settings over the gate's defaults, then the
    scenario's faults and the stop conditions."""

    workload = settings.get("workload", DEFAULTS["workload"])
    if workload not in WORKLOADS:
        raise BadInput(
            f"the gate runs the {' or '.join(WORKLOADS)} workload, not {workload!r}: its "
            "scenarios fault whoever just acquired, which only a lock-shaped workload has"
        )
    specs = []
    for name in names:
        base = {**DEFAULTS, **settings}
        base["params"] = {**DEFAULT_PARAMS, **settings.get("params", {})}
        if name in TWO_LOCKS and "locks" not in base["params"]:
            locks = CLIENT_LOCKS["locks"]
            if "clients" not in settings:
                base["clients"] = locks * CLIENT_LOCKS["clients_per_lock"]
            base["params"]["locks"] = min(locks, base["clients"])
        base.update(SCENARIOS[name][1])
        base.update(stop_on_violation=True, until_power=until_power, name=f"gate-{name}")
        spec = spec_from_json(base)
        validate_spec(spec)  # names its backend
        zookeeper = spec.backend is not None and backend_info(spec.backend).family == "zookeeper"
        if zookeeper and name in SHORT_SESSION and "session_timeout_s" not in settings:
            spec.session_timeout_s = ZOOKEEPER_SESSION_S
        service: Any = spec.service
        if zookeeper and name in IN_PLACE and getattr(service, "restart", "") is None:
            spec.service = replace(service, restart="process")
        specs.append(spec)
    return specs


@dataclass
class GateRow:
    scenario: str
    valid: Any  # True, False or "unknown" (a run that failed with an error: unknown)
    line: str
    store_dir: str | None
    run: Any = None  # the RunResult (for the CI reports: report/junit.py)
    skipped: str = ""  # why it was not run to its own end: asked to stop, not run


def row_of(scenario: str, run: Any) -> GateRow:
    """One scenario's line: its verdict, where it stopped and why, and its power."""

    results = run.results if isinstance(run.results, dict) else {}
    early = results.get("early_stop") or {}
    folder = folder_of(run)
    parts = []
    if early.get("stopped_early"):
        why = REASONS.get(early["reason"], early["reason"])
        parts.append(f"stopped {early['after_main_start_s']:g}s in ({why})")
    elif not results.get("error"):  # a run that ended in an error (or never ran) ran no time
        parts.append(f"ran {run.spec.time_limit_s:g}s")
    v = early.get("violation")
    if v:
        parts.append(f"{v['kind']}: clients {v['clients']}")
    power = results.get("power") if isinstance(results.get("power"), dict) else None
    if power is not None:
        parts.append(str(power.get("line") or power.get("reason") or ""))
    elif run.valid is not True:
        reasons = [
            f"{k}: {p.get('reason') or p.get('error')}"
            for k, p in results.items()
            if isinstance(p, dict) and p.get("valid") == "unknown"
        ]
        parts += reasons[:2]
    if results.get("error"):
        parts.append(str(results["error"]))
    if run.valid is False:
        parts.append(nature_only(results))
    skipped = ""
    if early.get("reason") == "asked":
        skipped = f"stopped {early['after_main_start_s']:g}s in: {REASONS['asked']}"
    elif results.get("error") == NOT_RUN:
        skipped = NOT_RUN
    line = "; ".join(p for p in parts if p)
    return GateRow(scenario, run.valid, line, folder or None, run, skipped)


def nature_only(results: dict[str, Any]) -> str:
    """For an invalid scenario each of whose violations the one classification
    (checker/nature.py) calls a lease's or a fault's nature (the hunt's `close`), what they
    were: "no defect of the lock seen: 4 a server that lost its state (kill-leader)", else ''.
    The verdict stays invalid (an unfenced resource split by a paused holder, or a fence
    counter a restart forgot, is broken data); the line says it was not the lock's own step:
    a fence, or a service that keeps its state (`--fsync`), is what was missing."""
    reached, words = finding(results)
    if reached != "close":
        return ""
    return f"no defect of the lock seen: {natures_said(results) or words}"


def gate_cases(rows: list[GateRow]) -> list[Any]:
    """The CI report's test cases (report/junit.py): one per scenario; a scenario asked to stop
    or not run is skipped unless it found a violation."""

    return [case_of(r.run, r.scenario, skipped=r.skipped) for r in rows if r.run is not None]


def verdict(rows: list[GateRow], hunted: Any = None) -> Any:
    """The gate's verdict: False if any scenario is invalid (or the hunt found something),
    unknown if any is unknown (or the hunt, run, could not tell), else valid. `hunted`: the
    hunt's verdict, None when it did not run."""
    valids = [r.valid for r in rows] + ([hunted] if hunted is not None else [])
    if any(v is False for v in valids):
        return False
    if all(v is True for v in valids) and valids:
        return True
    return "unknown"


def run_gate(
    specs: list[Any],
    names: list[str],
    parallel: int,
    store_root: Any = None,
    on_done: Any = None,
    cluster: Any = None,
    run_all: bool = False,
) -> list[GateRow]:
    """Every scenario's run through the local fan-out, or as a task on the Dask cluster that
    `cluster` (a connected client) serves; rows in scenario order. The first invalid scenario
    ends the others' main phases (each is checked on what it ran, and says so) and the ones not
    started are not run; `run_all`: every scenario runs to its own end."""

    jobs = [Job(spec, tag=name) for spec, name in zip(specs, names, strict=True)]

    def done(i: int, outcome: Any) -> None:
        if on_done is not None:
            on_done(row_of(outcome.job.tag, outcome.run))

    outcomes = run_jobs(
        jobs,
        None,
        parallel=parallel,
        store_root=store_root,
        on_done=done,
        keep_going=True,
        cluster=cluster,
        stop_when=None if run_all else (lambda outcome: outcome.run.valid is False),
        # Its runs stop on violation: the first one confirmed online asks the others at once.
        ask_at_violation=not run_all,
    )
    return [row_of(o.job.tag, o.run) for o in outcomes]


def hunt_left(budget_s: float, elapsed_s: float, rows: list[GateRow]) -> tuple[float, str]:
    """`gate --hunt BUDGET`: what is left of BUDGET for the hunt once the certifying scenarios
    ran (`elapsed_s` since the gate began), and why it does not hunt ('' when it does): the
    gate's answer is known already (a scenario found a violation), or nothing is left."""
    if any(r.valid is False for r in rows):
        return 0.0, "not run: a certifying scenario found a violation"
    left = budget_s - elapsed_s
    if left <= 0:
        return 0.0, (
            f"not run: the certifying scenarios took {elapsed_s:.0f}s of the {budget_s:g}s "
            "budget (give --hunt more)"
        )
    return left, ""
