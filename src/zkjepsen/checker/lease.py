"""Tells a split that leases allow from a defect of the lock: the lock verdict's oracle.

A lock built on a lease (a ZooKeeper session, an etcd lease, a Redis key's TTL) cannot stop two
clients believing at once when the earlier holder stops hearing from the service for longer
than the lease: the service lets the lease go and grants the lock again, while the frozen or
cut-off holder cannot know until it hears back. Only a fence makes that safe. Every other split
is a defect of the lock under test. So each belief overlap (two holds by different clients, the
earlier one granted first) is classified:

- **lease** (inherent to leases): a fault that silences its target (power rule `silence`: a
  pause, a cut, packet loss, a proxy holding the session) landed on the earlier holder's client,
  or a fault on servers landed that the holder's own records show cut it off
  (`server_silences`: its SUSPENDED, LOST or CLOSED, a request of it unanswered; a holder whose
  session the servers could not keep alive is in the same position as one cut off), and began
  before the later hold was granted; the later grant came while that silence lasted,
  or, for a silence of at least T, within one T after it ended (a holder learns its lease is
  gone at its next exchange with the service: a ZooKeeper ping, an etcd keepalive, a Redis
  lease check, each within T); and by
  the grant the service could have let the lease go: at least T had passed since the lease was
  last renewed. When that was is not in the history; it was no earlier than the acquire's
  invoke (the service granted after it), and, for a holder that renews (a ZooKeeper ping, an
  etcd keepalive, a refresh thread), no earlier than one renewal period before the silence
  began: the longest gap between two renewals its program declared (`renew_ms` of its
  `session` event: etcd's Go client renews up to T/3 + 0.5 s apart, its keepalive loop waking
  every 500 ms), else T/3 (a ZooKeeper client pings after T/3 idle). So the silence is counted
  from the later of the two: a Redis key set with a TTL and never refreshed can run out 0.2 s
  after a pause began when its SET was 1.8 s before, and on a loaded machine the acquire's ok
  is recorded well after the SET. A silence begins when its fault went in at its target
  (`FaultSpan.silent_from`: its end record's `went_in_ns`), not at its start record, written
  before the apply: counted from there, a pause that took 2.2 s to apply would excuse a
  split inside those seconds.
- **defect** (beyond a lease's nature): any other split, unless another fault's nature explains
  it (checker/nature.py: a server's clock run ahead, a server that lost its state; the one
  classification, which calls this). A silence shorter than T, a grant long after the holder
  could have heard, no fault at all, a fault on someone else.
- **unjudged**: a silencing fault landed on the earlier holder before the grant, but no lease
  length is known for it (no `session` event saying its timeout, none in the fault's record,
  no run setting).

A `lease` split stays one only while the fault explains the earlier holder's belief: one lease
after the heal, never after its own LOST (checker/nature.py `past_excuse`, which the one
classification applies to what this returns).

T, per client: the fault's own record of it (client faults record the session timeout they
scaled by), else the client's latest `session` event before the fault (`timeout_ms`: the
negotiated session or lease), else the run's setting. Pure: a function of the history's records
alone; a fault counts only if it landed (faultkinds.landing).
"""

from __future__ import annotations

from typing import Any

from zkjepsen.faultkinds import KINDS, landing, power_rule
from zkjepsen.faultkinds.landing import Landing
from zkjepsen.history import NEMESIS, Op

S = 1_000_000_000
LEASE, DEFECT, UNJUDGED = "lease", "defect", "unjudged"
# A fault's end record: when it went in at its target (nemesis/schedule.py writes it)
WENT_IN = "went_in_ns"
# client -> its `session` events in time order: (when, its lease T in s, the longest gap
# between two renewals it declared in s, None when it declared none: `renew_ms`)
Sessions = dict[Any, list[tuple[int, float, float | None]]]


class FaultSpan:
    """One executed fault from its nemesis records: start paired with end by fault id.
    A plain class (no dataclass): `check --model lock` imports this at every start."""

    __slots__ = (
        "kind",
        "fault_id",
        "start",
        "end",
        "targets",
        "start_value",
        "end_value",
        "landing",
        "went_in",
    )

    def __init__(
        self, kind: str, fault_id: Any, start: int, targets: list[Any], start_value: dict
    ) -> None:
        self.kind, self.fault_id, self.start, self.targets = kind, fault_id, start, targets
        self.end: int | None = None
        self.start_value: dict[str, Any] = start_value
        self.end_value: dict[str, Any] = {}
        self.landing = Landing(False, "not judged")
        # When it went in at its target (`went_in_ns` of its end record: the nemesis's
        # arming.went_in, its apply's return or its effect seen before that); its start record
        # for a history without it. A silence begins here, not at the start record, which is
        # written before the apply (a pause took 2.2 s to apply under load).
        self.went_in = start

    def silent_from(self) -> int:
        """When its silence began: when it went in (never before its start, nor after its end)."""
        end = self.end if self.end is not None else self.went_in
        return max(self.start, min(self.went_in, end))


def fault_spans(ops: list[Op], last: int) -> list[FaultSpan]:
    """Every executed fault from the nemesis ops, start paired with end by fault id (a re-armed
    trigger's attempts share an id and follow each other), and whether it landed (from its two
    records: faultkinds.landing); one never ended ends at `last` (and was never seen to land)."""
    open_: dict[Any, FaultSpan] = {}
    out: list[FaultSpan] = []
    for op in ops:
        if op.process != NEMESIS or op.type == "invoke" or power_rule(op.f) is None:
            continue
        v = op.value if isinstance(op.value, dict) else {}
        if v.get("phase") == "start":
            f = FaultSpan(op.f, v.get("fault_id"), op.time, list(v.get("targets") or ()), v)
            open_[f.fault_id] = f
            out.append(f)
        elif v.get("phase") == "end" and v.get("fault_id") in open_:
            f = open_.pop(v.get("fault_id"))
            f.end, f.end_value = op.time, v
            went = v.get(WENT_IN)
            if isinstance(went, int) and not isinstance(went, bool):
                f.went_in = went
    for f in out:
        if f.end is None:
            f.end = max(last, f.start)
        f.landing = landing(f.kind, f.start_value, f.end_value)
    return out


def client_of(target: Any) -> Any:
    """The client a nemesis target names (`c3` -> 3); None for a server."""
    if isinstance(target, str) and target[:1] == "c" and target[1:].isdigit():
        return int(target[1:])
    return None


def lease_s(
    fault: FaultSpan,
    client: Any,
    sessions: Sessions,
    default_s: float | None,
) -> float | None:
    """The lease (session timeout) `client` had to outlast under `fault`: the fault's own record
    of it (a client fault aimed at that client alone), else the client's latest negotiated one
    before the fault, else `default_s` (the run's setting; None when unknown)."""
    for v in (fault.end_value, fault.start_value):
        d = v["detail"] if isinstance(v.get("detail"), dict) else {}
        if d.get("session_timeout_s") and [client] == [client_of(t) for t in fault.targets]:
            return float(d["session_timeout_s"])
    seen = [s for t, s, _ in sessions.get(client, ()) if t <= fault.start]
    return seen[-1] if seen else default_s


def renewal_s(fault: FaultSpan, client: Any, sessions: Sessions, t: float) -> float:
    """The longest gap between two renewals of `client`'s lease of T = `t` under `fault`: what
    its latest session before the fault declared (`renew_ms`: etcd's Go client renews up to
    T/3 + 0.5 s apart), else a third of the lease (a ZooKeeper client pings when idle T/3)."""
    seen = [r for at, _, r in sessions.get(client, ()) if at <= fault.start]
    declared = seen[-1] if seen else None
    return declared if declared is not None else t / 3


def silencing(spans: list[FaultSpan], went_in: Any = None) -> dict[Any, list[FaultSpan]]:
    """client -> the landed faults that silenced it (power rule `silence`, aimed at it);
    `went_in(f)`, when given, says whether f acted on its target instead of its landing."""
    out: dict[Any, list[FaultSpan]] = {}
    for f in spans:
        rule = power_rule(f.kind)
        acted = went_in(f) if went_in is not None else f.landing.landed
        if rule is None or rule.landed != "silence" or not acted:
            continue
        for c in {client_of(t) for t in f.targets} - {None}:
            out.setdefault(c, []).append(f)
    return out


def server_silences(
    spans: list[FaultSpan],
    dark: dict[Any, list[int]],
    back: dict[Any, list[int]],
    lease: Any,
    told: dict[Any, list[int]] | None = None,
    went_in: Any = None,
) -> dict[Any, list[FaultSpan]]:
    """client -> the landed faults on servers that silenced it, as seen at the client: a fault
    on servers (not a clock's: a clock ahead is its own nature) silences a client only when the
    client's own records show it cut off from the service in the fault's window or within a
    lease T after it (`dark`: its session-state SUSPENDED, LOST or CLOSED, or a request of it
    that went unanswered, `info`, invoked then), never because the fault was sent or named a
    server; and not when they show its session outlived the silence: back (`back`: CONNECTED or
    RECONNECTED) after its first sign with no LOST or CLOSED (`told`) in the window, on the same
    session, so the service never let its lease go (a split then is the lock's: a ZooKeeper
    waiter granted beside a holder whose leader was killed and who reconnected). Its silence
    runs from the fault's start to the later of the heal and its last sign: each one a
    FaultSpan with that end, for `lease_nature` and `past_excuse` as a client's own silence
    is. `lease(f, client)`: its T (None: unknown)."""
    out: dict[Any, list[FaultSpan]] = {}
    for f in spans:
        k = KINDS.get(f.kind)
        on_servers = bool(f.targets) and all(client_of(t) is None for t in f.targets)
        acted = went_in(f) if went_in is not None else f.landing.landed
        if not on_servers or not acted or (k is not None and k.family == "clock"):
            continue
        heal = f.end if f.end is not None else f.start
        for c, signs in dark.items():
            t = lease(f, c)
            if t is None:
                continue
            # its signs are evidence from the start record on (a kill may act before its
            # apply returns); its silence begins when the fault went in (g.went_in)
            seen = [x for x in signs if f.start <= x <= heal + t * S]
            if not seen:
                continue
            lost = any(f.start <= x <= heal + t * S for x in (told or {}).get(c, ()))
            if not lost and any(x >= seen[0] for x in back.get(c, ())):
                continue  # its session outlived the silence: the service kept its lease
            g = FaultSpan(f.kind, f.fault_id, f.start, f.targets, f.start_value)
            g.end = max(heal, seen[-1])
            g.end_value, g.landing, g.went_in = f.end_value, f.landing, f.went_in
            out.setdefault(c, []).append(g)
    return out


def lease_nature(
    earlier: Any,
    later: Any,
    silenced: dict[Any, list[FaultSpan]],
    sessions: Sessions,
    default_s: float | None,
) -> tuple[str, str, FaultSpan | None]:
    """(LEASE | DEFECT | UNJUDGED, why in a phrase, the silencing fault) for a split between two
    holds (objects with `client`, `start`: when granted): `earlier` granted first (module
    docstring). The fault: of a LEASE, the silence that explains it; of a DEFECT, a silence
    past its lease that ended more than a lease before the grant (what the holder believed
    after it is checker/nature.py's to judge, by what it did); else None. The faults' other
    natures: checker/nature.py, which calls this."""
    grant = later.start
    unjudged = ""
    thawed = ""  # a silence past its lease that ended more than a lease before the grant
    thawed_by: FaultSpan | None = None
    for f in silenced.get(earlier.client, ()):
        began = f.silent_from()  # when it went in, not its start record (FaultSpan)
        end = f.end if f.end is not None else began
        if began > grant:
            continue
        t = lease_s(f, earlier.client, sessions, default_s)
        if t is None:
            unjudged = f"{f.kind} on client {earlier.client}, whose lease length is unknown"
            continue
        # Its lease was last renewed no earlier than its acquire was asked, nor than one
        # renewal period (declared, else T/3) before the silence began (module docstring).
        every = renewal_s(f, earlier.client, sessions, t)
        renewed = max(began - every * S, getattr(earlier, "asked", earlier.start))
        silent = grant - renewed
        # Frozen at the grant, or frozen past its lease and thawed less than a lease before.
        frozen = grant <= end or (end - began >= t * S and grant <= end + t * S)
        if end - began >= t * S and grant > end + t * S:
            thawed = (
                f"client {earlier.client} was silenced past its lease by {f.kind} "
                f"({(end - began) / S:.2f}s), but its silence ended {(grant - end) / S:.2f}s "
                f"before client {later.client} was granted, more than a lease ({t:g}s) before"
            )
            thawed_by = f
        if silent >= t * S and frozen:
            return (
                LEASE,
                (
                    f"client {earlier.client} silenced by {f.kind} ({(end - began) / S:.2f}s) "
                    f"{silent / S:.2f}s after its lease's last renewal (lease {t:g}s) when client "
                    f"{later.client} was granted"
                ),
                f,
            )
    if unjudged:
        return UNJUDGED, unjudged, None
    if thawed:  # said as it was: it was frozen past its lease, only not at the grant
        return DEFECT, thawed, thawed_by
    return (
        DEFECT,
        (
            f"client {earlier.client} was not frozen or cut off past its lease, nor did a fault "
            f"end its lease on the server, when client {later.client} was granted"
        ),
        None,
    )
