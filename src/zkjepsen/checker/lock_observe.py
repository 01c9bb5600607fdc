"""The lock checker's one pass over a history: holds (beliefs, maybe holds), accepted writes
and their effects, read straight from the stream as tuples (no Op per record). See
`checker.lock` for the terms and what is judged from them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from zkjepsen.checker.lease import WENT_IN
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import client_killers
from zkjepsen.history import NEMESIS, Op
from zkjepsen.history.stream import Record, records

if TYPE_CHECKING:
    from zkjepsen.checker.lease import Sessions

INF = float("inf")


class Hold:
    """One acquisition (see the module docstring). Plain classes here, not dataclasses:
    `zkjepsen check --model lock` should not import dataclasses+inspect at every start."""

    __slots__ = (
        "client",
        "process",
        "key",
        "token",
        "start",
        "end",
        "careful_end",
        "maybe",
        "mode",
        "seq",
        "node",
        "asked",
        "valid_end",
    )

    def __init__(
        self,
        client: Any,
        process: Any,
        key: Any,
        token: Any,
        start: int,  # acquire ok (or acquire invoke for a maybe hold)
        end: float = INF,  # release invoke (or re-acquire invoke); INF: held to the end
        careful_end: float = INF,
        maybe: bool = False,
        mode: str = "write",
        seq: Any = None,
        node: Any = None,
        asked: int | None = None,  # the acquire's invoke: the service granted after it
        valid_end: float = INF,  # when its own lease's validity ended (its `valid_ms`)
    ) -> None:
        self.client, self.process, self.key, self.token = client, process, key, token
        self.start, self.end, self.careful_end, self.maybe = start, end, careful_end, maybe
        self.mode, self.seq, self.node = mode, seq, node
        self.asked = start if asked is None else asked
        self.valid_end = valid_end

    def __repr__(self) -> str:
        return "Hold(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"

    def to_json(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "process": self.process,
            "token": self.token,
            "seq": self.seq,
            "node": self.node,
            "mode": self.mode,
            "maybe": self.maybe,
            "start": self.start,
            "end": None if self.end == INF else self.end,
        }


class Write:
    """An accepted write; `version` is the resource's version after it, when recorded."""

    __slots__ = ("client", "key", "token", "start", "end", "version")

    def __init__(
        self, client: Any, key: Any, token: Any, start: int, end: int, version: int | None = None
    ) -> None:
        self.client, self.key, self.token = client, key, token
        self.start, self.end, self.version = start, end, version

    def __repr__(self) -> str:
        return "Write(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"


class LockObservations:
    """What the lock and fencing checkers read from a history (one pass)."""

    def __init__(self) -> None:
        self.holds: list[Hold] = []
        self.writes: list[Write] = []  # accepted writes only
        self.rejected_writes = 0
        self.unknown_writes = 0
        self.cut_at_retirement = 0  # beliefs ended at an info op of a process with no client id
        self.last_time = 0
        self.nemesis: list[Op] = []  # for the fault windows
        # client -> [(time, negotiated session or lease s)], from its `session` events: the
        # lease a split is judged against (checker/lease.py)
        self.sessions: Sessions = {}
        # client -> the invokes of its claims (CLAIMS: each after `holding()` said yes), and
        # its own word that its session or lease is gone (TOLD): how long a fault excuses a
        # split (checker/nature.py `past_excuse`)
        self.acts: dict[Any, list[int]] = {}
        self.told: dict[Any, list[int]] = {}
        # client -> (invoke, completion) of each of its writes that failed or went unanswered:
        # where a multi-step update stopped (checker/nature.py `half_done_nature`)
        self.unsure: dict[Any, list[tuple[int, int]]] = {}
        # client -> its `abandon` events' times: its `holding()` said no (client/loop.py)
        self.abandons: dict[Any, list[int]] = {}
        # client -> its signs of being cut off from the service (a session-state in DARK, the
        # invoke of a request of it that went unanswered), and its CONNECTED or RECONNECTED
        # events': whether its `holding()`'s no came of its session's trouble
        # (checker/nature.py `lease_over`), when a fault on servers silenced it
        # (checker/lease.py `server_silences`)
        self.dark: dict[Any, list[int]] = {}
        self.back: dict[Any, list[int]] = {}


def _mode(invoked: Any, granted: dict[str, Any]) -> str:
    """ "read" only when the invoke or the grant says so: a hold is exclusive by default."""
    if granted.get("mode") == "read":
        return "read"
    if isinstance(invoked, dict) and invoked.get("mode") == "read" and "mode" not in granted:
        return "read"
    return "write"


CLIENT_DEATHS = client_killers()  # nemesis ops that end a client process (as declared)
# Ops a holder invokes only after `holding()` said yes (client/loop.py): each is its belief,
# said at that instant. Beside the workload's writes: a counter's `add`, the ready node's
# re-creation. (A read, `unready` and a release say nothing of it.)
CLAIMS = ("add", "ready")
# A client's own word that its session or lease is gone (client-protocol.md `session-state`).
TOLD = ("LOST", "CLOSED")
# Its word that it is cut off from the service, and that it is back.
DARK = ("SUSPENDED", *TOLD)
BACK = ("CONNECTED", "RECONNECTED")


def _client_number(target: Any) -> Any:
    """Nemesis targets name clients `c3`; histories number them 3."""
    if isinstance(target, str) and target[:1] == "c" and target[1:].isdigit():
        return int(target[1:])
    return target


def observe(
    ops: Iterable[Op],
    acquire: Iterable[str] = ("acquire",),
    release: Iterable[str] = ("release",),
    write: Iterable[str] = ("write",),
) -> LockObservations:
    """One pass: holds (with belief ends), accepted writes, counts of rejected/unknown writes.
    Reads the history as `Record` tuples (history/stream.py): a streamed history builds no Op."""
    acq, rel, wr = frozenset(acquire), frozenset(release), frozenset(write)
    claims = wr | frozenset(CLAIMS)
    obs = LockObservations()
    acts, told = obs.acts, obs.told
    pending: dict[Any, Record] = {}  # process -> its open invoke
    open_holds: dict[tuple[Any, Any], Hold] = {}  # (client, lock key) -> hold still believed
    holds, writes = obs.holds, obs.writes
    t = 0
    for r in records(ops):
        _, t, p, typ, f, key, value, c = r
        if p == NEMESIS:
            obs.nemesis.append(Op(*r))
            _end_beliefs_at_kill(open_holds, f, value, t)
            continue
        client = p if c is None else c
        if typ == "invoke":
            pending[p] = r
            if f in claims:
                acts.setdefault(client, []).append(t)
            elif f in rel or f in acq:
                if key is None and f in rel and (client, None) not in open_holds:
                    key = _keyless_release(open_holds, client, r)
                h = open_holds.pop((client, key), None)
                if h is not None:
                    h.end = t
                    if t < h.careful_end:
                        h.careful_end = t
            continue
        if typ == "event":
            if f == "session":
                _session(obs.sessions, client, value, t)
            elif f == "session-state" and value in TOLD:
                told.setdefault(client, []).append(t)
            elif f == "abandon":
                obs.abandons.setdefault(client, []).append(t)
            if f == "session-state" and value in DARK:
                obs.dark.setdefault(client, []).append(t)
            elif f == "session-state" and value in BACK:
                obs.back.setdefault(client, []).append(t)
            _client_event(open_holds, client, f, value, t)
            continue
        inv = pending.pop(p, None)
        if inv is None:
            continue
        f = inv[4]
        if typ == "info":  # unanswered: it could not hear from the service then
            obs.dark.setdefault(client, []).append(inv[1])
        if typ == "info" and c is None and f not in acq:
            # The process is retired and, with no `client` field, its successor cannot be
            # linked to it: end its beliefs here rather than let them run to the end of time.
            obs.cut_at_retirement += _end_beliefs(open_holds, client, t)
        if f in acq:
            if typ == "fail":
                continue
            v = value if value.__class__ is dict else {}
            maybe = typ != "ok"
            h = Hold(
                client,
                p,
                inv[5],
                v.get("token"),
                inv[1] if maybe else t,
                INF,
                INF,
                maybe,
                _mode(inv[6], v),
                v.get("seq"),
                v.get("node"),
                inv[1],
                _valid_end(v, inv[1]) if not maybe else INF,
            )
            holds.append(h)
            open_holds[(client, inv[5])] = h
        elif f in wr:
            if typ == "ok":
                iv = inv[6]
                v = iv if isinstance(iv, dict) else value
                token = v.get("token") if isinstance(v, dict) else None
                version = None
                if isinstance(value, dict):
                    version = value.get("version")
                    if not isinstance(version, int):
                        version = None
                writes.append(Write(client, inv[5], token, inv[1], t, version))
            else:
                if typ == "fail":
                    obs.rejected_writes += 1
                else:
                    obs.unknown_writes += 1
                obs.unsure.setdefault(client, []).append((inv[1], t))
    obs.last_time = t
    return obs


def _valid_end(value: dict[str, Any], asked: int) -> float:
    """When a grant's own lease ended by its holder's clock: the acquire's `valid_ms` (when it
    ends, in ms after the acquire was called: recipes/base.py `Token.valid_ms`) after its
    invoke (`asked`), which is recorded before the call, so never later than it ended; INF when
    it says none."""
    ms = value.get("valid_ms")
    if isinstance(ms, (int, float)) and not isinstance(ms, bool) and 0 <= ms < 1e12:
        return asked + int(ms * 1_000_000)
    return INF


def _end_beliefs_at_kill(
    open_holds: dict[tuple[Any, Any], Hold], f: Any, value: Any, t: int
) -> None:
    """A SIGKILLed client process believes nothing any more: its holds end at the kill (its
    lock node lingers until the session expires; a successor taking the lock then is the
    recipe working, not a second believer). At the kill's start record, every hold of its
    targets; at its end record, a hold one of them took between that record and the moment
    the kill went in (its end record's `went_in_ns`, the nemesis's arming.went_in): a kill
    aimed at a client as it was granted (on an acquire) lands a few ms after its start
    record, and that hold, never released, ran to the restart (etcd_waiter_lease, guided
    seed 1, 2026-11-29: a 4 s kill-client went in 0.1 s after its start record, 0.1 s after
    its target's grant; the next waiter, granted when the dead holder's lease ran out 2 s
    later, was called a second believer beside it, a defect)."""
    v = value if isinstance(value, dict) else {}
    if f not in CLIENT_DEATHS:
        return
    dead = {_client_number(x) for x in v.get("targets") or ()}
    if v.get("phase") == "start":
        for ck in [ck for ck in open_holds if ck[0] in dead]:
            h = open_holds.pop(ck)
            h.end = t
            h.careful_end = min(h.careful_end, t)
    went = v.get(WENT_IN)
    if v.get("phase") == "end" and type(went) is int and went <= t:
        for ck in [ck for ck, h in open_holds.items() if ck[0] in dead and h.start <= went]:
            h = open_holds.pop(ck)
            h.end = went
            h.careful_end = min(h.careful_end, went)


def _session(sessions: Sessions, client: Any, value: Any, t: int) -> None:
    """A new session's negotiated timeout (`timeout_ms`: a number > 0), kept per client, with
    the longest gap between two renewals of it the program declared (`renew_ms`, a number in
    (0, timeout_ms]: the recorder refused any other; None when it declared none)."""
    ms = value.get("timeout_ms") if isinstance(value, dict) else None
    if isinstance(ms, (int, float)) and not isinstance(ms, bool) and ms > 0:
        r = value.get("renew_ms")
        ok = isinstance(r, (int, float)) and not isinstance(r, bool) and 0 < r <= ms
        sessions.setdefault(client, []).append((t, ms / 1000, r / 1000 if ok else None))


def _client_event(
    open_holds: dict[tuple[Any, Any], Hold], client: Any, f: Any, value: Any, t: int
) -> None:
    """A client's event: the program under test died or was killed by its recorder (client
    wire protocol), so like a SIGKILLed client it believes nothing any more; or its session
    was suspended or lost, which ends its careful beliefs."""
    if f == "client-error":
        _end_beliefs(open_holds, client, t)
    elif f == "session-state" and value in ("SUSPENDED", "LOST"):
        for (cl, _), h in open_holds.items():  # events are rare: a scan is fine
            if cl == client and t < h.careful_end:
                h.careful_end = t


def _end_beliefs(open_holds: dict[tuple[Any, Any], Hold], client: Any, t: int) -> int:
    """Ends every open hold of `client` at t (unless it ended sooner); how many."""
    ended = [ck for ck in open_holds if ck[0] == client]
    for ck in ended:
        h = open_holds.pop(ck)
        h.end = min(h.end, t)
        h.careful_end = min(h.careful_end, t)
    return len(ended)


def _keyless_release(open_holds: dict[tuple[Any, Any], Hold], client: Any, r: Record) -> Any:
    """The lock a release recorded without its key ends: the client's only open hold. Left
    open, that hold would be believed to the end of the history and overlap every later
    holder (a false violation); guessing among several would hide real ones, so that is a
    bad line. Knossos-style histories with no keys at all never get here."""
    keys = [k for (c, k) in open_holds if c == client]  # few: a client holds a lock or two
    if len(keys) > 1:
        raise BadInput(
            f"history record {r[0]}: {r[4]} by client {client!r} names no lock while it "
            f"holds {len(keys)} ({', '.join(map(repr, keys))}); record the lock's key"
        )
    return keys[0] if keys else None
