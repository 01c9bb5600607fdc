"""Entry point of one in-process client (runs inside its own container): `python3 -m
zkjepsen.workloads.inprocess SPEC.json`. No program under test: this process opens its own
kazoo session and the workload's loop drives the recipe object directly. The client pool runs
it for a spec without a `command` (client/main.py runs the ones with a program)."""

from __future__ import annotations

import logging
import random
import signal
import sys
import threading
from pathlib import Path

from zkjepsen.client.main import await_start, next_process, prepare
from zkjepsen.client.recorder import Recorder
from zkjepsen.client.spec import ClientSpec
from zkjepsen.workloads.context import ClientContext


def main_in_process(spec: ClientSpec) -> int:
    from kazoo.client import KazooClient
    from kazoo.retry import KazooRetry

    from zkjepsen.workloads import get_workload

    n, nclients = spec.client, spec.nclients
    out = spec.history_file
    process = next_process(out, n, nclients)
    rec = Recorder(str(out), spec.t0_ns, n, nclients)
    rec.process = process
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # Retries stay bounded so an op under a partition ends (as info) instead of hanging forever.
    retry = {"max_tries": 3, "delay": 0.1, "backoff": 2, "max_delay": 1.0}
    zk = KazooClient(
        hosts=spec.hosts,
        timeout=spec.session_timeout_s,
        connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
        command_retry=retry,
    )
    ctx = ClientContext(
        client=n,
        nclients=nclients,
        zk=zk,
        hosts=spec.hosts,
        recipe=spec.recipe,
        params=spec.params,
        recorder=rec,
        deadline=spec.deadline_monotonic,
        rng=random.Random(f"{spec.seed}:{n}:{process}"),
        stop_event=stop,
    )

    def on_state(state) -> None:
        ctx.event("session-state", str(state))

    zk.add_listener(on_state)
    try:
        zk.start(timeout=spec.connect_timeout_s)
    except Exception as e:  # noqa: BLE001 - recorded, then the process ends
        ctx.event("client-error", f"could not connect: {e}")
        return 3
    session_id, _ = zk.client_id
    ctx.event(
        "session",
        {"session_id": f"0x{session_id:x}", "timeout_ms": getattr(zk, "_session_timeout", None)},
    )
    if spec.start_file and not await_start(Path(spec.start_file), ctx, stop):
        ctx.event("client-error", "the runner never released the start barrier")
        return 5
    workload = get_workload(spec.workload)
    try:
        workload.run_client(ctx)
    except Exception as e:  # noqa: BLE001 - the history must say why a client stopped
        ctx.event("client-error", f"{type(e).__name__}: {e}")
        logging.exception("workload loop failed")
        return 4
    finally:
        try:
            zk.stop()
            zk.close()
        except Exception:  # noqa: BLE001
            pass
        rec.close()
    return 0


def main(spec_path: str) -> int:
    return main_in_process(prepare(spec_path))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
