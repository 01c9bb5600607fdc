"""Entry point of one client process that drives a program under test (runs inside its own
container): `python3 -m zkjepsen.client.main SPEC.json`, the recorder driving `spec.command`
through the client wire protocol. The in-process mode (no program: the workload drives a recipe
object itself) has its own entry, workloads/inprocess.py; both start with `prepare`."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

from zkjepsen.client.clockwatch import OBSERVE_ENV, ClockWatch, ProbeWatch
from zkjepsen.client.lockclient import LockClient, WireLockClient
from zkjepsen.client.loop import LockLoop, paths
from zkjepsen.client.program_client import ProgramClient
from zkjepsen.client.recorder import Recorder, RecordingContext
from zkjepsen.client.seal import PROGRAM_HOME
from zkjepsen.client.spec import PROXY_TOKEN_ENV, WARP_LAUNCHER, WARP_SEEN, ClientSpec
from zkjepsen.client.zkproxy import ZkProxy

# Put first on a Python program's path under libfaketime: its sitecustomize mends time.sleep,
# which the preload breaks in Python's mode (faketime_site/sitecustomize.py says how).
SLEEP_FIX_DIR = str(Path(__file__).resolve().parent / "faketime_site")


def next_process(path: Path, client: int, nclients: int) -> int:
    """A restarted client (after a kill) must not reuse a process id of its earlier life."""
    highest = 0
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                p = json.loads(line).get("process")
            except ValueError:
                continue  # the line a SIGKILL cut short
            if isinstance(p, int):
                highest = max(highest, p)
    return client if highest == 0 else highest + nclients


def await_start(
    path: Path, ctx: RecordingContext, stop: threading.Event, timeout_s: float = 180.0
) -> bool:
    """The start barrier: every client connects first, then all begin together when the runner
    writes the main phase's deadline (a monotonic time) into `path`. A client restarted after
    a kill finds the file already there and goes straight on."""
    waited = 0.0
    while not stop.is_set() and waited < timeout_s:
        try:
            ctx.deadline = float(path.read_text())
            return True
        except (OSError, ValueError):
            stop.wait(0.02)
            waited += 0.02
    return False


def stop_at_deadline(path: Path, stop: threading.Event) -> threading.Thread:
    """Set `stop` when the run's deadline passes (the start barrier's file says when), as the
    runner's SIGTERM would: a request the program never answers, `init` included, then gets
    the stop grace (3 s, client/program.py) instead of its own deadline and 5 restarts, which
    held a 30 s run to 105 s (issue 40). The loop itself ends at the deadline either way."""

    def watch() -> None:
        while not stop.is_set():
            try:
                deadline = float(path.read_text())
                break
            except (OSError, ValueError):
                stop.wait(0.1)
        else:
            return
        stop.wait(max(0.0, deadline - time.monotonic()))
        stop.set()

    t = threading.Thread(target=watch, daemon=True, name="deadline")
    t.start()
    return t


def run_program(spec: ClientSpec, rec: Recorder, stop: threading.Event) -> int:
    """The client wire protocol: the program under test is a child process; the recorder
    (client/loop.py, over client/lockclient.py) drives it and writes the history.
    docs/client-protocol.md."""

    ctx = RecordingContext.of_spec(spec, rec, stop)
    request_timeout = float(spec.params.get("request_timeout_s", 15.0))
    # Under zkj-timewarp, the program (never the recorder) reads the skewed clocks.
    warp = [WARP_LAUNCHER, spec.program_warp] if spec.program_warp else []
    client = ProgramClient(
        ctx,
        [*warp, *spec.command],
        servers=spec.hosts,
        session_timeout_s=spec.session_timeout_s,
        workload=spec.workload,
        lock_path=paths(spec.workload, ctx.params)[0],  # the client's own (`locks`)
        cwd=spec.program_cwd,
        env=program_environment(spec),
        request_timeout_s=request_timeout,
        uid=spec.program_uid,
    )
    if spec.start_file:
        stop_at_deadline(Path(spec.start_file), stop)
    watching = threading.Event()
    clock_watch(spec, ctx, watching)
    try:
        if not client.start():
            return 3
        if spec.start_file and not await_start(Path(spec.start_file), ctx, stop):
            ctx.event("client-error", "the runner never released the start barrier")
            return 5
        lock_loop(ctx, client, spec.workload).run()
    except Exception as e:  # noqa: BLE001 - the history must say why a client stopped
        ctx.event("client-error", f"{type(e).__name__}: {e}")
        logging.exception("recorder loop failed")
        return 4
    finally:
        client.program.kill()
        watching.set()  # before the history closes: the watch writes into it
        rec.finish()  # its end: the file is whole (run/accounting.py)
    return 0 if not client.gave_up else 3


def lock_loop(ctx: RecordingContext, client: ProgramClient, workload: str) -> LockLoop:
    """The loop over the program: the rwlock's goes through a LockClient for each side, both
    the same program (each request names its side)."""
    if workload != "rwlock":
        return LockLoop(ctx, WireLockClient(client), workload)
    modes: dict[str, LockClient] = {m: WireLockClient(client, m) for m in ("read", "write")}
    return LockLoop(ctx, modes["write"], workload, modes)


def program_environment(spec: ClientSpec) -> dict[str, str]:
    """The program's environment: ours and the spec's, and, when it runs as another uid, a HOME
    and TMPDIR it can write (ours, /root, it cannot; JVMs, Go and Python want one). Under
    zkj-timewarp, where its launcher writes what the program reads from its clocks."""

    env = {**os.environ}
    if spec.program_uid is not None:
        env.update(HOME=PROGRAM_HOME, TMPDIR=PROGRAM_HOME)
    if spec.program_warp:
        env[OBSERVE_ENV] = WARP_SEEN
    out = {**env, **spec.env, **spec.program_env}
    if out.get("FAKETIME_DONT_FAKE_MONOTONIC") == "1":  # a Python program under libfaketime
        out["PYTHONPATH"] = os.pathsep.join(filter(None, [SLEEP_FIX_DIR, out.get("PYTHONPATH")]))
    return out


def clock_watch(spec: ClientSpec, ctx: RecordingContext, stop: threading.Event) -> None:
    """Only where a client clock fault is planned (the spec puts the program on a clock of its
    own): what the program's clocks read goes into the history as `clock` events, for the
    nemesis to see the fault land (client/clockwatch.py) - the launcher's page under
    zkj-timewarp, the clock probe with the program's environment under libfaketime."""

    def emit(value: dict) -> None:
        ctx.event("clock", value)

    faketime = spec.program_env.get("FAKETIME_TIMESTAMP_FILE")
    if spec.program_warp:
        ClockWatch(emit, stop, page=WARP_SEEN).start()
    elif faketime:
        probe = ProbeWatch(faketime, program_environment(spec), spec.program_uid)
        ClockWatch(emit, stop, probe=probe).start()


def start_proxy(hosts: str, out_dir: str, token: str = "") -> str:
    """Start a ZooKeeper wire proxy in this process (control port on every address, what it did
    appended to `<out_dir>/proxy-events.jsonl`) and return the connect string through it."""

    events = open(Path(out_dir) / "proxy-events.jsonl", "a", buffering=1)  # noqa: SIM115
    lock = threading.Lock()

    def note(e: dict) -> None:
        with lock:
            events.write(json.dumps(e) + "\n")

    proxy = ZkProxy(hosts.split(","), base_port=0, events=note).start()
    proxy.serve_control(token=token)
    return proxy.connect_string()


def prepare(spec_path: str) -> ClientSpec:
    """What every client process does first: read its spec, log to stderr, and start the wire
    proxy when the spec asks for one (the program / kazoo then reach the servers through it)."""
    spec = ClientSpec.load(spec_path)
    # Out of our environment before anything starts the program, which inherits the rest.
    token = os.environ.pop(PROXY_TOKEN_ENV, "")
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if spec.proxy:
        spec = dataclasses.replace(spec, hosts=start_proxy(spec.hosts, spec.out, token))
    return spec


def main(spec_path: str) -> int:
    spec = prepare(spec_path)
    if not spec.command:
        sys.stderr.write(
            "this client spec names no program; the in-process loop runs as "
            "`python3 -m zkjepsen.workloads.inprocess SPEC.json`\n"
        )
        return 2
    rec = Recorder(str(spec.history_file), spec.t0_ns, spec.client, spec.nclients)
    rec.process = next_process(spec.history_file, spec.client, spec.nclients)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    return run_program(spec, rec, stop)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
