"""The one classification of a lock's violation: the fault's nature, or a defect of this lock.

A lock run under faults breaks in ways no lock can prevent; a hunt that stops on them, or a
verdict that counts them as the lock's, blames the lock for the fault. Read from the history
alone (the nemesis's fault records, those that acted on their targets: `went_in`; the
clients' ops), each violation gets one nature and, for a fault's, the fault that caused it:

- **lease** (checker/lease.py): the earlier holder was frozen or cut off past its lease when the
  later one was granted (a fault aimed at it, or one on servers its own records show cut it
  off: lease.py `server_silences`); or, with no fault needed, it held past its own lease and
  its lock told it so (`own_lease`: the validity its acquire's record gives, or its
  `holding()`'s no, ran out before the later grant, and it made no claim while the later
  held). For a belief overlap.
- **server-clock**: a server's clock ran ahead while the earlier holder's lease lived (a lease
  or session expires by the server's clock: a leader or master whose clock runs k x fast, or
  steps forward, lets it go early). The fault (clock-rate-*, clock-bump, clock-strobe, aimed at
  a server) landed; the later grant came in its window or within a lease after it; and by the
  server's clock a whole lease had passed since the lease could last have been set: from the
  acquire's invoke, its fast time counted k x, a forward step (a bump ahead at its start, a bump
  behind at its end, a strobe in its window) counted whole. A holder that renews does so every
  third of a lease, so a rate counts only from 3 x, and a step only as offset + min(the time
  since the acquire, T/3) >= T. For a belief overlap and a phantom grant.
- **state-lost**: a server that lost its state (killed and restarted empty, rolled, replaced,
  its power or disk lost): such a fault landed between the earlier grant's asking and the later
  grant, and the history shows the service forgot: a token granted after the fault's start no
  greater than one granted before it on the same lock (the fence counter restarted; the lock
  key went with it). A token granted twice across such a fault is that evidence itself. For a
  belief overlap, a reused token, a backwards write, a phantom grant.
- **cut-update**: a holder's multi-step update cut by a fault, the half-done state read by a
  later holder: the writer was killed (a fault that kills clients, aimed at it) after its hold
  began and before the read, or it stopped mid-update (its hold ended, not by its own release,
  or it gave the hold up: client/loop.py's `abandon` event, a holder that no longer believes it
  holds, as a careful one does at SUSPENDED or LOST, checked before each write, so it let go
  between its last write and the event; or a write of the update failed or went unanswered)
  while a landed fault was in flight (or within a lease after it). No lock makes a killed client's
  update atomic; a ready file or a transaction does. When the writer's and the reader's holds
  overlap, the read follows from that split and takes the split's nature. For a half-done read.
- **defect**: anything else: the lock under test is wrong. And a split a fault's nature began
  is a defect once the earlier holder believes past what the fault explains (`past_excuse`,
  the one rule of how long an excuse lasts): a fault excuses a holder's belief while it is
  frozen or cut off and for one lease T after that silence ends (the heal; a later silence of
  it that begins within that time carries the excuse on), the time a holder that renews every
  third of a lease has to hear that its lease is gone (a ZooKeeper ping, an etcd keepalive
  answered TTL 0, a Redis lease check), and never after its own history says it was told so
  (a `session-state` LOST or CLOSED of its client after its grant: every nature; the
  evidence then is its first claim after the LOST, or the second when it was frozen between
  the claim before and this one and told at its thaw). What the
  history shows of a belief at an instant is what the holder did: its loop asks `holding()`
  before each write (a counter's add, the ready node's re-creation) and invokes it only on a
  yes, so a write invoked while the later holder held, after the excuse ended, is the
  evidence (lock_observe.CLAIMS); the belief's recorded end (its release invoke) is not, as a
  careful holder that stopped believing still sleeps out its hold before it next asks. A
  holder that never acts past the excuse keeps it.
- **unjudged**: a silence landed on the earlier holder but no lease length is known (lease.py).

T, per client: as lease.py (the fault's record, the client's negotiated session, the run's).
Pure: a function of the history's records (`Context`) and the violations.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from zkjepsen.checker.lease import (
    DEFECT,
    LEASE,
    UNJUDGED,
    FaultSpan,
    Sessions,
    client_of,
    fault_spans,
    lease_nature,
    lease_s,
    server_silences,
    silencing,
)
from zkjepsen.faultkinds import KINDS, landing
from zkjepsen.faultkinds.landing import stopped_servers

S = 1_000_000_000
CLOCK, STATE, CUT = "server-clock", "state-lost", "cut-update"
NATURES = (LEASE, CLOCK, STATE, CUT)  # the faults' natures, in the order the words list them
# How each reads in a verdict's line ("1 a server that lost its state").
WORDS = {
    LEASE: "a lease's (a holder frozen, cut off or holding past it)",
    CLOCK: "a server's clock run ahead",
    STATE: "a server that lost its state",
    CUT: "a holder's update cut by a fault",
}
# The observers (faultkinds) of the kinds that restart servers or take their data: killed,
# rolled, replaced, powered off, corrupted, a Redlock master restarted.
RESTARTS = {"killed", "roll", "members", "power-loss", "corrupted", "dropped+restarted"}
RENEWALS = 3  # a holder that renews does so every third of a lease (lease.py)


def _detail(f: FaultSpan) -> dict[str, Any]:
    for v in (f.end_value, f.start_value):
        if isinstance(v.get("detail"), dict):
            return v["detail"]
    return {}


# What a fault's detail says of its moment, not of its target: the power line's reasons to
# count an executed fault missed (faultkinds/landing.py), which say nothing of what it did.
MOMENT = ("holding_when_hit", "held_on_master")


def went_in(f: FaultSpan) -> bool:
    """Did `f` act on its target, as its own observation there says (the killed client seen
    gone, the paused one seen frozen), whatever the power line makes of it: a fault whose
    trigger's state had ended when it went in (`landed: false`), or whose holder had let go,
    is no opportunity (missed), but it still killed, froze or cut what it hit, and a
    violation it caused is its nature (a kill-client re-armed after its trigger's acquire
    completed still killed the holder mid-update)."""
    if f.landing.landed:
        return True
    end = {k: v for k, v in f.end_value.items() if k != "landed"}
    start = dict(f.start_value)
    for v in (start, end):
        if isinstance(v.get("detail"), dict):
            v["detail"] = {k: x for k, x in v["detail"].items() if k not in MOMENT}
    return landing(f.kind, start, end).landed


def kills_of(spans: list[FaultSpan]) -> dict[Any, list[FaultSpan]]:
    """client -> the faults that killed its process: a kind that kills clients, aimed at it,
    that went in (`went_in`). One answer for every checker that asks when a client died (the
    cut update here, a dead holder's hold in liveness.py): each died at `f.silent_from()`, when
    its end record says the kill went in (its start record in an older history), as the lock
    part ends a killed client's beliefs (lock_observe `_end_beliefs_at_kill`)."""
    out: dict[Any, list[FaultSpan]] = {}
    for f in spans:
        k = KINDS.get(f.kind)
        if k is None or not k.kills_clients or not went_in(f):
            continue
        for c in {client_of(t) for t in f.targets} - {None}:
            out.setdefault(c, []).append(f)
    return out


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _on_servers(f: FaultSpan) -> bool:
    return bool(f.targets) and all(client_of(t) is None for t in f.targets)


class Context:
    """What the classification reads of a history: the landed faults by what they do, each
    client's negotiated leases, the grants (for their tokens), the release invokes."""

    def __init__(
        self,
        nemesis: list[Any],
        sessions: Sessions,
        default_s: float | None,
        last: int,
        holds: list[Any] = (),  # type: ignore[assignment]
        releases: dict[Any, set[int]] | None = None,
        abandons: dict[Any, list[int]] | None = None,
        acts: dict[Any, list[int]] | None = None,
        told: dict[Any, list[int]] | None = None,
        unsure: dict[Any, list[tuple[int, int]]] | None = None,
        dark: dict[Any, list[int]] | None = None,
        back: dict[Any, list[int]] | None = None,
    ) -> None:
        spans = fault_spans(nemesis, last)
        self.sessions, self.default_s = sessions, default_s
        # client -> the faults that silenced it: aimed at it, or on servers when its own
        # records show it cut off then (lease.py `server_silences`: its SUSPENDED, LOST or
        # CLOSED, a request of it unanswered; `dark`, `back`: lock_observe's)
        self.silenced = silencing(spans, went_in)
        by_servers = server_silences(
            spans,
            {c: sorted(ts) for c, ts in (dark or {}).items()},
            {c: sorted(ts) for c, ts in (back or {}).items()},
            lambda f, c: lease_s(f, c, sessions, default_s),
            told,
            went_in,
        )
        for c, fs in by_servers.items():
            self.silenced[c] = sorted([*self.silenced.get(c, ()), *fs], key=lambda f: f.start)
        # client -> its signs of trouble with the service (lock_observe's `dark`)
        self.dark = {c: sorted(ts) for c, ts in (dark or {}).items()}
        # what the faults did at their targets, not what the power line counts (`went_in`)
        landed = [f for f in spans if went_in(f)]
        kinds = {f: KINDS.get(f.kind) for f in landed}
        self.clocks = [f for f, k in kinds.items() if k and k.family == "clock" and _on_servers(f)]
        # A restart is any fault that stopped a server, landed or not: its own effect may have
        # missed (a disk fault whose damage never went in) while the stop and boot happened.
        restarting = {f for f, k in kinds.items() if k and k.observer in RESTARTS}
        self.restarts = [
            f
            for f in spans
            if _on_servers(f) and (f in restarting or stopped_servers(f.start_value, f.end_value))
        ]
        self.kills = kills_of(landed)
        self.landed = landed
        self.grants = sorted(
            (h for h in holds if not getattr(h, "maybe", False)), key=lambda h: h.start
        )
        self.releases = releases or {}  # client -> its release invokes' times
        self.abandons = abandons or {}  # client -> its `abandon` events' times
        # client -> its claims' invokes, and its session-state LOST/CLOSED events' times
        # (lock_observe), each in time order (a history's records may come a little out of it)
        self.acts = {c: sorted(ts) for c, ts in (acts or {}).items()}
        self.told = {c: sorted(ts) for c, ts in (told or {}).items()}
        # client -> the landed freezes of it (a kind seen to land as `frozen`: pause-client)
        self.frozen: dict[Any, list[FaultSpan]] = {}
        for f, k in kinds.items():
            for c in (
                {client_of(t) for t in f.targets} - {None} if k and k.observer == "frozen" else ()
            ):
                self.frozen.setdefault(c, []).append(f)
        # client -> (invoke, completion) of its writes that failed or went unanswered
        self.unsure = unsure or {}

    def lease(self, f: FaultSpan, client: Any) -> float | None:
        return lease_s(f, client, self.sessions, self.default_s)

    def forgot(self, f: FaultSpan, key: Any = None) -> bool:
        """Did the service forget across `f`: a token granted after its start no greater than
        one granted before it (on `key`'s lock, or any)?"""
        before = [
            t
            for h in self.grants
            if h.start < f.start and (key is None or h.key == key)
            if (t := _number(h.token)) is not None
        ]
        if not before:
            return False
        top = max(before)
        return any(
            (t := _number(h.token)) is not None and t <= top
            for h in self.grants
            if h.start >= f.start and (key is None or h.key == key)
        )


def clock_ahead(f: FaultSpan, asked: int, grant: int, t: float) -> str:
    """Why `f` (a server's clock fault) could have run a lease set at `asked` out by `grant`
    ('' when it could not): module docstring."""
    d, lease = _detail(f), t * S
    end = f.end if f.end is not None else f.start
    if f.start > grant or grant > end + lease:
        return ""
    rate, offset = _number(d.get("rate")), _number(d.get("offset_s"))
    if rate is not None and rate >= RENEWALS:
        fast = max(0, min(grant, end) - max(asked, f.start))
        if fast and (grant - asked) + (rate - 1) * fast >= lease:
            return f"x{rate:g} for {fast / S:.2f}s of its lease"
    if offset:
        # a bump ahead steps at its start, one behind steps ahead at its end; a strobe (its
        # record has a period) flips ahead again and again in its window
        step = end if offset < 0 else f.start
        if d.get("period_s") is not None and offset > 0:
            step = max(f.start, asked)
        age = min(step - asked, lease / RENEWALS)
        if asked <= step <= grant and abs(offset) * S + age >= lease:
            return f"stepped ahead {abs(offset):g}s"
    return ""


def server_clock(ctx: Context, client: Any, asked: int, grant: int) -> tuple[str, FaultSpan] | None:
    for f in ctx.clocks:
        t = ctx.lease(f, client)
        why = clock_ahead(f, asked, grant, t) if t else ""
        if why:
            return why, f
    return None


def state_lost(ctx: Context, lo: int, hi: int, key: Any = None) -> FaultSpan | None:
    """A fault that restarts servers, under way at some time in [lo, hi] (started by `hi`,
    not over before `lo`: a restart's start is recorded before the server goes down, so a grant
    13 ms after a kill's start came from the state it then lost), across which the service
    forgot: its tokens went back (`ctx.forgot`)."""
    return next(
        (
            f
            for f in ctx.restarts
            if f.start <= hi and lo < (f.end if f.end is not None else f.start)
            if ctx.forgot(f, key)
        ),
        None,
    )


def _fault(f: FaultSpan) -> dict[str, Any]:
    return {"kind": f.kind, "fault_id": f.fault_id, "targets": list(f.targets)}


def past_excuse(ctx: Context, earlier: Any, later: Any, silence: FaultSpan | None) -> str:
    """Why `earlier`'s belief went on past what a fault's nature excuses, while `later` held
    ('' when it did not): its first claim (a write invoked after `holding()` said yes) in the
    two holds' overlap that it asked `holding()` for after its client was told LOST (or
    CLOSED) since its grant (the first claim after the LOST, or the second when a freeze may
    have come between its question and its write, below), or, for a lease's
    nature (`silence`: the fault that froze or cut it off), more than one lease after that
    silence ended (a later silence of it that began within that lease carries the excuse on).
    The one rule of how long an excuse lasts (module docstring)."""
    client = earlier.client
    acts = ctx.acts.get(client)
    if not acts:
        return ""
    lo = max(earlier.start, later.start)
    hi = min(earlier.end, later.end)
    told = ctx.told.get(client, ())
    told_at = next((t for t in told[bisect_right(told, earlier.start) :] if t < hi), None)
    until, healed, t = float("inf"), 0, 0.0
    if silence is not None:
        t = ctx.lease(silence, client) or 0.0
        healed = silence.end if silence.end is not None else silence.silent_from()
        until = healed + t * S
        for g in sorted(ctx.silenced.get(client, ()), key=lambda g: g.silent_from()):
            end = g.end if g.end is not None else g.silent_from()
            if silence.silent_from() <= g.silent_from() <= until and end + t * S > until:
                healed, until = end, end + t * S
    # After its LOST, the evidence is a claim whose `holding()` came after it. The loop asks
    # right before each claim, so the first claim after the LOST, unless the holder may have
    # been frozen between its question and its write: a freeze of it began after its claim
    # before and by the LOST. Told the moment it thaws, it writes a millisecond later
    # (etcd-mutex-go under pause-client: LOST, and its write 0.9 ms after, both before the
    # freeze's end was even recorded). Then the claim after that one.
    i = bisect_right(acts, told_at) if told_at is not None else len(acts)
    if i < len(acts) and told_at is not None:
        prev = acts[i - 1] if i else earlier.start
        if any(prev < g.silent_from() <= told_at for g in ctx.frozen.get(client, ())):
            i += 1
    knew = acts[i] if i < len(acts) else float("inf")
    for act in acts[bisect_right(acts, lo) :]:
        if act >= hi:
            break
        if told_at is not None and act >= knew:
            return (
                f"but client {client} still claimed the lock (a write at {act / S:.2f}s) "
                f"{(act - told_at) / S:.2f}s after its own session-state said it was lost, "
                f"while client {later.client} held"
            )
        if act > until:
            return (
                f"but client {client} still claimed the lock (a write at {act / S:.2f}s) "
                f"{(act - healed) / S:.2f}s after its silence ended, past the lease ({t:g}s) "
                f"it had to learn in, while client {later.client} held"
            )
    return ""


def first_claim(ctx: Context, earlier: Any, later: Any, since: float) -> int | None:
    """`earlier`'s first claim (a write invoked after `holding()` said yes: lock_observe's
    CLAIMS) after `since` and before the two holds' overlap ends; None when it made none. The
    evidence of a belief is what the holder did (`told_and_let_be`, `own_lease`)."""
    acts = ctx.acts.get(earlier.client, ())
    hi = min(earlier.end, later.end)
    return next((a for a in acts[bisect_right(acts, since) :] if a < hi), None)


def told_and_let_be(ctx: Context, earlier: Any, later: Any, silence: FaultSpan) -> str:
    """Why `earlier`'s belief had ended before `later` was granted although its recorded hold
    had not ('' when it had not): silenced past its lease (`silence`, which ended more than a
    lease before the grant), its client was then told its session was lost (its own
    session-state LOST or CLOSED, after the silence began and before the grant), and it made
    no claim from then to the end of the two holds' overlap. A careful holder's belief ends
    where it is told (lock_observe's careful beliefs); its recorded hold outlasts that only
    while it sleeps in its hold and has not asked (a hold that outlasts a silence: run/hunt.py
    `run_params`), and a stale belief it never acts on is no split of the lock. The evidence
    of a belief is what the holder did, never its recorded end: `past_excuse`'s rule, and
    `own_lease`'s. Without that word from its session (a program that reports none) the
    recorded hold stands, as `lease_nature` judged it."""
    client = earlier.client
    told = ctx.told.get(client, ())
    told_at = next(
        (t for t in told[bisect_right(told, silence.silent_from()) :] if t < later.start), None
    )
    if told_at is None or first_claim(ctx, earlier, later, told_at) is not None:
        return ""
    return (
        f"but client {client} was told its session was lost at {told_at / S:.2f}s, before "
        f"client {later.client} was granted, and made no claim after it"
    )


def split_nature(ctx: Context, earlier: Any, later: Any) -> tuple[str, str, dict | None]:
    """(nature, why, the fault) of a belief overlap: `earlier` granted first (objects with
    `client`, `start`, `end`, `asked`, `key`, `token`). A fault's nature lasts only as long as
    `past_excuse` says: past it, the split is a defect, and the why says both."""
    nature, why, f = lease_nature(earlier, later, ctx.silenced, ctx.sessions, ctx.default_s)
    if nature == LEASE:
        past = past_excuse(ctx, earlier, later, f)
        if past:
            return DEFECT, f"{why}; {past}", None
        return nature, why, _fault(f) if f else None
    if nature == DEFECT and f is not None:
        told = told_and_let_be(ctx, earlier, later, f)
        if told:
            return LEASE, f"{why}; {told}", _fault(f)
    asked = getattr(earlier, "asked", earlier.start)
    clock = server_clock(ctx, earlier.client, asked, later.start)
    if clock:
        why = (
            f"{clock[1].kind} on {', '.join(map(str, clock[1].targets))} ({clock[0]}): client "
            f"{earlier.client}'s lease ran out by the server's clock before client "
            f"{later.client} was granted"
        )
        past = past_excuse(ctx, earlier, later, None)
        return (DEFECT, f"{why}; {past}", None) if past else (CLOCK, why, _fault(clock[1]))
    lost = state_lost(ctx, asked, later.start, getattr(later, "key", None))
    if lost:
        why = (
            f"{lost.kind} on {', '.join(map(str, lost.targets))} between the two grants, and "
            "the service forgot (a token after it no greater than one before)"
        )
        past = past_excuse(ctx, earlier, later, None)
        return (DEFECT, f"{why}; {past}", None) if past else (STATE, why, _fault(lost))
    if nature == DEFECT:
        own = own_lease(ctx, earlier, later)
        if own:
            return LEASE, own, None
    return nature, why, None


def own_lease(ctx: Context, earlier: Any, later: Any) -> str:
    """Why `earlier`'s belief had ended by its own lease clock when `later` was granted ('' when
    it had not): a lock without renewal whose holder is told by its own clock that its lease
    is over (Redlock's validity), held past that by the workload, is no split of the lock.
    Its own word says so: the acquire's record gave the ms left of its lease (`valid_ms`:
    lock_observe `Hold.valid_end`) and the later grant came after they ran out; or, where the
    record says none, its `holding()` said no in this hold (an `abandon`) and the later grant
    came a lease T after it asked (a lease set no earlier than the asking could have run out
    unrenewed). And it made no claim (a write invoked after `holding()` said yes:
    lock_observe.CLAIMS) while `later` held: a holder that wrote on while another held was not
    told by its lock that its lease was over, whatever its clock said, and that is a defect
    (redis-set-px's `holding()` never asks its clock). The same rule as `past_excuse`: the
    evidence of a belief is what the holder did, never its recorded end."""
    grant = later.start
    said = lease_over(ctx, earlier, grant)
    if not said:
        return ""
    if first_claim(ctx, earlier, later, grant) is not None:
        return ""
    return (
        f"client {earlier.client} held past its own lease with no fault on it: {said} before "
        f"client {later.client} was granted at {grant / S:.2f}s, and it made no claim while "
        f"client {later.client} held"
    )


def lease_over(ctx: Context, hold: Any, at: int) -> str:
    """Why `hold`'s own lease was over by `at` by its holder's own clock ('' when nothing says
    so): the validity its acquire's record gives ran out by then; or, where the record gives
    none, its `holding()` said no in the hold (an `abandon`) and a lease T had passed since it
    asked (a lease set no earlier than the asking could have run out unrenewed), with no sign
    of trouble with the service from its grant to `at` (a SUSPENDED, LOST or CLOSED, a request
    unanswered: lock_observe's `dark`): a no that came of its session's trouble says nothing
    of its lease's clock, and a lock that renews (a ZooKeeper session) keeps its lease through
    a queue longer than T and a SUSPENDED that ends CONNECTED. `own_lease`'s and
    `half_done_nature`'s one reading of it."""
    valid_end = getattr(hold, "valid_end", float("inf"))
    if valid_end != float("inf"):
        return f"its acquire's validity ran out at {valid_end / S:.2f}s" if valid_end <= at else ""
    gave_up = [t for t in ctx.abandons.get(hold.client, ()) if hold.start < t <= hold.end]
    t = lease_of(ctx, hold.client, hold.start)
    asked = getattr(hold, "asked", hold.start)
    if not gave_up or t is None or at < asked + t * S:
        return ""
    if any(hold.start <= x <= at for x in ctx.dark.get(hold.client, ())):
        return ""
    return (
        f"its holding() said no (an abandon at {gave_up[0] / S:.2f}s) and its lease "
        f"({t:g}s) from its asking at {asked / S:.2f}s had run out"
    )


def lease_of(ctx: Context, client: Any, at: int) -> float | None:
    """`client`'s lease at `at`: its latest negotiated one before, else the run's (lease.py)."""
    seen = [s for t, s, _ in ctx.sessions.get(client, ()) if t <= at]
    return seen[-1] if seen else ctx.default_s


def _hold_of(ctx: Context, client: Any, token: Any, before: int) -> Any:
    """The writer's hold: the one with its token, else its last grant before `before`."""
    mine = [h for h in ctx.grants if h.client == client and h.start <= before]
    same = [h for h in mine if token is not None and h.token == token]
    return (same or mine or [None])[-1]


def half_done_nature(ctx: Context, v: Any) -> tuple[str, str, dict | None]:
    """A half-done read (checker/atomicity.py): clients (writer, reader), window [the write
    that left it, the read]."""
    writer, reader = v.clients[0], v.clients[-1]
    tokens = list(v.evidence.get("tokens") or (None, None))
    read_end = v.end if v.end is not None else v.start
    w = _hold_of(ctx, writer, tokens[0], read_end)
    r = _hold_of(ctx, reader, tokens[-1], read_end)
    if w is not None and r is not None and r.start < w.end and w.start <= r.start:
        nature, why, fault = split_nature(ctx, w, r)  # the read follows from this split
        return nature, f"the holds overlap: {why}", fault
    start = w.start if w is not None else (v.start or 0)
    for k in ctx.kills.get(writer, ()):
        if start <= k.silent_from() <= read_end:  # it died when the kill went in
            return CUT, f"client {writer} killed by {k.kind} mid-update, before the read", _fault(k)
    # when it stopped mid-update: it gave up (an `abandon`: it no longer believed it held, as a
    # careful holder does at SUSPENDED or LOST; it checks before each write, so it let go
    # between its last write and then), or its hold ended, not by its release
    # The update stopped after the write that left the state read: that write's completion
    # when it was an accepted one (the violation's start). When no accepted write left it (the
    # write that did went unanswered, yet took effect: etcd_waiter_lease's hunt, 2026-11-30,
    # its step 1 `info` as every server lost power), the violation starts at the read, which
    # says nothing of when the update stopped: it began in the writer's hold, and that is all.
    left = v.evidence.get("left_by_write")
    wrote = v.start if v.start is not None and left else start
    stops = [
        (wrote, t, "gave its hold up")
        for t in ctx.abandons.get(writer, ())
        if start <= t <= read_end and t >= wrote
    ]
    # or a write of the update failed or went unanswered (a server fault in its way): the
    # update stopped there whatever the holder believed
    stops += [
        (called, done, "a write of it failed or went unanswered")
        for called, done in ctx.unsure.get(writer, ())
        if wrote <= called <= read_end
    ]
    end = w.end if w is not None else None
    if isinstance(end, int) and end <= read_end and end not in ctx.releases.get(writer, ()):
        stops.append((end, end, "its hold ended, not by its release"))
    for lo, hi, how in stops:
        for f in ctx.landed:
            t = ctx.lease(f, writer) or 0
            stop = f.end if f.end is not None else f.start
            if f.start <= hi and lo <= stop + t * S:
                return CUT, f"client {writer} stopped mid-update ({how}) under {f.kind}", _fault(f)
    # no fault: it gave its update up because its own lease was over as its lock had told it
    # (the validity its acquire's record gives): an update that outlasts the lease (a
    # workload's hold longer than a TTL lock's) no lock makes atomic. Without that record a
    # holder that let go with no fault near did so on its own (a lock that renews).
    for _, hi, how in stops:
        if w is not None and how == "gave its hold up" and getattr(w, "valid_end", hi + 1) <= hi:
            over = lease_over(ctx, w, hi)
            why = f"client {writer} gave its update up as its own lease was over: {over}"
            return LEASE, why, None
    return DEFECT, f"client {writer}'s half-done update was not cut by a fault", None


def token_nature(ctx: Context, v: Any) -> tuple[str, str, dict | None]:
    """A reused token (window: its two grants), or a write accepted out of token order (window:
    the two writes): the fencing part's backwards write, the lock part's effect overlap (a
    write with the smaller token accepted after, or beside, one with the larger)."""
    lo, hi = v.start or 0, v.end if v.end is not None else v.start or 0
    if v.kind == "reused-token":
        # the reuse is the evidence that the counter went back: any restart between the grants,
        # or under way at the first (its start is recorded before the server goes down: a
        # grant 13 ms after a kill-majority's start came from the counter it then lost)
        f = next((f for f in ctx.restarts if f.start <= hi and lo <= (f.end or f.start)), None)
    else:
        # the smaller token granted after a restart that forgot: the counter went back, so
        # token order is no longer grant order
        tokens = [x for x in map(_number, v.evidence.get("tokens") or ()) if x is not None]
        low = min(tokens) if tokens else None
        granted = [h.start for h in ctx.grants if low is not None and _number(h.token) == low]
        f = next(
            (f for f in ctx.restarts if ctx.forgot(f) and any(f.start <= g <= hi for g in granted)),
            None,
        )
    if f is None:
        return DEFECT, "no fault that restarts a server between them", None
    return (
        STATE,
        f"{f.kind} on {', '.join(map(str, f.targets))}: the fence counter restarted",
        (_fault(f)),
    )


def phantom_nature(ctx: Context, v: Any) -> tuple[str, str, dict | None]:
    """A grant the service never saw: its lease ended early by a server's clock, or the server
    forgot it."""
    client, grant = v.clients[0], v.start or 0
    end = v.end if v.end is not None else max((f.end or f.start for f in ctx.landed), default=grant)
    for f in ctx.clocks:
        t = ctx.lease(f, client)
        if t and clock_ahead(f, grant, max(grant, min(end, (f.end or f.start) + int(t * S))), t):
            return CLOCK, f"{f.kind}: the grant's lease ran out by the server's clock", _fault(f)
    lost = state_lost(ctx, grant, end)
    if lost:
        return STATE, f"{lost.kind}: the server forgot the grant", _fault(lost)
    return DEFECT, "no fault that ends a grant early on the server", None


BY_KIND = {
    "half-done-read": half_done_nature,
    "reused-token": token_nature,
    "backwards": token_nature,
    "effect": token_nature,
    "phantom-grant": phantom_nature,
}


def classify_violations(ctx: Context, violations: list[Any]) -> list[dict[str, Any]] | None:
    """Each violation's nature (None when the part has no violation this classification reads:
    its kinds are another checker's)."""
    if not any(v.kind in BY_KIND for v in violations):
        return None
    out = []
    for v in violations:
        judge = BY_KIND.get(v.kind)
        nature, why, f = judge(ctx, v) if judge else (DEFECT, "a kind no nature explains", None)
        out.append(
            {
                "kind": v.kind,
                "clients": list(v.clients),
                "start": v.start,
                "nature": nature,
                "nature_why": why,
                "nature_fault": f,
            }
        )
    return out


def counts_of(natures: list[str]) -> dict[str, int]:
    return {n: natures.count(n) for n in (*NATURES, DEFECT, UNJUDGED) if natures.count(n)}


def nature_words(counts: dict[str, int]) -> str:
    """'1 a lease's (...), 2 a server that lost its state' for the natures counted."""
    return ", ".join(f"{counts[n]} {WORDS[n]}" for n in NATURES if counts.get(n))


def classify_splits(
    records: list[dict[str, Any]],
    nemesis: list[Any],
    sessions: Sessions,
    default_s: float | None,
    last: int,
    holds: list[Any] = (),  # type: ignore[assignment]
    acts: dict[Any, list[int]] | None = None,
    told: dict[Any, list[int]] | None = None,
    abandons: dict[Any, list[int]] | None = None,
    dark: dict[Any, list[int]] | None = None,
    back: dict[Any, list[int]] | None = None,
) -> dict[str, int]:
    """Sets `nature`, `nature_why` and `nature_fault` on every belief overlap record (its
    `holds`: the two holds); the count of each nature (every one of NATURES, DEFECT, UNJUDGED).
    `acts`, `told`: each client's claims and LOST events (lock_observe), for `past_excuse`;
    `abandons`, `dark`: its `abandon` events and its signs of trouble, for `own_lease`;
    `dark`, `back`: its signs of being cut off and of being back, for a fault on servers that
    silenced it (lease.py `server_silences`)."""
    ctx = Context(
        nemesis,
        sessions,
        default_s,
        last,
        holds,
        abandons=abandons,
        acts=acts,
        told=told,
        dark=dark,
        back=back,
    )
    counts = dict.fromkeys((*NATURES, DEFECT, UNJUDGED), 0)
    for rec in records:
        a, b = rec["holds"]
        earlier, later = (a, b) if a.start <= b.start else (b, a)
        rec["nature"], rec["nature_why"], rec["nature_fault"] = split_nature(ctx, earlier, later)
        counts[rec["nature"]] += 1
    return counts


def lease_words(details: dict[str, Any]) -> str:
    """The lock part's count of splits by nature, as the end of its line: "3 of the 21 belief
    overlaps beyond a lease's or a fault's nature" and, when some are a fault's other than a
    lease's, which ("(2 a server that lost its state)"); '' without overlaps; ", 2 unjudged
    (lease length unknown)" when some are."""
    n = details.get("belief_overlap_count") or 0
    if not n or "beyond_lease_count" not in details:
        return ""
    words = (
        f"{details['beyond_lease_count']} of the {n} belief overlaps beyond a lease's or a "
        "fault's nature"
    )
    counts = details.get("nature_counts") or {}
    if any(counts.get(k) for k in NATURES if k != LEASE):
        words += f" ({nature_words(counts)})"
    unjudged = details.get("unjudged_lease_count") or 0
    return words + (f", {unjudged} unjudged (lease length unknown)" if unjudged else "")


def part_words(details: dict[str, Any]) -> str:
    """Another part's count by nature (atomicity, fencing, phantom): "1 of the 3 beyond a
    fault's nature (2 a server that lost its state)"; '' when it was not classified."""
    counts = details.get("nature_counts")
    if not isinstance(counts, dict) or "beyond_nature_count" not in details:
        return ""
    n = details["beyond_nature_count"] + sum(counts.get(k) or 0 for k in NATURES)
    words = f"{details['beyond_nature_count']} of the {n} beyond a fault's nature"
    said = nature_words(counts)
    return f"{words} ({said})" if said else words


def with_natures(parts: dict[str, Any], ctx: Context) -> None:
    """Classify every other part's violations (atomicity, fencing, phantom) in place: its
    details get `natures` (one per violation listed), `nature_counts` and
    `beyond_nature_count` (the defects, and what was found but not listed)."""
    for part in parts.values():
        judged = classify_violations(ctx, list(part.violations))
        if judged is not None:
            found = sum(part.counts.values()) if part.counts else len(judged)
            _put(part.details, "", judged, found)


def with_effect_natures(lock: Any, ctx: Context) -> None:
    """Classify the lock part's effect overlaps (its own splits are classified by the lock
    checker): its details get `effect_natures`, `effect_nature_counts` and
    `effect_beyond_nature_count` (the defects, and the overlaps found but not listed). A
    write out of token order after a restart that forgot is that restart's nature, as the
    fencing part's backwards write is."""
    effects = [v for v in lock.violations if v.kind == "effect"]
    if effects:
        judged = classify_violations(ctx, effects) or []
        found = int(lock.details.get("effect_overlap_count") or len(judged))
        _put(lock.details, "effect_", judged, found)


def _put(details: dict[str, Any], prefix: str, judged: list[dict[str, Any]], found: int) -> None:
    """The classified violations into `details`, with their counts and the defects (and
    what was found but not listed), under `prefix`."""
    counts = counts_of([j["nature"] for j in judged])
    details[f"{prefix}natures"] = judged
    details[f"{prefix}nature_counts"] = counts
    details[f"{prefix}beyond_nature_count"] = counts.get(DEFECT, 0) + max(0, found - len(judged))
