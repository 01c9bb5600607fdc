"""TestSpec -> phases -> store -> verdict.

Phases, as in Jepsen: setup (ensemble up, workload setup), main (clients run while the nemesis
injects faults), heal (the nemesis always heals when its time is up), recovery (clients keep
running on a healthy cluster), final (the workload's final reads), teardown, check, report.
The history is written by the clients themselves (one JSONL each) and merged at the end, so a
crashed runner still leaves every op that happened on disk.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from zkjepsen import errors
from zkjepsen.clientctx import ClientContext, Recorder
from zkjepsen.errors import BadInput


@dataclass
class TestSpec:
    __test__ = False  # a spec, not a pytest test class
    recipe: str = "kazoo"
    workload: str = "lock"
    nemesis: list[str] = field(default_factory=lambda: ["none"])
    nodes: int = 5
    clients: int = 10
    time_limit_s: float = 60.0
    recovery_s: float = 10.0
    session_timeout_s: float = 4.0
    seed: int = 0
    image: str | None = None
    pin_clients: bool = False  # True: client i talks only to server i mod n; False: all servers
    interval_s: float = 10.0  # quiet time between faults
    fault_duration_s: float = 8.0  # default fault length (pause faults: relative to the session)
    params: dict[str, Any] = field(default_factory=dict)  # workload/recipe parameters
    name: str | None = None
    tick_ms: int = 500
    max_faults: int | None = None  # a fault budget (the pytest marker sets it)
    fault_target: str | None = None  # override every fault's default target (e.g. "random")

    def __post_init__(self) -> None:
        if self.clients < 1 or self.clients > 100:
            raise BadInput(f"--clients {self.clients} is out of range; use 1 to 100")
        if self.time_limit_s <= 0:
            raise BadInput("--time-limit must be positive (seconds)")
        lo, hi = 2 * self.tick_ms / 1000, 20 * self.tick_ms / 1000
        if not lo <= self.session_timeout_s <= hi:
            raise BadInput(f"--session-timeout {self.session_timeout_s:g}s is outside what the "
                           f"servers grant with tickTime {self.tick_ms} ms ([{lo:g}s, {hi:g}s])")

    @property
    def test_name(self) -> str:
        return self.name or f"{self.recipe}-{self.workload}-{'+'.join(self.nemesis)}".replace(
            ":", "_").replace("/", "_")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TestSpec:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(d) - known
        if unknown:
            raise BadInput(f"unknown test setting(s) {', '.join(sorted(unknown))}; "
                           f"valid ones: {', '.join(sorted(known))}")
        return cls(**d)


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


def validate_spec(spec: TestSpec) -> None:
    """Fail fast, before any container starts, on names that do not exist."""
    from zkjepsen.workloads import get_workload

    get_workload(spec.workload)
    import zkjepsen.recipes as recipes

    if ":" in spec.recipe:
        recipes._import(spec.recipe)  # BadInput now rather than in every client container
    elif spec.recipe not in recipes.RECIPES:
        raise BadInput(f"unknown recipe {spec.recipe!r}; choose from "
                       f"{', '.join(recipes.recipe_names())} or give package.module:Name "
                       "(`zkjepsen list recipes`)")
    names = [n for n in spec.nemesis if n != "none"]
    if names:
        from zkjepsen.nemesis import NEMESES

        for n in names:
            if n not in NEMESES:
                raise BadInput(f"unknown nemesis {n!r}; choose from {', '.join(sorted(NEMESES))}"
                               " (`zkjepsen list nemeses`)")


def _client_specs(spec: TestSpec, ens, t0_ns: int, deadline: float) -> list[dict]:
    out = []
    for i in range(1, spec.clients + 1):
        hosts = (ens.nodes[(i - 1) % len(ens.nodes)].address if spec.pin_clients
                 else ens.connect_string())
        out.append(dict(client=i, nclients=spec.clients, hosts=hosts,
                        session_timeout_s=spec.session_timeout_s, workload=spec.workload,
                        recipe=spec.recipe, params=spec.params, t0_ns=t0_ns,
                        deadline_monotonic=deadline, seed=spec.seed, start_file="/out/start"))
    return out


def _host_context(spec: TestSpec, ens, out_dir: Path, t0_ns: int, zk) -> ClientContext:
    """Client 0: the runner's own session, for setup and the final reads."""
    rec = Recorder(str(out_dir / "client-0.jsonl"), t0_ns, 0, max(1, spec.clients))
    return ClientContext(client=0, nclients=spec.clients, zk=zk, hosts=ens.connect_string(),
                         recipe=spec.recipe, params=spec.params, recorder=rec,
                         deadline=time.monotonic() + 3600)


def run_test(spec: TestSpec, store_root: Path | None = None, display=None,
             schedule: list[dict] | None = None) -> RunResult:
    """Run one test end to end. `display` (optional) gets progress callbacks; `schedule`
    replays an executed schedule instead of generating one."""
    from kazoo.client import KazooClient

    from zkjepsen.clients import ClientPool, merge_histories
    from zkjepsen.harness import resources
    from zkjepsen.harness.ensemble import DockerEnsemble, EnsembleSpec
    from zkjepsen.harness.zkconfig import ZkSettings
    from zkjepsen.store import new_run_dir
    from zkjepsen.workloads import get_workload

    validate_spec(spec)
    workload = get_workload(spec.workload)
    client = resources.docker_client()
    from zkjepsen.cli_cluster import ensure_image

    image = ensure_image(client, spec.image).tag
    store_dir = new_run_dir(spec.test_name, store_root)
    (store_dir / "test.json").write_text(json.dumps(spec.to_json(), indent=2))
    out_dir = store_dir / "clients"
    out_dir.mkdir()
    log = RunLog(store_dir / "run.log", display)
    names = [n for n in spec.nemesis if n != "none"]
    stats: dict[str, Any] = {}
    ens_spec = EnsembleSpec(nodes=spec.nodes, image=image,
                            settings=ZkSettings(tick_ms=spec.tick_ms))
    with resources.teardown_on_signals(), \
            DockerEnsemble(ens_spec, store_dir, client=client) as ens:
        log(f"ensemble {ens.run_id} up: {ens.connect_string()} (leader {ens.leader().name})")
        t0_ns = time.monotonic_ns()
        zk = KazooClient(hosts=ens.connect_string(), timeout=spec.session_timeout_s)
        zk.start(timeout=15)
        host_ctx = _host_context(spec, ens, out_dir, t0_ns, zk)
        pool = ClientPool(ens, out_dir)
        stop = threading.Event()
        try:
            workload.setup(host_ctx)
            # Containers start in parallel and connect; the main phase (and the clock of the
            # fault schedule) begins when all of them are ready, so every client sees it whole.
            pool.start(_client_specs(spec, ens, t0_ns, deadline=0.0))
            laggards = pool.wait_connected(60)
            if laggards:
                log(f"clients {laggards} did not connect within 60 s; starting without them")
            deadline = time.monotonic() + spec.time_limit_s + spec.recovery_s
            pool.release(deadline)
            log(f"{spec.clients} clients started; main phase {spec.time_limit_s:g}s")
            if display:
                display.attach(out_dir, store_dir / "nemesis.jsonl", t0_ns, spec)
            executed: list[dict] = []
            if names or schedule:
                from zkjepsen.nemesis import run_nemesis

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
    records = merge_histories(out_dir, extra=[store_dir / "nemesis.jsonl"])
    from zkjepsen.history import History, Op

    history = History([Op.from_dict(r) for r in records])
    history.to_jsonl(store_dir / "history.jsonl")
    result = check_history(history, spec, store_dir)
    (store_dir / "results.json").write_text(json.dumps(result, indent=2, default=str))
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
    from zkjepsen import generator

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
    result = compose(checkers).check(history).to_json()
    if store_dir is not None and result.get("valid") is not True:
        try:
            from zkjepsen.report.counterexample import write_failures

            write_failures(checkers, store_dir, history)
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
        (run.store_dir / "run.log").open("a").write(f"report rendering failed: {e}\n")


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
