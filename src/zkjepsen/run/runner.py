"""TestSpec -> phases -> store -> verdict.

Phases, as in Jepsen: setup (ensemble up, workload setup), main (clients run while the nemesis
injects faults), heal (the nemesis always heals when its time is up), recovery (clients keep
running on a healthy cluster), final (the workload's final reads), teardown, check, report.
The history is written by the clients themselves (one JSONL each) and merged at the end, so a
crashed runner still leaves every op that happened on disk.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zkjepsen import errors
from zkjepsen.backends.base import Backend, HostSession
from zkjepsen.backends.registry import provide_images
from zkjepsen.checker import Verdict
from zkjepsen.client.recorder import Recorder
from zkjepsen.client.spec import ClientSpec
from zkjepsen.docker import mounts, resources, signals
from zkjepsen.docker.engine import Engine
from zkjepsen.history import History, Op
from zkjepsen.nemesis.client_clock import NAMES, program_clock
from zkjepsen.run import observer, online
from zkjepsen.run.accounting import write_history
from zkjepsen.run.analysis import check_history, check_run, history_stats, render_reports
from zkjepsen.run.outcome import Phase, RunResult, Teardown, stopped
from zkjepsen.run.resolve import ResolvedTest, resolve
from zkjepsen.run.seams import Display, RunLog, nemesis_plan, settled_clients
from zkjepsen.spec import TestSpec
from zkjepsen.store import RunDir, check_root, new_run_dir
from zkjepsen.workloads import Workload
from zkjepsen.workloads.context import ClientContext

if TYPE_CHECKING:  # docker's client: only its type (the engine makes it)
    from docker import DockerClient

    from zkjepsen.client.pool import ClientPool
    from zkjepsen.nemesis.executed import FaultOp
    from zkjepsen.nemesis.generator import Gen

__all__ = ["RunResult", "Teardown", "TestSpec", "check_history", "run_test"]


def client_specs(test: ResolvedTest, ens: Backend, t0_ns: int) -> list[ClientSpec]:
    """One ClientSpec per logical client; each waits at the start barrier for the deadline."""
    spec, plan = test.spec, test.program
    skewed = any(n in NAMES for n in spec.nemesis)  # libfaketime or zkj-timewarp
    return [
        ClientSpec(
            client=i,
            nclients=settled_clients(spec),
            hosts=(
                ens.nodes[(i - 1) % len(ens.nodes)].address
                if spec.pin_clients
                else ens.connect_string()
            ),
            session_timeout_s=spec.session_timeout_s,
            workload=spec.workload,
            recipe=spec.recipe,
            params=spec.params,
            t0_ns=t0_ns,
            seed=spec.seed,
            command=list(plan.argv) if plan else [],
            program_mount=plan.mount if plan else None,
            program_cwd=plan.cwd if plan else None,
            proxy=spec.proxy,
            **(program_clock(i, plan.language) if skewed and plan else {}),
        )
        for i in range(1, settled_clients(spec) + 1)
    ]


def _host_context(
    spec: TestSpec, ens: Backend, run_dir: RunDir, t0_ns: int, zk: HostSession
) -> ClientContext:
    """Client 0: the runner's own session, for setup and the final reads."""
    nclients = settled_clients(spec)
    rec = Recorder(str(run_dir.client_history(0)), t0_ns, 0, max(1, nclients))
    return ClientContext(
        client=0,
        nclients=nclients,
        session=zk,
        hosts=ens.connect_string(),
        recipe=spec.recipe,
        params=spec.params,
        recorder=rec,
        deadline=time.monotonic() + 3600,
    )


# Bounds so that a run cannot hang (e.g. its ensemble torn down under a final read).
FINAL_TIMEOUT_S = 60.0  # workload.final: a few reads
SETUP_TIMEOUT_S = 60.0  # workload.setup: a few creates
CONNECT_TIMEOUT_S = 60.0  # every client container connected
CLIENT_GRACE_S = 30.0  # clients' own exit after their deadline
HOST_SESSION_S = 4.0  # at least, for the harness's own (not under test): 1 s dropped at load 50
# The watchdog: time limit + recovery + quorum wait + everything above, plus this margin.
WATCHDOG_MARGIN_S = float(os.environ.get("ZKJEPSEN_WATCHDOG_MARGIN_S", "120"))


def watchdog_budget(spec: TestSpec, quorum_timeout_s: float) -> float:
    return (
        spec.time_limit_s
        + spec.recovery_s
        + quorum_timeout_s
        + 15
        + SETUP_TIMEOUT_S
        + CONNECT_TIMEOUT_S
        + CLIENT_GRACE_S
        + FINAL_TIMEOUT_S
        + WATCHDOG_MARGIN_S
    )


def run_test(
    spec: TestSpec,
    store_root: Path | None = None,
    display: Display | None = None,
    schedule: dict[str, Any] | list[dict[str, Any]] | None = None,
    gen: Gen | None = None,
    engine: Engine | None = None,
) -> RunResult:
    """Run one test end to end. `display` (optional) gets progress callbacks and image builds'
    lines; `schedule` replays an executed schedule; `gen` (a generator, e.g. a scenario's
    `steps(...)`) replaces the spec's standard one; test.json records either (run/recording)."""
    test = resolve(spec, gen, schedule)  # every name checked, once, before anything exists
    check_root(store_root)  # a file or unwritable --store: bad input, before any container
    mounts.files_mode()  # a bad ZKJEPSEN_FILES: one sentence, now
    engine = engine or Engine()
    engine.require_local()  # the runner sits next to the ensemble; another host: --cluster
    spec = dataclasses.replace(spec, engine=engine.name)
    test = dataclasses.replace(test, spec=spec)
    client = engine.client()
    server_image, client_image = provide_images(engine, spec, say=display and display.log)
    info = test.backend
    teardown: Teardown | None = None
    phase = [Phase.SETUP]  # where the run is: the watchdog's message, and an interrupt's
    try:
        with signals.teardown_on_signals():
            run_dir = new_run_dir(spec.test_name, store_root)
            run_dir.save_spec(spec.to_json())
            run_dir.client_dir(0).mkdir(parents=True)  # the host's own session (client 0)
            log = RunLog(run_dir.run_log, display)
            ens = test.make_backend(
                run_dir.path,
                client=client,
                engine=engine.key,
                server_image=server_image,
                client_image=client_image,
            )
            teardown = Teardown(ens.run_id, run_dir.path, [])
            budget = watchdog_budget(spec, info.ready_timeout_s)
            stats: dict[str, Any] = {}
            try:
                with signals.deadline(
                    budget,
                    lambda: signals.RunTimeout(
                        f"the run did not finish within its {budget:.0f} s budget "
                        f"(stuck in {phase[0]})"
                    ),
                    fatal=True,
                ):
                    _run_phases(test, ens, client, run_dir, log, display, schedule, stats, phase)
            except BaseException as e:
                log(f"stopped in {phase[0]} by {type(e).__name__}: {e}".rstrip(": "))
                raise
            finally:
                records = _tear_down(ens, client, teardown, run_dir, log, settled_clients(spec))
            # Still guarded: a signal during the check or the reports says where the run's
            # folder is and what in it is complete, instead of a silent 143.
            return _judge(test, run_dir, records, stats, log, phase)
    except signals.RunTimeout as e:
        left = f"; left behind: {', '.join(teardown.left)}" if teardown and teardown.left else ""
        raise errors.EnvironmentProblem(
            f"{e}; it was torn down{left}; its partial history: `zkjepsen analyze "
            f"{teardown.store_dir if teardown else ''}`"
        ) from None
    except BaseException as e:
        if teardown is not None:
            teardown.phase = phase[0]
            if phase[0] in (Phase.CHECK, Phase.REPORT):
                log(f"stopped in {phase[0]} by {type(e).__name__}: {e}".rstrip(": "))
        twin = stopped(e, teardown)  # an interrupt carries what it left to the CLI's message
        if twin is None:
            raise
        raise twin from e


def _tear_down(
    ens: Backend, client: DockerClient, teardown: Teardown, run_dir: RunDir, log: RunLog, n: int
) -> list[dict[str, Any]]:
    """Remove the run's containers and merge the clients' histories: the records."""
    # No signal interrupts this (a second Ctrl-C included); one that arrives is raised after
    # it. The engine, not our bookkeeping, says what is left.
    with signals.signals_deferred():
        ens.stop()
        teardown.left = resources.leftovers(client, ens.run_id)
        left = f"; LEFT BEHIND: {', '.join(teardown.left)}" if teardown.left else "; nothing left"
        log("ensemble torn down" + left)
        if signals.ignored_signals():
            log(f"ignored during teardown: {', '.join(signals.ignored_signals())}")
        # Whatever happened, the clients' files are merged now, so an interrupted run has a
        # history.jsonl for `analyze` like a finished one.
        return write_history(run_dir, n)


def _judge(
    test: ResolvedTest,
    run_dir: RunDir,
    records: list[dict[str, Any]],
    stats: dict[str, Any],
    log: RunLog,
    phase: list[Phase],
) -> RunResult:
    """After the teardown: the verdict (results.json), then the reports."""
    phase[0] = Phase.CHECK
    history = History([Op.from_dict(r) for r in records])
    store_dir = run_dir.path
    spec = test.spec
    result = check_run(history, spec, store_dir, checkers=test.checkers)
    table = result.to_json()
    if "early_stop" in stats:  # --stop-on-violation / --until-power: whether, when and why
        table["early_stop"] = stats["early_stop"]
    run_dir.save_results(table)
    stats.update(history_stats(records))
    valid = result.valid
    log(f"checked {len(records)} history records: {Verdict.of(valid).word.lower()}")
    run = RunResult(spec, store_dir, result.valid, table, stats)
    phase[0] = Phase.REPORT
    render_reports(run, history)
    return run


def _servers_gone(ens: Backend, client: DockerClient) -> bool:
    return not client.api.containers(
        all=True,
        filters={
            "label": [f"{resources.RUN_LABEL}={ens.run_id}", f"{resources.ROLE_LABEL}=server"]
        },
    )


def _copies(ens: Backend) -> bool:
    files = getattr(ens, "files", None)  # docker/mounts.py: bind mounts or API copies
    return files is not None and not files.shared


def _run_phases(
    test: ResolvedTest,
    ens: Backend,
    client: DockerClient,
    run_dir: RunDir,
    log: RunLog,
    display: Display | None,
    schedule: dict[str, Any] | list[dict[str, Any]] | None,
    stats: dict[str, Any],
    phase: list[Phase],
) -> None:
    """Everything between "nothing exists" and teardown; `phase[0]` says where it is."""
    # here, not at the top: keeps the commands' start-up light (`list`, `--help`)
    from zkjepsen.client.pool import ClientPool

    spec, workload = test.spec, test.workload
    phase[0] = Phase.ENSEMBLE_START
    _start_servers(spec, ens, log)
    t0_ns = time.monotonic_ns()
    zk = ens.host_session(max(spec.session_timeout_s, HOST_SESSION_S))
    phase[0] = Phase.HOST_SESSION
    zk.start(timeout=15)
    host_ctx = _host_context(spec, ens, run_dir, t0_ns, zk)
    libraries = test.program.libraries if test.program is not None else ()
    pool = ClientPool(ens, run_dir, docker=client, libraries=libraries)
    stop = threading.Event()
    follower = None
    try:
        phase[0] = Phase.WORKLOAD_SETUP
        with signals.deadline(
            SETUP_TIMEOUT_S,
            lambda: signals.PhaseTimeout(
                f"workload setup did not finish within {SETUP_TIMEOUT_S:g} s"
            ),
        ):
            workload.setup(host_ctx)
        # Containers start in parallel and connect; the main phase (and the clock of the
        # fault schedule) begins when all of them are ready, so every client sees it whole.
        phase[0] = Phase.CLIENT_START
        deadline = _start_clients(test, ens, pool, t0_ns, log)
        observer.observe(spec, test.backend.family, ens, run_dir.nemesis_log, t0_ns, stop)
        if display:
            display.attach(pool.live, t0_ns, spec)
        phase[0] = Phase.MAIN
        follower = online.follow(test, pool.live, t0_ns, stop)
        executed = _main_phase(test, ens, pool, run_dir, schedule, stop, t0_ns)
        early = follower.end() if follower else None
        _main_phase_over(spec, ens, client, run_dir, len(executed), early, stats, log)
        phase[0] = Phase.RECOVERY
        if early and early["stopped_early"]:
            deadline = online.end_clients_early(spec.recovery_s, pool, CLIENT_GRACE_S)
        codes = pool.wait(max(0.0, deadline - time.monotonic()) + CLIENT_GRACE_S)
        stats["client_exit_codes"] = codes
        if any(c is None for c in codes.values()):
            log("some clients did not stop in time; stopping them")
        phase[0] = Phase.FINAL_READ
        _final_read(workload, host_ctx, log)
        phase[0] = Phase.TEARDOWN
    finally:
        # Deferred too: a signal in the middle of this would leave kazoo's threads running.
        with signals.signals_deferred():
            log("tearing down")
            stop.set()
            if follower is not None:
                follower.end()
            pool.stop()
            zk.stop()
            zk.close()
            host_ctx.recorder.finish()  # its end, as every client's (run/accounting.py)
            if display:
                display.detach()


def _main_phase_over(
    spec: TestSpec,
    ens: Backend,
    client: DockerClient,
    run_dir: RunDir,
    faults: int,
    early: dict[str, Any] | None,
    stats: dict[str, Any],
    log: RunLog,
) -> None:
    """Log how the main phase ended (and whether the online check stopped it early), and stop
    here if the servers were removed from outside the run."""
    log(f"main phase over; {faults} faults executed and healed; recovery {spec.recovery_s:g}s")
    if early is not None:
        stats["early_stop"] = early
        if early["stopped_early"]:
            log(f"main phase stopped {early['after_main_start_s']:g}s in: {early['why']}")
    if _servers_gone(ens, client):
        # Someone removed them (`cluster down`, `docker rm`): waiting for clients and a final
        # read would only time out, and no verdict on what is left would mean anything.
        raise errors.EnvironmentProblem(
            f"the servers of run {ens.run_id} were removed from outside this run during "
            f"the main phase; no verdict; its partial history: `zkjepsen analyze "
            f"{run_dir.path}`"
        )


def _start_servers(spec: TestSpec, ens: Backend, log: RunLog) -> None:
    log(f"run {ens.run_id}: starting {spec.nodes} {spec.backend} servers")
    ens.start()
    leader = ens.leader()
    log(
        f"ensemble {ens.run_id} up: {ens.connect_string()}"
        + (f" (leader {leader.name})" if leader else "")
        + ("; files: copied (engine shares no filesystem)" if _copies(ens) else "")
    )


def _start_clients(
    test: ResolvedTest, ens: Backend, pool: ClientPool, t0_ns: int, log: RunLog
) -> float:
    """Every client container started, connected (or given up on) and released together;
    returns when they stop (monotonic)."""
    spec = test.spec
    pool.start(client_specs(test, ens, t0_ns))
    laggards = pool.wait_connected(CONNECT_TIMEOUT_S)
    if laggards:
        log(
            f"clients {laggards} did not connect within {CONNECT_TIMEOUT_S:g} s; starting "
            "without them: the verdict is UNKNOWN unless they initialize (run/accounting.py)"
        )
    deadline = time.monotonic() + spec.time_limit_s + spec.recovery_s
    pool.release(deadline)
    log(f"{spec.clients} clients started; main phase {spec.time_limit_s:g}s")
    return deadline


def _main_phase(
    test: ResolvedTest,
    ens: Backend,
    pool: ClientPool,
    run_dir: RunDir,
    schedule: dict[str, Any] | list[dict[str, Any]] | None,
    stop: threading.Event,
    t0_ns: int,
) -> list[FaultOp]:
    """The clients run while the nemesis injects faults (or, without any, the time limit
    passes); returns the executed faults, all healed."""
    spec = test.spec
    if not (test.faults or schedule or test.generator):
        stop.wait(spec.time_limit_s)
        return []
    # here, not at the top: the nemesis loads every fault's module; only a run with faults needs it
    from zkjepsen.nemesis.schedule import run_nemesis

    plan = nemesis_plan(spec, test.faults, t0_ns, schedule, test.generator)
    return run_nemesis(ens, pool, plan, files=run_dir, stop_event=stop)


def _final_read(workload: Workload, host_ctx: ClientContext, log: RunLog) -> None:
    """The workload's final reads, bounded: without them the verdict goes on what it has."""
    try:
        with signals.deadline(
            FINAL_TIMEOUT_S,
            lambda: signals.PhaseTimeout(
                f"the final read did not finish within {FINAL_TIMEOUT_S:g} s"
            ),
        ):
            workload.final(host_ctx)
    except signals.PhaseTimeout as e:
        log(f"{e}; the verdict goes without it")
