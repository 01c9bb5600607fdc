"""Many runs at once: `--parallel N` slots on each of the engines given, one process per run.

Why processes: a run owns its teardown, and its teardown hangs on signal handlers (SIGTERM and
SIGHUP become an exception in the main thread, Ctrl-C already is one), which Python runs only
in a process's main thread. So each run is a worker process (`worker_main`) running `run_test`
in its own main thread, writing its folder into the local store (straight, or fetched from the
controller container that ran it on an engine this machine cannot reach: run/controller.py)
and a small result file for the parent.

Signals: workers ignore SIGINT (a Ctrl-C in the terminal reaches the whole process group) and
the parent, on Ctrl-C, SIGTERM or any error, sends each running worker exactly one SIGTERM and
waits for it to tear its run down. A worker also gets SIGTERM if the parent dies (SIGKILL
included: PR_SET_PDEATHSIG), so a killed matrix leaves nothing once its workers have exited;
a worker killed outright leaves resources whose owner is dead, which `cleanup --engine` removes.

With one slot in all, runs happen in this process, one after the other, exactly as before.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkjepsen.docker import signals
from zkjepsen.docker.engine import Engine
from zkjepsen.errors import EXIT_BAD_INPUT, BadInput, EnvironmentProblem, ZkJepsenError
from zkjepsen.run.runner import RunResult, run_test
from zkjepsen.run.spec import TestSpec

WORKER = "from zkjepsen.run.fanout import worker_main; worker_main()"
TEARDOWN_WAIT_S = 180.0
PR_SET_PDEATHSIG = 1


@dataclass
class Job:
    spec: TestSpec
    schedule: dict | None = None
    tag: Any = None  # the caller's key for this run (a matrix cell, a try number...)


@dataclass
class Outcome:
    job: Job
    engine: str
    run: RunResult


def slots(engines: list[Engine], parallel: int) -> list[Engine]:
    """Slot order: engines interleaved, so the first runs spread over every engine."""
    return [e for _ in range(parallel) for e in engines]


def run_jobs(
    jobs: list[Job],
    engines: list[Engine],
    parallel: int = 1,
    store_root: Path | None = None,
    on_start: Callable[[int, Job, Engine], None] = lambda i, j, e: None,
    on_done: Callable[[int, Outcome], None] = lambda i, o: None,
    keep_going: bool = False,
) -> list[Outcome]:
    """Run every job, at most `parallel` at a time on each engine; outcomes in job order.
    The first run that fails with an error (not a verdict) stops the others and is raised;
    with `keep_going` (a matrix: one run's lost session on a loaded machine must not end 100
    others) such a run is an `unknown` outcome carrying its error, and the rest go on. Bad
    input and a stop (Ctrl-C, SIGTERM) still end everything."""
    free = slots(engines, parallel)
    if len(free) == 1:
        out = []
        for i, job in enumerate(jobs):
            on_start(i, job, free[0])
            try:
                run = run_test(job.spec, store_root, schedule=job.schedule, engine=free[0])
            except (BadInput, signals.Terminated, KeyboardInterrupt):
                raise
            except Exception as e:
                if not keep_going:
                    raise
                run = failed_run(job, f"{type(e).__name__}: {e}")
            o = Outcome(job, free[0].name, run)
            on_done(i, o)
            out.append(o)
        return out
    return Pool(free, store_root, keep_going).run(jobs, on_start, on_done)


def failed_run(job: Job, error: str) -> RunResult:
    """The outcome of a run that ended in an error, not a verdict: unknown, with the error."""
    return RunResult(job.spec, Path(""), "unknown", {"valid": "unknown", "error": error}, {})


class Pool:
    """The parent side: launches workers from the main thread (PDEATHSIG is per thread)."""

    def __init__(self, free: list[Engine], store_root: Path | None, keep_going=False) -> None:
        self.free = list(free)
        self.keep_going = keep_going
        self.store_root = store_root
        self.running: dict[subprocess.Popen, tuple[int, Job, Engine, Path]] = {}
        self.tmp = Path(tempfile.mkdtemp(prefix="zkjepsen-fanout-"))

    def run(self, jobs, on_start, on_done) -> list[Outcome]:
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
                        time.sleep(0.1)
                except BaseException:
                    self.stop_all()
                    raise
        finally:
            import shutil

            shutil.rmtree(self.tmp, ignore_errors=True)
        return [done[i] for i in sorted(done)]

    def _launch(self, i: int, job: Job, engine: Engine) -> None:
        job_file = self.tmp / f"job-{i}.json"
        job_file.write_text(
            json.dumps(
                {
                    "spec": job.spec.to_json(),
                    "schedule": job.schedule,
                    "engine": engine.name,
                    "store_root": str(self.store_root) if self.store_root else None,
                    "result": str(self.tmp / f"result-{i}.json"),
                    "parent": os.getpid(),
                }
            )
        )
        env = dict(os.environ)
        # Whatever the parent can import (a user's recipe package included), the worker can.
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
        log = open(self.tmp / f"log-{i}.txt", "w")  # noqa: SIM115 - the worker owns it
        proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(job_file)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        log.close()
        self.running[proc] = (i, job, engine, self.tmp / f"result-{i}.json")

    def _collect(self, proc: subprocess.Popen) -> Outcome:
        i, job, engine, result_path = self.running.pop(proc)
        try:
            res = json.loads(result_path.read_text())
        except (OSError, ValueError):
            tail = (self.tmp / f"log-{i}.txt").read_text(errors="replace").strip().splitlines()
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
        spec = TestSpec.from_json(res["spec"])
        return Outcome(
            job,
            engine.name,
            RunResult(spec, Path(res["store_dir"]), res["valid"], res["results"], res["stats"]),
        )

    def stop_all(self) -> None:
        """One SIGTERM to every running worker, then wait for each to tear its run down.
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
            self.running.clear()


# ---- the worker side --------------------------------------------------------------------------
def _die_with_parent(parent: int) -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def worker_main(argv: list[str] | None = None) -> None:
    """One run in this process (started by `Pool`); writes the outcome to the job's result
    file. Returns normally whatever happens: the parent reads the file."""
    job = json.loads(Path((argv or sys.argv)[1]).read_text())
    result: dict[str, Any]

    def terminated(signum, frame):
        raise signals.Terminated(f"received signal {signum}")

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides, and sends SIGTERM
    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGHUP, terminated)
    _die_with_parent(job["parent"])
    try:
        run = run_test(
            TestSpec.from_json(job["spec"]),
            Path(job["store_root"]) if job["store_root"] else None,
            schedule=job["schedule"],
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
    except Exception as e:  # noqa: BLE001 - reported by the parent as one sentence
        result = {
            "ok": False,
            "error": f"internal error: {type(e).__name__}: {e}",
            "exit_code": 255,
        }
    path = Path(job["result"])
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, default=str))
    tmp.replace(path)
