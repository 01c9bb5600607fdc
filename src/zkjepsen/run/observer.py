"""Who holds the lock, as the service itself says, read from the runner's side during the run.

The clients report their own grants; a program under test could report grants it never got.
So, from the main phase to the teardown, a thread of the runner (never the program, which
cannot reach it) reads the service's view of the lock every `INTERVAL_S` through a host
session of its own and writes each reading to `observer.jsonl` in the run's folder, merged
into the history like the clients' files (records of process `observer`, type `event`; the
format and what checker/phantom.py makes of it are in that module's docstring):

- ZooKeeper: `sync` then the lock path's children (full paths) and each one's ephemeral owner
  (the session, hex): a grant is its node, owned by the client's session;
- etcd: every key but the resources', by its create revision: a grant is its token;
- Redis: every key but the resource and the token counters: a lock is held or not (a key a
  program chose carries no owner);
- PostgreSQL, several locks, or a workload without a lock: one `observer-start` saying why the
  grants are not checked (the verdict says so in a line).

A reading that fails (a partition, a server down) is recorded as failed and counts for nothing.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from kazoo.exceptions import NoNodeError

from zkjepsen.backends.registry import service
from zkjepsen.backends.session import close_quietly
from zkjepsen.history.jsonl import Appender
from zkjepsen.spec import TestSpec

INTERVAL_S = 0.05
OBSERVED_WORKLOADS = ("lock", "election", "rwlock")  # the workloads with a phantom part
IDENTITY = {"zookeeper": "node", "etcd": "token", "redis": "any"}
DEFAULT_LOCK_PATH = {"election": "/zkjepsen/master_election", "rwlock": "/zkjepsen/shared_lock"}


def zookeeper_holders(zk: Any, lock_path: str) -> dict[str, Any]:
    """The lock path's children (full paths) and their owners' session ids (hex), caught up
    with the leader first: a follower answers from what it has applied so far."""
    zk.sync(lock_path)
    try:
        children = zk.get_children(lock_path)
    except NoNodeError:
        return {"holders": [], "owners": {}}
    paths = [f"{lock_path.rstrip('/')}/{c}" for c in children]
    stats = [zk.exists_async(p) for p in paths]
    owners = {}
    for p, st in zip(paths, stats, strict=True):
        stat = st.get(timeout=2)
        if stat is not None:  # gone between the two reads: not a holder now
            owners[p] = hex(stat.ephemeralOwner)
    return {"holders": sorted(owners), "owners": owners}


class Observer:
    """`Observer(path, t0_ns, setup, read, session, stop)`: `read()` returns `{"holders":
    [...], ...}` (raises when the service does not answer). It reads until `stop` is set (the
    runner's own end of the run), then ends `session` itself; `join()` waits for that."""

    def __init__(
        self,
        path: Path,
        t0_ns: int,
        setup: dict[str, Any],
        read: Any,
        session: Any,
        stop: threading.Event,
    ) -> None:
        self.t0_ns, self.read, self.session, self.stop = t0_ns, read, session, stop
        # one write(2) per record, appended: the nemesis's records share the file
        self._out = Appender(path)
        self._write("observer-start", setup)
        self._thread = threading.Thread(target=self._run, name="observer", daemon=True)
        if read is None:
            self._out.close()
        else:
            self._thread.start()

    def _write(self, f: str, value: dict[str, Any]) -> None:
        now = time.monotonic_ns() - self.t0_ns
        rec = {"index": 0, "time": now, "process": "observer", "type": "event", "f": f}
        self._out.write({**rec, "value": value})

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                start = time.monotonic_ns() - self.t0_ns
                try:
                    value: dict[str, Any] = {"start": start, "ok": True, **self.read()}
                except Exception as e:  # noqa: BLE001 - a reading that failed counts for nothing
                    why = f"{type(e).__name__}: {e}"[:200]
                    value = {"start": start, "ok": False, "error": why}
                self._write("holders", value)
                self.stop.wait(INTERVAL_S)
        finally:
            try:
                self.session.stop()
            except Exception:  # noqa: BLE001 - on the way out
                pass
            close_quietly(self.session)
            self._out.close()

    def join(self, timeout: float = 10.0) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout)


def observe(
    spec: TestSpec, family: str, backend: Any, path: Path, t0_ns: int, stop: threading.Event
) -> Observer | None:
    """Start observing the run's lock (module docstring) until `stop` is set; None for a
    workload without one."""
    if spec.workload not in OBSERVED_WORKLOADS:
        return None
    label = service(family).label  # as the service names itself: "MariaDB"
    params = spec.params or {}
    lock_path = str(
        params.get("lock_path") or DEFAULT_LOCK_PATH.get(spec.workload, "/zkjepsen/lock")
    )
    why = None
    if family not in IDENTITY:
        why = f"zkjepsen does not read {label}'s view of who holds yet"
    elif int(params.get("locks") or 1) != 1:
        why = f"{params['locks']} locks: only a run with one lock is observed"
    if why is not None:
        return Observer(
            path, t0_ns, {"service": label, "identity": None, "why": why}, None, None, stop
        )
    timeout_s = max(float(spec.session_timeout_s), 4.0)
    ttl_s = float(params.get("lock_ttl_s") or spec.session_timeout_s)
    setup = {
        "service": label,
        "identity": IDENTITY[family],
        "lock_path": lock_path,
        "interval_ms": int(INTERVAL_S * 1000),
        # how long the service keeps a grant whose holder went silent: the session, the TTL
        "horizon_ms": int(1000 * (spec.session_timeout_s if family == "zookeeper" else ttl_s)),
    }
    session = backend.host_session(timeout_s)
    try:
        session.start(timeout=15)
    except Exception as e:  # noqa: BLE001 - the run goes on; its verdict says what it lacks
        close_quietly(session)
        why = f"the observer's own session did not start ({type(e).__name__})"
        failed = {"service": label, "identity": None, "why": why, "failed": True}
        return Observer(path, t0_ns, failed, None, None, stop)
    if family == "zookeeper":
        return Observer(
            path, t0_ns, setup, lambda: zookeeper_holders(session, lock_path), session, stop
        )
    return Observer(path, t0_ns, setup, lambda: {"holders": session.lock_holders()}, session, stop)
