"""TestSpec -> phases -> store -> verdict.

Phases, as in Jepsen: setup (ensemble up, workload setup), main (clients run while the nemesis
injects faults), heal (the nemesis always heals when its time is up), recovery (clients keep
running on a healthy cluster), final (the workload's final reads), teardown, check, report.
The history is written by the clients themselves (one JSONL each) and merged at the end, so a
crashed runner still leaves every op that happened on disk.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkjepsen import errors
from zkjepsen.client.context import ClientContext, Recorder
from zkjepsen.client.spec import ClientSpec
from zkjepsen.spec import TestSpec, validate_spec
from zkjepsen.store import RunDir, check_root, new_run_dir

__all__ = ["RunResult", "TestSpec", "check_history", "run_test", "validate_spec"]


@dataclass
class RunResult:
    spec: TestSpec
    store_dir: Path
    valid: bool | str
    results: dict[str, Any]
    stats: dict[str, Any]

    @property
    def exit_code(self) -> int:
        return {True: errors.EXIT_VALID, False: errors.EXIT_INVALID}.get(self.valid,
                                                                          errors.EXIT_UNKNOWN)


def client_specs(spec: TestSpec, ens, t0_ns: int) -> list[ClientSpec]:
    """One ClientSpec per logical client; each waits at the start barrier for the deadline."""
    return [ClientSpec(client=i, nclients=spec.clients,
                       hosts=(ens.nodes[(i - 1) % len(ens.nodes)].address if spec.pin_clients
                              else ens.connect_string()),
                       session_timeout_s=spec.session_timeout_s, workload=spec.workload,
                       recipe=spec.recipe, params=spec.params, t0_ns=t0_ns, seed=spec.seed)
            for i in range(1, spec.clients + 1)]


def _host_context(spec: TestSpec, ens, run_dir: RunDir, t0_ns: int, zk) -> ClientContext:
    """Client 0: the runner's own session, for setup and the final reads."""
    rec = Recorder(str(run_dir.client_history(0)), t0_ns, 0, max(1, spec.clients))
    return ClientContext(client=0, nclients=spec.clients, zk=zk, hosts=ens.connect_string(),
                         recipe=spec.recipe, params=spec.params, recorder=rec,
                         deadline=time.monotonic() + 3600)


def run_test(spec: TestSpec, store_root: Path | None = None, display=None,
             schedule: list[dict] | None = None) -> RunResult:
    """Run one test end to end. `display` (optional) gets progress callbacks; `schedule`
    replays an executed schedule instead of generating one."""
    from kazoo.client import KazooClient

    from zkjepsen.client.pool import ClientPool
    from zkjepsen.harness import resources, signals
    from zkjepsen.harness.ensemble import DockerEnsemble, EnsembleSpec
    from zkjepsen.harness.image import ensure_image
    from zkjepsen.harness.zkconfig import ZkSettings
    from zkjepsen.workloads import get_workload

    validate_spec(spec)
    check_root(store_root)  # a file or unwritable --store: bad input, before any container
    workload = get_workload(spec.workload)
    client = resources.docker_client()
    image = ensure_image(client, spec.image).tag
    run_dir = new_run_dir(spec.test_name, store_root)
    store_dir = run_dir.path
    run_dir.save_spec(spec)
    out_dir = run_dir.clients
    out_dir.mkdir()
    log = RunLog(run_dir.run_log, display)
    names = [n for n in spec.nemesis if n != "none"]
    stats: dict[str, Any] = {}
    ens_spec = EnsembleSpec(nodes=spec.nodes, image=image,
                            settings=ZkSettings(tick_ms=spec.tick_ms))
    with signals.teardown_on_signals(), \
            DockerEnsemble(ens_spec, store_dir, client=client) as ens:
        log(f"ensemble {ens.run_id} up: {ens.connect_string()} (leader {ens.leader().name})")
        t0_ns = time.monotonic_ns()
        zk = KazooClient(hosts=ens.connect_string(), timeout=spec.session_timeout_s)
        zk.start(timeout=15)
        host_ctx = _host_context(spec, ens, run_dir, t0_ns, zk)
        pool = ClientPool(ens, out_dir)
        stop = threading.Event()
        try:
            workload.setup(host_ctx)
            # Containers start in parallel and connect; the main phase (and the clock of the
            # fault schedule) begins when all of them are ready, so every client sees it whole.
            pool.start(client_specs(spec, ens, t0_ns))
            laggards = pool.wait_connected(60)
            if laggards:
                log(f"clients {laggards} did not connect within 60 s; starting without them")
            deadline = time.monotonic() + spec.time_limit_s + spec.recovery_s
            pool.release(deadline)
            log(f"{spec.clients} clients started; main phase {spec.time_limit_s:g}s")
            if display:
                display.attach(out_dir, run_dir.nemesis_log, t0_ns, spec)
            executed: list[dict] = []
            if names or schedule:
                from zkjepsen.nemesis.schedule import run_nemesis

                executed = run_nemesis(
                    ens, pool, names, seed=spec.seed, time_limit_s=spec.time_limit_s,
                    interval_s=spec.interval_s, fault_duration_s=spec.fault_duration_s,
                    session_timeout_s=spec.session_timeout_s, t0_ns=t0_ns, out_dir=store_dir,
                    stop_event=stop, schedule=schedule, gen=fault_generator(spec, names))
            else:
                stop.wait(spec.time_limit_s)
            log(f"main phase over; {len(executed)} faults executed and healed; "
                f"recovery {spec.recovery_s:g}s")
            codes = pool.wait(max(0.0, deadline - time.monotonic()) + 30)
            stats["client_exit_codes"] = codes
            if any(c is None for c in codes.values()):
                log("some clients did not stop in time; stopping them")
            workload.final(host_ctx)
        finally:
            stop.set()
            pool.stop()
            zk.stop()
            zk.close()
            host_ctx.recorder.close()
            if display:
                display.detach()
        log("ensemble torn down")
    from zkjepsen.history import History, Op
    from zkjepsen.history.jsonl import merge_records

    records = merge_records(run_dir.history_sources())
    history = History([Op.from_dict(r) for r in records])
    history.to_jsonl(run_dir.history)
    result = check_history(history, spec, store_dir)
    run_dir.save_results(result)
    stats.update(history_stats(records))
    log(f"verdict: {result['valid']} ({len(records)} history records)")
    run = RunResult(spec, store_dir, result["valid"], result, stats)
    render_reports(run, history)
    return run


def fault_generator(spec: TestSpec, names: list[str]):
    """The standard schedule (random faults from `names`, staggered, for the time limit), with
    `fault_target` aimed at every fault and cut after `max_faults` faults; None: the default."""
    if (spec.max_faults is None and spec.fault_target is None) or not names:
        return None
    from zkjepsen.nemesis import generator

    faults = [generator.fault(n, target=spec.fault_target) for n in names]
    base = generator.phases(
        generator.time_limit(spec.time_limit_s,
                             generator.stagger(spec.interval_s, generator.mix(*faults))),
        generator.final_heal())

    def gen(rng, env):
        n = 0
        for item in base(rng, env):
            if isinstance(item, generator.Fault):
                if spec.max_faults is not None and n >= spec.max_faults:
                    return  # run_nemesis heals whatever the plan ends with
                n += 1
            yield item

    return gen


def check_history(history, spec: TestSpec, store_dir: Path | None = None) -> dict[str, Any]:
    """Run the workload's checkers on a history (also what `analyze` does); with `store_dir`,
    write a counterexample HTML for every refuted linearizability checker there."""
    from zkjepsen.checker import compose
    from zkjepsen.workloads import get_workload

    checkers = get_workload(spec.workload).checkers(spec.params)
    checked = compose(checkers).check(history)
    result = checked.to_json()
    if store_dir is not None and checked.valid is not True:
        try:
            from zkjepsen.report.counterexample import write_failures

            write_failures(checked, checkers, store_dir, history)
        except Exception as e:  # noqa: BLE001 - evidence, not the verdict
            result["counterexample_error"] = f"{type(e).__name__}: {e}"
    return result


def history_stats(records: list[dict]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for r in records:
        if r.get("type") in ("ok", "fail", "info"):
            key = f"{r.get('f')}:{r['type']}"
            counts[key] = counts.get(key, 0) + 1
    return {"ops": counts, "records": len(records)}


def render_reports(run: RunResult, history) -> None:
    """timeline.html, latency.png and rate.png; a failing renderer never changes the verdict."""
    try:
        from zkjepsen.report import render_run
    except ImportError:
        return
    try:
        render_run(run.store_dir, history, run.results)
    except Exception as e:  # noqa: BLE001 - reports are evidence, not the verdict
        with RunDir(run.store_dir).run_log.open("a") as f:
            f.write(f"report rendering failed: {e}\n")


class RunLog:
    """run.log in the store, mirrored to the live display when there is one."""

    def __init__(self, path: Path, display=None) -> None:
        self.path = path
        self.display = display
        self.t0 = time.monotonic()

    def __call__(self, msg: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} +{time.monotonic() - self.t0:6.1f}s {msg}"
        with self.path.open("a") as f:
            f.write(line + "\n")
        if self.display:
            self.display.log(msg)
