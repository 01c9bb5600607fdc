"""`--cluster tcp://HOST:PORT`: each run a task on a Dask cluster, its folder back in our store.

Dask (`distributed`) is the scheduler, the worker health, the retries and the dashboard; this
module is only what a run needs on top:
- Where: a worker runs a run on its own host with its host's Docker engine (the worker's
  DOCKER_HOST, or the default socket), so the runner sits next to the ensemble as in a local run.
  The images a run needs are built there if missing (never pulled), one build at a time per
  worker. A run asks for one unit of the worker resource `docker`: a worker started with
  `--resources docker=N` runs at most N at once, whatever its thread count.
- How: a task cannot be killed in a worker thread, so the run goes into a process of its own
  (run/fanout.py's `worker_main`, the local fan-out's), which the task watches. When the task is
  cancelled (the submitter's Ctrl-C, or the submitter gone: Dask releases its futures) it sends
  that process one SIGTERM and waits for its teardown, as the local fan-out does. If the worker
  process dies outright, the run's process notices (its parent is gone), tears its run down
  and removes its scratch folder: what is left is what `zkjepsen cleanup` there removes.
- Back: the run's folder comes back as the task's result, a gzipped tar in bytes. Dask ships
  results over its own connections, so no shared filesystem, port or copy tool is needed; a
  run's folder is ~0.5 MB for a short run (histories, logs, reports; ~0.12 MB gzipped), well
  within what Dask moves comfortably.
- Lost worker: the scheduler gives a lost worker's running tasks to another worker (its
  `allowed-failures`, 3 by default, bounds how often); a task that raised is retried once
  (`retries=1`). Past that the run is recorded unknown with the reason, and the others go on.
- Progress: the task reports "started on WORKER" and "ended" as Dask events (topic
  `zkjepsen-runs`); the submitter shows them, and Ctrl-C waits for every started run's "ended".
"""

from __future__ import annotations

import io
import queue
import re
import secrets
import shutil
import signal
import socket
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkjepsen.backends.registry import provide_images
from zkjepsen.docker import signals
from zkjepsen.docker.engine import Engine
from zkjepsen.errors import EXIT_BAD_INPUT, BadInput, EnvironmentProblem, ZkJepsenError
from zkjepsen.run.dask_builds import RESOURCE, check_builds
from zkjepsen.run.fanout import NOT_RUN, Job, Outcome, failed_run, launch_worker
from zkjepsen.run.outcome import RunResult
from zkjepsen.run.resolve import validate_spec
from zkjepsen.run.spec import read_spec
from zkjepsen.store import new_run_dir
from zkjepsen.store.regular import read_json, read_tail

TOPIC = "zkjepsen-runs"
POLL_S = 0.5
ASK_EVERY_S = 1.0
CONNECT_TIMEOUT_S = 10.0
TEARDOWN_WAIT_S = 180.0
ADDRESS = re.compile(
    r"^(tcp|tls)://([A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]):(\d+)$"
)
_image_lock = threading.Lock()  # one image build at a time on a worker


@dataclass(frozen=True)
class Where:
    """Where a run started (what the progress line names): a worker and its engine."""

    name: str


def check_address(text: str) -> str:
    """A Dask scheduler address, checked before anything connects: tcp://HOST:PORT."""
    m = ADDRESS.match((text or "").strip())
    if not m or not 0 < int(m.group(3)) < 65536:
        raise BadInput(
            f"--cluster {text!r} is not a Dask scheduler address; give tcp://HOST:PORT, "
            "e.g. tcp://10.0.0.5:8786 (what `dask scheduler` prints)"
        )
    return m.group(0)


def _dask() -> Any:
    """Dask's `distributed` (its calls are untyped: Any here)."""
    try:
        # here, not at the top: the optional [cluster] extra, only with --cluster
        import distributed
    except ImportError:
        raise EnvironmentProblem(
            "--cluster needs Dask's `distributed` package: pip install 'zkjepsen[cluster]'"
        ) from None
    return distributed


def connect(address: str, timeout: float = CONNECT_TIMEOUT_S) -> Any:
    """A Dask client of the scheduler at `address`, with at least one worker that offers the
    `docker` resource; else one sentence (exit 255: the cluster, not the command, is wrong)."""
    dask = _dask()
    address = check_address(address)
    try:
        _knock(address)  # a refused port is said at once, not after Dask's retries
        client = dask.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise EnvironmentProblem(
            f"cannot reach the Dask scheduler at {address} ({str(e)[:120]}); is `dask "
            "scheduler` running there, and is the port open?"
        ) from None
    workers = client.scheduler_info().get("workers", {}).values()
    if not any(w.get("resources", {}).get(RESOURCE, 0) >= 1 for w in workers):
        client.close()
        raise EnvironmentProblem(
            f"no worker of the Dask cluster at {address} offers the `{RESOURCE}` resource; "
            f"start one per Docker host: dask worker {address} --resources {RESOURCE}=2"
        )
    try:
        check_builds(client, address)
    except BaseException:
        client.close()
        raise
    return client


def slots(client: Any) -> int:
    """How many runs the cluster runs at once: its workers' `docker` resources, summed."""
    workers = client.scheduler_info().get("workers", {}).values()
    return max(1, int(sum(w.get("resources", {}).get(RESOURCE, 0) for w in workers)))


def _knock(address: str) -> None:
    """One TCP connection to the scheduler's port (TLS comes later, in Dask's own client)."""
    m = ADDRESS.match(address)
    assert m is not None
    host = m.group(2).strip("[]")
    socket.create_connection((host, int(m.group(3))), timeout=CONNECT_TIMEOUT_S).close()


def run_jobs_on_cluster(
    jobs: list[Job],
    address: str,
    store_root: Path | None = None,
    on_start: Callable[[int, Job, Any], None] = lambda i, j, w: None,
    on_done: Callable[[int, Outcome], None] = lambda i, o: None,
    keep_going: bool = False,
    client: Any = None,
    stop_when: Callable[[Outcome], bool] | None = None,
    ask_at_violation: bool = False,
) -> list[Outcome]:
    """Every job a task on the cluster; outcomes in job order, as `fanout.run_jobs` gives them
    (the same rules for errors: unknown with `keep_going`, else raised; bad input raised; once
    `stop_when` holds, the others are asked to stop, through a Dask Event their tasks watch;
    with `ask_at_violation`, the task whose run confirms a violation online sets that Event)."""
    own = client is None
    client = client or connect(address)
    events: queue.Queue[dict[str, Any]] = queue.Queue()
    client.subscribe_topic(TOPIC, lambda event: events.put(event[1]))
    token = secrets.token_hex(4)
    stop_event = f"zkjepsen-stop-{token}"
    futures: dict[str, tuple[Any, int, Job]] = {}
    for i, job in enumerate(jobs):
        payload = {
            "spec": job.spec.to_json(),
            "schedule": job.schedule,
            "scenario": job.scenario,
            "stop_event": stop_event if stop_when is not None else None,
            "tell": ask_at_violation and stop_when is not None,
        }
        key = f"zkjepsen-run-{token}-{i}"
        fut = client.submit(
            run_on_worker, payload, key=key, resources={RESOURCE: 1}, retries=1, pure=False
        )
        futures[key] = (fut, i, job)
    live: dict[str, str] = {}  # key -> where, of runs started and not ended
    done: dict[int, Outcome] = {}
    try:
        with signals.teardown_on_signals():
            try:
                while len(done) < len(jobs):
                    _drain(events, futures, live, on_start)
                    for fut, i, job in futures.values():
                        if i not in done and fut.done():
                            done[i] = _collect(fut, job, store_root, keep_going)
                            on_done(i, done[i])
                            if stop_when is not None and stop_when(done[i]):
                                _ask_to_stop(client, stop_event)
                    time.sleep(0.2)
            except BaseException:
                _cancel(client, futures, events, live, on_start)
                raise
    finally:
        client.unsubscribe_topic(TOPIC)
        if stop_when is not None:
            _ask_to_stop(client, stop_event, clear=True)
        if own:
            client.close()
    return [done[i] for i in sorted(done)]


def _ask_to_stop(client: Any, name: str, clear: bool = False) -> None:
    """Set (or, at the end, clear: the scheduler keeps an Event until then) the Event the runs
    of one command watch."""
    event = _dask().Event(name, client=client)
    event.clear() if clear else event.set()


Futures = dict[str, tuple[Any, int, Job]]  # a task's key -> (its future, job index, job)
OnStart = Callable[[int, Job, Any], None]


def _drain(
    events: queue.Queue[dict[str, Any]], futures: Futures, live: dict[str, str], on_start: OnStart
) -> None:
    while True:
        try:
            ev = events.get_nowait()
        except queue.Empty:
            return
        if ev.get("key") not in futures:
            continue  # another submitter's run on the same cluster
        if ev["event"] == "started":
            live[ev["key"]] = ev["where"]
            _, i, job = futures[ev["key"]]
            on_start(i, job, Where(ev["where"]))
        elif ev["event"] == "ended":
            live.pop(ev["key"], None)


def _cancel(
    client: Any,
    futures: Futures,
    events: queue.Queue[dict[str, Any]],
    live: dict[str, str],
    on_start: OnStart,
) -> None:
    """Cancel every task, then wait until each started run has told it was torn down."""
    with signals.signals_deferred():
        client.cancel([fut for fut, _, _ in futures.values()], force=True)
        deadline = time.monotonic() + TEARDOWN_WAIT_S
        grace = time.monotonic() + 2.0  # a "started" on its way when we cancelled
        while time.monotonic() < deadline and (live or time.monotonic() < grace):
            _drain(events, futures, live, on_start)
            time.sleep(0.2)


def _collect(fut: Any, job: Job, store_root: Path | None, keep_going: bool) -> Outcome:

    try:
        res = fut.result()
    except Exception as e:  # noqa: BLE001 - KilledWorker (lost too often), or raised twice
        if not keep_going:
            raise EnvironmentProblem(f"a run on the Dask cluster failed: {e}") from None
        return Outcome(
            job, "cluster", failed_run(job, f"lost on the cluster: {type(e).__name__}: {e}")
        )
    where = res.get("where", "cluster")
    if not res["ok"]:
        if res["exit_code"] == EXIT_BAD_INPUT:
            raise BadInput(f"on {where}: {res['error']}")
        if keep_going:
            return Outcome(job, where, failed_run(job, f"on {where}: {res['error']}"))
        raise EnvironmentProblem(f"on {where}: {res['error']}")

    local_dir = new_run_dir(job.spec.test_name, store_root).path
    with tarfile.open(fileobj=io.BytesIO(res["folder"]), mode="r:gz") as tar:
        tar.extractall(local_dir, filter="data")
    spec = read_spec(res["spec"])
    run = RunResult(spec, local_dir, res["valid"], res["results"], res["stats"])
    return Outcome(job, where, run, res.get("started_at"))


# ---- the worker side: runs in a Dask worker's thread ------------------------------------------
def run_on_worker(payload: dict[str, Any]) -> dict[str, Any]:
    """One run on this worker's host and engine, in a process of its own; its outcome, with
    its folder as a gzipped tar. Cancelled: the run's process gets SIGTERM and is waited for."""
    worker = _dask().get_worker()
    key = worker.get_current_task()
    engine = Engine()
    where = f"{socket.gethostname()} ({worker.address}, engine {engine.url})"
    scratch = Path(tempfile.mkdtemp(prefix="zkjepsen-dask-"))
    worker.log_event(TOPIC, {"event": "started", "key": key, "where": where})
    asked = _AskWatch(payload.get("stop_event"), scratch / "ask")
    try:
        if asked.poll():
            return {"ok": False, "error": NOT_RUN, "exit_code": 1, "where": where}
        error = _provide_images(engine, payload)
        if error:
            return {**error, "where": where}
        job = {**payload, "engine": "default", "store_root": str(scratch / "store")}
        job["ask_file"] = str(asked.file)
        job["tell_file"] = str(scratch / "told") if payload.get("tell") else None
        proc = launch_worker(job, scratch, "run", orphan_scratch=scratch)
        while proc.poll() is None:
            if _cancelled(worker, key):
                _stop(proc)
                return {"ok": False, "error": "cancelled", "exit_code": 143, "where": where}
            asked.poll()
            asked.tell_if(scratch / "told")
            time.sleep(POLL_S)
        return {**_result(scratch, proc.returncode), "where": where}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        worker.log_event(TOPIC, {"event": "ended", "key": key, "where": where})


class _AskWatch:
    """The submitter's ask to stop (a Dask Event, checked every ASK_EVERY_S), passed on to the
    run's process as the file it listens for (run/online.py)."""

    def __init__(self, name: str | None, file: Path) -> None:
        self.name, self.file, self.next = name, file, 0.0
        self.told = False

    def poll(self) -> bool:
        if self.name is None or self.file.exists() or time.monotonic() < self.next:
            return self.file.exists()
        self.next = time.monotonic() + ASK_EVERY_S
        try:
            if _dask().Event(self.name).is_set():
                self.file.touch()
        except Exception:  # noqa: BLE001 - no answer from the scheduler: ask again later; the
            pass  # run must stay watched whatever this says
        return self.file.exists()

    def tell_if(self, told: Path) -> None:
        """This run confirmed a violation online (its process created `told`): set the Event,
        so the other runs of the command stop now rather than after this one's teardown."""
        if self.name is None or self.told or not told.exists():
            return
        try:
            _dask().Event(self.name).set()
            self.told = True
        except Exception:  # noqa: BLE001 - the scheduler did not answer: try again next poll;
            pass  # the submitter still asks once this run's outcome is in


def _provide_images(engine: Engine, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The run's images on this host's engine, built here if missing; the error, if any."""

    spec = read_spec(payload["spec"])
    try:
        validate_spec(spec)  # fills in what the registries decide: the backend, its version
        with _image_lock:
            provide_images(engine, spec)
    except ZkJepsenError as e:
        return {"ok": False, "error": str(e), "exit_code": e.exit_code}
    return None


def _cancelled(worker: Any, key: object) -> bool:
    """The scheduler released this task: cancelled, or its submitter went away."""
    ts = worker.state.tasks.get(key)
    return ts is None or ts.state in ("cancelled", "released", "forgotten")


def _stop(proc: Any) -> None:
    """One SIGTERM (the run tears itself down), then wait for it."""
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=TEARDOWN_WAIT_S)
    except OSError:
        pass
    except Exception:  # noqa: BLE001 - TimeoutExpired: leaves a dead owner's, `cleanup` removes
        proc.kill()
        proc.wait()


def _result(scratch: Path, returncode: int) -> dict[str, Any]:

    try:
        res: dict[str, Any] = read_json(scratch / "result-run.json", "run result")
    except BadInput:
        tail = read_tail(scratch / "log-run.txt", "run log").strip().splitlines()
        raise RuntimeError(
            f"the run's process died (exit {returncode}) without a result; its output ends: "
            + (" | ".join(tail[-3:]) or "(nothing)")
        ) from None
    if res.get("ok"):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(res["store_dir"], arcname=".")
        res["folder"] = buf.getvalue()
    return res
