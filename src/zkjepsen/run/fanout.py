"""Many runs at once: `--parallel N` slots on one engine, one process per run (`--cluster`:
on Dask workers, each with its own host's engine, run/dask_executor.py, which reuses the
process per run below).

Why processes: a run owns its teardown, and its teardown hangs on signal handlers (SIGTERM and
SIGHUP become an exception in the main thread, Ctrl-C already is one), which Python runs only
in a process's main thread. So each run is a worker process (`worker_main`) running `run_test`
in its own main thread, writing its folder into the store and a small result file for the
parent.

Signals: workers ignore SIGINT (a Ctrl-C in the terminal reaches the whole process group) and
the parent, on Ctrl-C, SIGTERM or any error, sends each running worker exactly one SIGTERM and
waits for it to tear its run down. A worker also gets SIGTERM if the parent dies (SIGKILL
included: PR_SET_PDEATHSIG), so a killed matrix leaves nothing once its workers have exited;
a worker killed outright leaves resources whose owner is dead, which `cleanup --engine` removes.

With one slot in all, runs happen in this process, one after the other, exactly as before.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkjepsen.docker import signals
from zkjepsen.docker.engine import Engine
from zkjepsen.errors import EXIT_BAD_INPUT, BadInput, EnvironmentProblem, ZkJepsenError
from zkjepsen.run import online
from zkjepsen.run.outcome import Phase, Teardown, note_many, reraise, stopped_by
from zkjepsen.run.runner import RunResult, run_test
from zkjepsen.run.spec import read_spec
from zkjepsen.spec import TestSpec
from zkjepsen.store.regular import read_json, read_tail

WORKER = "from zkjepsen.run.fanout import worker_main; worker_main()"
TEARDOWN_WAIT_S = 180.0
PR_SET_PDEATHSIG = 1


@dataclass
class Job:
    spec: TestSpec
    schedule: dict[str, Any] | list[dict[str, Any]] | None = None
    tag: Any = None  # the caller's key for this run (a matrix cell, a try number...)
    scenario: str | None = None  # a scenario's name: its triggered faults drive the run


@dataclass
class Outcome:
    job: Job
    engine: str
    run: RunResult
    started_at: float | None = None  # wall clock when the run's process began (benchmarks)


def run_jobs(
    jobs: list[Job],
    engine: Engine | None = None,
    parallel: int = 1,
    store_root: Path | None = None,
    on_start: Callable[[int, Job, Engine], None] = lambda i, j, e: None,
    on_done: Callable[[int, Outcome], None] = lambda i, o: None,
    keep_going: bool = False,
    stop_when: Callable[[Outcome], bool] | None = None,
    ask_at_violation: bool = False,
) -> list[Outcome]:
    """Run every job, at most `parallel` at a time on `engine` (default: the environment's);
    outcomes in job order.
    The first run that fails with an error (not a verdict) stops the others and is raised;
    with `keep_going` (a matrix: one run's lost session on a loaded machine must not end 100
    others) such a run is an `unknown` outcome carrying its error, and the rest go on. Bad
    input and a stop (Ctrl-C, SIGTERM) still end everything. Once `stop_when` holds for an
    outcome (a gate: a scenario failed), the runs under way are asked to end their main phase
    (run/online.py: those with a stop condition do, and are checked as usual) and the jobs not
    started are not run: unknown, NOT_RUN. With `ask_at_violation` (`stop_when` is "a run
    failed", and the runs stop on violation) that happens as soon as a run under way confirms a
    violation online, not after its teardown: it will fail."""
    free = [engine or Engine()] * parallel
    if len(free) == 1:
        out: list[Outcome] = []
        try:
            return _one_at_a_time(jobs, free[0], store_root, on_start, on_done, keep_going,
                                  stop_when, out)  # fmt: skip
        except BaseException as e:  # what it left, for the last line (cli: interrupted_message)
            carried = stopped_by(e)
            td = carried.teardown if carried else None
            reraise(e, note_many(e, [o.run.store_dir for o in out], [td] if td is not None else []))
    pool = Pool(free, store_root, keep_going, ask_at_violation and stop_when is not None)
    return pool.run(jobs, on_start, on_done, stop_when)


def _one_at_a_time(
    jobs: list[Job],
    engine: Engine,
    store_root: Path | None,
    on_start: Callable[[int, Job, Engine], None],
    on_done: Callable[[int, Outcome], None],
    keep_going: bool,
    stop_when: Callable[[Outcome], bool] | None,
    out: list[Outcome],
) -> list[Outcome]:
    """run_jobs with one slot: each job in this process; `out` holds the outcomes so far."""
    for i, job in enumerate(jobs):
        if stop_when is not None and any(stop_when(o) for o in out):
            out.append(Outcome(job, "", failed_run(job, NOT_RUN)))
            continue
        on_start(i, job, engine)
        try:
            gen = scenario_faults(job.scenario)
            run = run_test(job.spec, store_root, schedule=job.schedule, gen=gen, engine=engine)
        except (BadInput, signals.Terminated, KeyboardInterrupt):
            raise
        except Exception as e:
            if not keep_going:
                raise
            run = failed_run(job, f"{type(e).__name__}: {e}")
        o = Outcome(job, engine.name, run)
        on_done(i, o)
        out.append(o)
    return out


NOT_RUN = "not run: an earlier run of the same command failed"


SCENARIOS = "zkjepsen.reproduce.scenarios"  # by name, as the registries do: no import arrow


def scenario_faults(name: str | None) -> Any:
    """A scenario's fault generator (its triggered steps), by the scenario's name: a generator
    cannot cross into a run's process, its name can."""
    if name is None:
        return None

    return importlib.import_module(SCENARIOS).get_scenario(name).schedule


def failed_run(job: Job, error: str) -> RunResult:
    """The outcome of a run that ended in an error, not a verdict: unknown, with the error."""
    return RunResult(job.spec, Path(""), "unknown", {"valid": "unknown", "error": error}, {})


class Pool:
    """The parent side: launches workers from the main thread (PDEATHSIG is per thread)."""

    def __init__(
        self,
        free: list[Engine],
        store_root: Path | None,
        keep_going: bool = False,
        told: bool = False,
    ) -> None:
        self.free = list(free)
        self.keep_going = keep_going
        self.tell = told  # runs tell their confirmed violation (a `told-I` file), see run_jobs
        self.listening = told  # until the first tell has asked the others
        self.store_root = store_root
        self.running: dict[subprocess.Popen[bytes], tuple[int, Job, Engine, Path]] = {}
        self.tmp = Path(tempfile.mkdtemp(prefix="zkjepsen-fanout-"))

    def run(
        self,
        jobs: list[Job],
        on_start: Callable[[int, Job, Engine], None],
        on_done: Callable[[int, Outcome], None],
        stop_when: Callable[[Outcome], bool] | None = None,
    ) -> list[Outcome]:
        pending = list(enumerate(jobs))
        done: dict[int, Outcome] = {}
        try:
            # The first Ctrl-C/SIGTERM/SIGHUP raises here; later ones are ignored while the
            # workers tear their runs down (stop_all runs inside the same guarded region).
            with signals.teardown_on_signals():
                try:
                    while pending or self.running:
                        while pending and self.free:
                            i, job = pending.pop(0)
                            engine = self.free.pop(0)
                            on_start(i, job, engine)
                            self._launch(i, job, engine)
                        for proc in [p for p in self.running if p.poll() is not None]:
                            i, job, engine, _ = self.running[proc]
                            outcome = self._collect(proc)
                            self.free.append(engine)
                            done[i] = outcome
                            on_done(i, outcome)
                            if stop_when is not None and pending + list(self.running):
                                if stop_when(outcome):
                                    done.update(self._ask_all_to_stop(pending))
                                    pending = []
                        if self.listening and self._a_run_told():
                            self.listening = False  # once: the asks are files that stay
                            done.update(self._ask_all_to_stop(pending))
                            pending = []
                        time.sleep(0.1)
                except BaseException as e:
                    cut = self.stop_all()
                    reraise(e, note_many(e, [o.run.store_dir for o in done.values()], cut))
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return [done[i] for i in sorted(done)]

    def _a_run_told(self) -> bool:
        return any((self.tmp / f"told-{i}").exists() for i, *_ in self.running.values())

    def _ask_all_to_stop(self, pending: list[tuple[int, Job]]) -> dict[int, Outcome]:
        """Ask every run under way to end its main phase (its ask file); the outcomes of the
        jobs not started."""
        for i, *_ in self.running.values():
            (self.tmp / f"ask-{i}").touch()
        return {i: Outcome(job, "", failed_run(job, NOT_RUN)) for i, job in pending}

    def _launch(self, i: int, job: Job, engine: Engine) -> None:
        job_dict = {
            "spec": job.spec.to_json(),
            "schedule": job.schedule,
            "scenario": job.scenario,
            "engine": engine.name,
            "store_root": str(self.store_root) if self.store_root else None,
            "ask_file": str(self.tmp / f"ask-{i}"),
            "tell_file": str(self.tmp / f"told-{i}") if self.tell else None,
        }
        proc = launch_worker(job_dict, self.tmp, str(i))
        self.running[proc] = (i, job, engine, self.tmp / f"result-{i}.json")

    def _collect(self, proc: subprocess.Popen[bytes]) -> Outcome:
        i, job, engine, result_path = self.running.pop(proc)
        try:
            res = read_json(result_path, "worker result")
        except BadInput:
            tail = read_tail(self.tmp / f"log-{i}.txt", "worker log").strip().splitlines()
            raise EnvironmentProblem(
                f"the worker for run {i + 1} on engine {engine.name} died (exit "
                f"{proc.returncode}) without a result; its output ends: "
                + (" | ".join(tail[-3:]) or "(nothing)")
            ) from None
        if not res["ok"]:
            if self.keep_going and res["exit_code"] not in (EXIT_BAD_INPUT, 143):
                return Outcome(job, engine.name, failed_run(job, res["error"]))
            cls = BadInput if res["exit_code"] == EXIT_BAD_INPUT else EnvironmentProblem
            raise cls(f"run {i + 1} on engine {engine.name}: {res['error']}")
        spec = read_spec(res["spec"])
        run = RunResult(spec, Path(res["store_dir"]), res["valid"], res["results"], res["stats"])
        return Outcome(job, engine.name, run, res.get("started_at"))

    def stop_all(self) -> list[Teardown]:
        """One SIGTERM to every running worker, then wait for each to tear its run down;
        returns how each of their runs ended (those that had a folder).
        Signals are held back meanwhile: a second Ctrl-C must not abandon the waiting."""
        with signals.signals_deferred():
            for proc in self.running:
                try:
                    proc.send_signal(signal.SIGTERM)
                except OSError:
                    pass
            deadline = time.monotonic() + TEARDOWN_WAIT_S
            for proc in list(self.running):
                try:
                    proc.wait(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()  # leaves resources of a dead owner: `cleanup` removes them
                    proc.wait()
            cut = [td for p in self.running if (td := _cut_teardown(self.running[p][3]))]
            self.running.clear()
        return cut


# ---- the worker side --------------------------------------------------------------------------
def launch_worker(
    job: dict[str, Any], tmp: Path, name: str, orphan_scratch: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start `worker_main` for `job` (spec, schedule, engine, store_root) in a process of its
    own: job, result and log files in `tmp`, named by `name`. `orphan_scratch`: a dir the
    worker removes after its teardown if this process dies (a Dask worker's scratch store)."""
    job = {
        **job,
        "result": str(tmp / f"result-{name}.json"),
        "parent": os.getpid(),
        # PDEATHSIG fires when the launching *thread* ends: only the main thread's is safe.
        "pdeathsig": threading.current_thread() is threading.main_thread(),
        "orphan_scratch": str(orphan_scratch) if orphan_scratch else None,
    }
    job_file = tmp / f"job-{name}.json"
    job_file.write_text(json.dumps(job))
    env = dict(os.environ)
    # Whatever the parent can import (a user's recipe package included), the worker can.
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    log = open(tmp / f"log-{name}.txt", "w")  # noqa: SIM115 - the worker owns it
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(job_file)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    log.close()
    return proc


def _cut_teardown(result_path: Path) -> Teardown | None:
    """How a worker's run ended when the pool stopped it (its result file's `teardown`)."""
    try:
        td = read_json(result_path, "worker result").get("teardown")
        phase = Phase(td["phase"]) if td["phase"] else None
        return Teardown(td["run_id"], Path(td["store_dir"]), list(td["left"]), phase)
    except (BadInput, ValueError, TypeError, KeyError, AttributeError):
        return None  # stopped before its run had a folder, or killed before writing


def _clear_pool_dir(job_file: Path) -> None:
    """An orphaned run's last act: remove its own files and those of every run that ended (its
    result is written) from the pool's folder, then the folder once no run is left in it (the
    last orphan to end removes it)."""
    pool = job_file.parent
    name = job_file.stem.removeprefix("job-")
    for f in (job_file, pool / f"log-{name}.txt"):
        f.unlink(missing_ok=True)
    for other in pool.glob("job-*.json"):
        theirs = other.stem.removeprefix("job-")
        if (pool / f"result-{theirs}.json").exists():
            for f in (other, pool / f"result-{theirs}.json", pool / f"log-{theirs}.txt"):
                f.unlink(missing_ok=True)
    # Asks to runs that are over, and what runs told: harmless, but not ours to keep.
    for f in [*pool.glob("ask-*"), *pool.glob("told-*")]:
        if not (pool / f"job-{f.name.split('-', 1)[1]}.json").exists():
            f.unlink(missing_ok=True)
    try:
        pool.rmdir()
    except OSError:
        pass  # a run still under way: it removes the folder when it ends


def _watch_parent(parent: int) -> None:
    """SIGTERM to this process once its parent is gone (checked every second): the same as
    PDEATHSIG where that cannot be used (launched from a thread that may end first)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        _orphaned.set()
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True).start()


_orphaned = threading.Event()


def _die_with_parent(parent: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def worker_main(argv: list[str] | None = None) -> None:
    """One run in this process (started by `Pool`); writes the outcome to the job's result
    file. Returns normally whatever happens: the parent reads the file."""
    started_at = time.time()
    job = read_json((argv or sys.argv)[1], "worker job")
    result: dict[str, Any]

    def terminated(signum: int, frame: object) -> None:
        raise signals.Terminated(f"received signal {signum}")

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides, and sends SIGTERM
    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGHUP, terminated)
    if job.get("pdeathsig", True):
        _die_with_parent(job["parent"])
    _watch_parent(job["parent"])
    if job.get("ask_file"):
        online.listen_for_ask(Path(job["ask_file"]))
        if job.get("tell_file"):
            online.tell_violation_at(Path(job["tell_file"]))
    try:
        run = run_test(
            read_spec(job["spec"]),
            Path(job["store_root"]) if job["store_root"] else None,
            schedule=job["schedule"],
            gen=scenario_faults(job.get("scenario")),
            engine=Engine.parse(job["engine"]),
        )
        result = {
            "ok": True,
            "valid": run.valid,
            "results": run.results,
            "stats": run.stats,
            "store_dir": str(run.store_dir),
            "spec": run.spec.to_json(),
        }
    except ZkJepsenError as e:
        result = {"ok": False, "error": str(e), "exit_code": e.exit_code}
    except signals.Terminated as e:
        result = {"ok": False, "error": f"stopped ({e})", "exit_code": 143}
        carried = stopped_by(e)
        td = carried.teardown if carried else None
        if td is not None:  # where its folder is and what it holds: the parent's last line
            result["teardown"] = {
                "run_id": td.run_id,
                "store_dir": str(td.store_dir),
                "left": list(td.left),
                "phase": td.phase,
            }
    except Exception as e:  # noqa: BLE001 - reported by the parent as one sentence
        result = {
            "ok": False,
            "error": f"internal error: {type(e).__name__}: {e}",
            "exit_code": 255,
        }
    orphaned = _orphaned.is_set() or os.getppid() != job["parent"]
    if orphaned and job.get("orphan_scratch"):
        # Nobody will collect this run: its folder goes with the scratch dir it is in.
        shutil.rmtree(job["orphan_scratch"], ignore_errors=True)
        return
    if orphaned:  # a killed `matrix --parallel`: nobody reads results or removes the pool's dir
        _clear_pool_dir(Path((argv or sys.argv)[1]))
        return
    path = Path(job["result"])
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**result, "started_at": started_at}, default=str))
    tmp.replace(path)
