"""Grants the service never saw: a client's `acquire ok` checked against the service's own view.

Every other lock checker judges the beliefs the clients report. A program under test
(`--client-cmd`) reports them itself: one that never opens a connection and answers every
`acquire` with a grant would be exclusive, live and fenced by its own account. So, during the
run, the runner's side (run/observer.py, never the program) reads who holds the lock on the
service and records each reading in the history as an event of process `observer`:

- `observer-start`, once: `{service, identity, lock_path, interval_ms, horizon_ms}`, or
  `{service, identity: null, why}` where the recipe has no service-side truth to read (a
  line in the verdict), with `failed: true` where the observer could not read (unknown);
- `holders`, every ~50 ms: `{start, ok, holders, owners?, error?}`; the reading happened
  between `start` and the record's `time`. `holders` are what identifies a grant on the
  service (`identity`): ZooKeeper `node` (the lock path's children, full paths; `owners`: node
  -> the hex session id that owns it), etcd `token` (the create revisions of the lock keys),
  Redis `any` (the lock keys exist or not: a key says nothing of whose grant it is).

A grant (an `acquire` completed `ok`) is believed until its client invokes `release` or
`acquire` again, reports a `client-error` or its session `LOST`/`CLOSED`, or its process ends in
`info`. It is a **phantom grant** (INVALID) when no successful reading within its belief showed
it, though at least two did that began after its `ok` and within `horizon_ms` of it (the session
or lease timeout: how long the service keeps a lock it granted even if its holder goes silent,
so a real grant is still there to be seen). A grant is "shown" by its node (and, when the
client told its session, that session owns the node, unless no session does: a persistent
node), its token, or, when the client named no
node/token (or a node that is no child of the lock path) or the service identifies none
(`any`), by any holder at all: that alone catches a program that fakes its lock. A grant whose
belief held fewer than two such readings cannot be checked; if no grant could, or there was
none, the part is `unknown`. A history without an
`observer-start` has no such part (`phantom_of` returns None): the run was not observed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from zkjepsen.checker import Result, Violation
from zkjepsen.history import NEMESIS, History, Op, fault_windows, faults_during

KIND = "phantom-grant"
OBSERVER = "observer"
INF = float("inf")
ENDS_BELIEF = frozenset({"client-error"})
LOST_STATES = frozenset({"LOST", "CLOSED"})
MIN_SAMPLES = 2
NO_GRANT = "no acquire succeeded: no grant to check against the service"


class Sample(NamedTuple):
    start: int
    end: int
    holders: frozenset[Any]
    owners: dict[str, Any]


class Grant(NamedTuple):
    client: Any
    time: int  # the acquire's ok
    end: float  # when the belief ended (INF: to the end of the history)
    node: Any
    token: Any
    sessions: frozenset[int]  # the client's sessions as it reported them (parsed)


class PhantomChecker:
    """The workload's `phantom` part: `phantom_of`, or nothing to say (valid, no details) for
    a history nobody observed (a run stored before the observer, a hand-made history)."""

    KINDS = (KIND,)

    def __init__(self, acquire: str = "acquire", release: str = "release") -> None:
        self.acquire, self.release = acquire, release

    def check(self, history: History | Iterable[Op]) -> Result:
        ops = history.ops if isinstance(history, History) else list(history)
        found = phantom_of(ops, self.acquire, self.release)
        if found is not None:
            return found
        if not _grants(ops, self.acquire, self.release):
            return Result("unknown", {"reason": NO_GRANT})
        return Result(True, {})


def phantom_of(
    history: History | Iterable[Op], acquire: str = "acquire", release: str = "release"
) -> Result | None:
    """The `phantom` part of a verdict (module docstring), or None when nobody observed."""
    ops = history.ops if isinstance(history, History) else list(history)
    start = next((op for op in ops if op.process == OBSERVER and op.f == "observer-start"), None)
    if start is None:
        return None
    setup = start.value if isinstance(start.value, dict) else {}
    service = str(setup.get("service") or "the service")
    identity = setup.get("identity")
    if identity not in ("node", "token", "any"):
        why = setup.get("why") or "it has no view of who holds"
        if setup.get("failed"):  # it could have read, but did not: nothing says the grants held
            return Result("unknown", {"reason": f"grants not checked against {service}: {why}"})
        return Result(True, {"note": f"grants not checked against {service}: {why}"})
    horizon = int(setup.get("horizon_ms") or 0) * 1_000_000
    samples = _samples(ops)
    grants = _grants(ops, acquire, release)
    if not grants:
        return Result("unknown", {"reason": NO_GRANT, "service": service})
    windows = fault_windows(ops)
    violations: list[Violation] = []
    checked = 0
    lock_path = str(setup.get("lock_path") or "").rstrip("/")
    for g in grants:
        within = [s for s in samples if s.start >= g.time and s.end <= g.end]
        early = [s for s in within if s.start <= g.time + horizon]
        if len(early) < MIN_SAMPLES:
            continue
        checked += 1
        if not any(_shows(s, g, identity, lock_path) for s in within):
            violations.append(_violation(g, early, identity, service, windows))
    details: dict[str, Any] = {
        "service": service,
        "identity": identity,
        "grants": len(grants),
        "checked": checked,
        "samples": len(samples),
    }
    if violations:
        details["note"] = (
            f"{len(violations)} of {checked} grants checked were never seen by {service}"
        )
        return Result(False, details, violations)
    if grants and not checked:
        details["reason"] = (
            f"no grant was believed across {MIN_SAMPLES} of {service}'s {len(samples)} "
            "readings of who holds: none could be checked against the service"
        )
        return Result("unknown", details)
    details["note"] = f"{checked} of {len(grants)} grants seen by {service} ({_BY[identity]})" + (
        f"; {len(grants) - checked} too short to check" if checked < len(grants) else ""
    )
    return Result(True, details)


_BY = {
    "node": "the lock node, and its session when the client named it",
    "token": "the lock key's create revision",
    "any": "a lock key existed; the service cannot say whose",
}


def _samples(ops: list[Op]) -> list[Sample]:
    out = []
    for op in ops:
        v = op.value
        if op.process != OBSERVER or op.f != "holders" or not isinstance(v, dict):
            continue
        start, holders = v.get("start"), v.get("holders")
        if not v.get("ok") or type(start) is not int or not isinstance(holders, list):
            continue  # a failed reading says nothing either way
        raw = v.get("owners")
        owners: dict[str, Any] = raw if isinstance(raw, dict) else {}
        hashable = frozenset(h for h in holders if isinstance(h, (str, int)))
        out.append(Sample(start, op.time, hashable, owners))
    return out


def _grants(ops: list[Op], acquire: str, release: str) -> list[Grant]:
    """Every `acquire ok` with when its client stopped believing."""
    pending: dict[Any, str] = {}  # process -> the f of its open invoke
    open_: dict[Any, list[Any]] = {}  # client -> [time, node, token, sessions] of its grant
    sessions: dict[Any, set[int]] = {}
    out: list[Grant] = []

    def end(c: Any, t: float) -> None:
        g = open_.pop(c, None)
        if g is not None:
            out.append(Grant(c, g[0], t, g[1], g[2], frozenset(g[3])))

    for op in ops:
        if op.process in (NEMESIS, OBSERVER):
            continue
        c = op.actor
        if op.type == "event":
            if op.f == "session" and isinstance(op.value, dict):
                sid = session_number(op.value.get("session_id"))
                if sid is not None:
                    sessions.setdefault(c, set()).add(sid)
            elif op.f in ENDS_BELIEF or (op.f == "session-state" and op.value in LOST_STATES):
                end(c, op.time)
            continue
        if op.type == "invoke":
            pending[op.process] = op.f
            if op.f in (acquire, release):
                end(c, op.time)
            continue
        f = pending.pop(op.process, None)
        if op.type == "info":
            end(c, op.time)  # the process is retired: its beliefs are unknown from here
        if f == acquire and op.type == "ok":
            v = op.value if isinstance(op.value, dict) else {}
            open_[c] = [op.time, v.get("node"), v.get("token"), set(sessions.get(c, ()))]
    for c in list(open_):
        end(c, INF)
    out.sort(key=lambda g: g.time)
    return out


def session_number(sid: Any) -> int | None:
    """A session id as a number: ZooKeeper's hex `0x…` (docs/client-protocol.md), a decimal
    string or an int; None for anything else (etcd's and Redis's names of a client)."""
    if isinstance(sid, int) and not isinstance(sid, bool):
        return sid
    if isinstance(sid, str):
        try:
            return int(sid, 16) if sid.lower().startswith("0x") else int(sid)
        except ValueError:
            return None
    return None


def _shows(s: Sample, g: Grant, identity: str, lock_path: str) -> bool:
    """Does this reading show this grant (module docstring)? A node deeper than the lock
    path's children (Curator's semaphore keeps its leases a level down) is matched as no node
    is: by any holder."""
    node = g.node if isinstance(g.node, str) else None
    if identity == "node" and node is not None and node.rpartition("/")[0] == lock_path:
        if node not in s.holders:
            return False
        owner = session_number(s.owners.get(node))
        # ephemeralOwner 0: a persistent node (kazoo's NonBlockingLease keeps its holder in
        # one), owned by no session, so the node alone shows the grant
        return not g.sessions or not owner or owner in g.sessions
    if identity == "token" and isinstance(g.token, int) and not isinstance(g.token, bool):
        return g.token in s.holders
    return bool(s.holders)  # no identity to match: any holder at all


def _violation(
    g: Grant, early: list[Sample], identity: str, service: str, windows: list[Any]
) -> Violation:
    end = None if g.end == INF else int(g.end)
    first = early[0]
    return Violation(
        KIND,
        (g.client,),
        g.time,
        end,
        tuple(faults_during(windows, g.time, end)),
        {
            "why": (
                f"client {g.client} was granted the lock at {g.time / 1e9:.3f} s "
                f"(node {g.node}, token {g.token}), but none of {service}'s readings in its "
                f"belief showed it ({identity})"
            ),
            "node": g.node,
            "token": g.token,
            "readings": len(early),
            "service_showed": sorted(first.holders, key=repr),
            "reading_window": [first.start, first.end],
        },
    )
