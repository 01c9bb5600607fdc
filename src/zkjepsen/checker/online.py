"""Online checking: the lock checker's violations found while the history is still being written.

An online checker consumes history records one at a time, in any interleaving of its SOURCES
(each client's file, the nemesis's file) that keeps each source's own order, and reports a
violation only once its evidence is complete: no record still to come can take it back. It
finds what the offline checker (`checker.lock`, `checker.fencing`) finds on the whole history,
and never earlier than the records that make it certain have been written.

Sources and progress. A record's source is the nemesis for nemesis ops, else its client
(`client`, or the process when the record has none). `known[s] = T` says every record of source
`s` with a time below T has been fed: feeding a record raises its source's mark to its time (a
source's records come in time order), and `advance(s, T)` raises it without one (the live glue
knows the nemesis's clock; the end of a history raises every mark to infinity).

What is judged online (the kinds that can make the verdict invalid):
- **belief** (`checker.lock`): two definite holds A, B of one lock by different clients (not two
  read holds) with min(end) > max(start). Ends only move down, by records of the holder's own
  source (release/acquire invoke, client-error, an info that retires it) or by a nemesis
  kill-client at a later time, so the pair is decided once the holders' sources and the nemesis
  have all been fed past max(start): then no end at or below it can still come.
- **effect** (`checker.lock`): accepted writes w, x on one resource with token(w) < token(x) and
  x invoked before w completed; with every write carrying the resource's version, a smaller
  token accepted at a larger version (until a version comes twice: a restart gave them again,
  and real time decides, as offline: lock.in_version_order). Decided as soon as both writes
  are accepted.
- **reused-token** (`checker.fencing`): two ok acquires of one lock granted the same token.
It assumes a resource's writes either all record versions or none do (what every workload does):
the offline checker picks its order by whether ALL of them do, which no prefix can tell.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from zkjepsen.checker import OnlineFindings, Violation
from zkjepsen.checker.counter import CounterChecker
from zkjepsen.checker.fencing import FencingChecker
from zkjepsen.checker.lock import LockChecker
from zkjepsen.checker.lock_observe import CLIENT_DEATHS, INF
from zkjepsen.checker.online_counter import OnlineCounterChecker
from zkjepsen.history import NEMESIS

ONLINE_KINDS = ("belief", "effect", "reused-token")


class _Hold:
    __slots__ = ("client", "key", "token", "start", "end", "mode", "index")

    def __init__(self, client: Any, key: Any, token: Any, start: int, mode: str, index: Any):
        self.client, self.key, self.token, self.start = client, key, token, start
        self.end: float = INF  # lowered by the holder's own records and by kills
        self.mode, self.index = mode, index


class _Write:
    __slots__ = ("client", "key", "token", "start", "end", "version", "index")

    def __init__(self, client, key, token, start, end, version, index) -> None:
        self.client, self.key, self.token = client, key, token
        self.start, self.end, self.version, self.index = start, end, version, index


class OnlineLockChecker(OnlineFindings):
    """Belief and effect overlaps (and reused tokens) as records arrive; see the module doc.

    `feed(record)` takes one history record (a dict as in history.jsonl); `advance(source, t)`
    raises a source's progress; `confirmed()` returns the violations newly decided since the
    last call, in the order they became certain. `finish()` ends every source (end of history)."""

    def __init__(
        self,
        acquire: Iterable[str] = ("acquire",),
        release: Iterable[str] = ("release",),
        write: Iterable[str] = ("write",),
        kinds: Iterable[str] = ONLINE_KINDS,
    ) -> None:
        self.names = (tuple(acquire), tuple(release), tuple(write))
        self.acq, self.rel, self.wr = (frozenset(n) for n in self.names)
        self.kinds = frozenset(kinds) & frozenset(ONLINE_KINDS)
        self.known: dict[Any, float] = {}
        self.pending: dict[Any, dict[str, Any]] = {}  # process -> its open invoke
        self.open: dict[tuple[Any, Any], _Hold] = {}  # (client, lock) -> hold still believed
        self.holds: dict[Any, list[_Hold]] = {}  # lock -> every definite hold (client order)
        self.by_client: dict[Any, list[_Hold]] = {}
        self.kills: dict[Any, list[int]] = {}  # client -> times a kill-client started
        self.writes: dict[Any, list[_Write]] = {}  # resource -> accepted writes with a token
        # resource -> the versions its accepted writes recorded, or None once one came twice
        # (a restart gave them again: from then on real time orders its writes, as offline)
        self.versions: dict[Any, set[int] | None] = {}
        # (lock, token) -> the first grant's (client, time)
        self.granted: dict[tuple[Any, Any], tuple[Any, int]] = {}
        self.candidates: list[tuple[_Hold, _Hold]] = []  # belief pairs not yet decided
        self.found: list[Violation] = []
        self._reported = 0
        self.fed = 0

    # ------------------------------------------------------------------ input

    def feed(self, rec: Mapping[str, Any]) -> None:
        self.fed += 1
        p, t, typ, f = rec.get("process"), rec.get("time", 0), rec.get("type"), rec.get("f")
        if p == NEMESIS:
            self._mark(NEMESIS, t)
            value = rec.get("value")
            v = value if isinstance(value, dict) else {}
            if f in CLIENT_DEATHS and v.get("phase") == "start":
                for c in {client_number(x) for x in v.get("targets") or ()}:
                    self.kills.setdefault(c, []).append(t)  # for holds fed after it, too
                    for h in self.by_client.get(c, ()):
                        if h.start < t < h.end:
                            h.end = t
            return
        c = rec.get("client")
        client = p if c is None else c
        self._mark(client, t)
        key, value = rec.get("key"), rec.get("value")
        if typ == "invoke":
            self.pending[p] = dict(rec)
            if f in self.rel or f in self.acq:
                if key is None and f in self.rel and (client, None) not in self.open:
                    keys = [k for (cl, k) in self.open if cl == client]
                    key = keys[0] if len(keys) == 1 else None
                self._end(self.open.pop((client, key), None), t)
            return
        if typ == "event":
            if f == "client-error":
                for ck in [ck for ck in self.open if ck[0] == client]:
                    self._end(self.open.pop(ck), t)
            return
        inv = self.pending.pop(p, None)
        if inv is None:
            return
        f = inv.get("f")
        if typ == "info" and c is None and f not in self.acq:
            for ck in [ck for ck in self.open if ck[0] == client]:
                self._end(self.open.pop(ck), t)
        if f in self.acq and typ == "ok":
            self._granted(client, inv, value, t, rec.get("index"))
        elif f in self.acq and typ == "info":
            self.open.pop((client, inv.get("key")), None)  # a maybe hold: judged offline only
        elif f in self.wr and typ == "ok":
            iv = inv.get("value")
            given = iv if isinstance(iv, dict) else value
            token = given.get("token") if isinstance(given, dict) else None
            version = value.get("version") if isinstance(value, dict) else None
            if token is not None:
                w = _Write(
                    client,
                    inv.get("key"),
                    token,
                    inv.get("time", 0),
                    t,
                    version if isinstance(version, int) and version is not True else None,
                    rec.get("index"),
                )
                self._accepted(w)

    def advance(self, source: Any, t: float) -> None:
        """Every record of `source` below time `t` has been fed (the nemesis: its clock)."""
        self._mark(source, t)

    # ------------------------------------------------------------------ state

    def _mark(self, source: Any, t: float) -> None:
        if t > self.known.get(source, -INF):
            self.known[source] = t

    @staticmethod
    def _end(h: _Hold | None, t: int) -> None:
        if h is not None and t < h.end:
            h.end = t

    def _granted(self, client: Any, inv: dict[str, Any], value: Any, t: int, index: Any) -> None:
        v = value if isinstance(value, dict) else {}
        key = inv.get("key")
        iv = inv.get("value")
        mode = "read" if v.get("mode") == "read" else "write"
        if isinstance(iv, dict) and iv.get("mode") == "read" and "mode" not in v:
            mode = "read"
        h = _Hold(client, key, v.get("token"), t, mode, index)
        for k in self.kills.get(client, ()):  # a kill fed before this client's own records
            if t < k < h.end:
                h.end = k
        self.open[(client, key)] = h
        self.by_client.setdefault(client, []).append(h)
        others = self.holds.setdefault(key, [])
        for o in others:
            if o.client != client and not (o.mode == "read" and mode == "read"):
                self.candidates.append((o, h))
        others.append(h)
        if h.token is not None and "reused-token" in self.kinds:
            prev = self.granted.get((key, h.token))
            if prev is not None:  # its window runs from one grant to the other, as offline
                self.found.append(
                    Violation(
                        "reused-token",
                        (prev[0], client),
                        prev[1],
                        t,
                        evidence={"lock": key, "token": h.token, "index": index},
                    )
                )
            else:
                self.granted[(key, h.token)] = (client, t)

    def _accepted(self, w: _Write) -> None:
        ws = self.writes.setdefault(w.key, [])
        seen = self.versions.setdefault(w.key, set())
        if seen is not None and w.version is not None:
            if w.version in seen:
                seen = self.versions[w.key] = None
            else:
                seen.add(w.version)
        if "effect" in self.kinds:
            for x in ws:
                if x.token == w.token:
                    continue
                small, big = (w, x) if w.token < x.token else (x, w)
                if seen is not None and w.version is not None and x.version is not None:
                    broken = small.version > big.version
                    kind = "stale-after-newer"
                else:
                    broken = big.start < small.end
                    kind = "stale-after-newer" if big.end < small.start else "interleaved"
                if broken:
                    self.found.append(_effect(small, big, kind, w.index))
        ws.append(w)

    def _decide(self) -> None:
        """Decide every candidate pair whose sources have all passed its later start."""
        if not self.candidates or "belief" not in self.kinds:
            return
        nem = self.known.get(NEMESIS, -INF)
        left = []
        for a, b in self.candidates:
            at = max(a.start, b.start)
            if not (
                nem > at
                and self.known.get(a.client, -INF) > at
                and self.known.get(b.client, -INF) > at
            ):
                left.append((a, b))
                continue
            end = min(a.end, b.end)
            if end > at:
                first, second = (a, b) if a.start <= b.start else (b, a)
                self.found.append(
                    Violation(
                        "belief",
                        (first.client, second.client),
                        at,
                        None if end == INF else int(end),  # int: ns, INF the only float
                        evidence={
                            "key": a.key,
                            "tokens": [first.token, second.token],
                            "starts": [first.start, second.start],
                            "decided_after": {
                                "nemesis": nem,
                                "clients": [self.known[a.client], self.known[b.client]],
                            },
                        },
                    )
                )
        self.candidates = left


def client_number(target: Any) -> Any:
    """Nemesis targets name clients `c3`; histories number them 3 (as checker.lock_observe)."""
    if isinstance(target, str) and target[:1] == "c" and target[1:].isdigit():
        return int(target[1:])
    return target


def _effect(small: _Write, big: _Write, kind: str, index: Any) -> Violation:
    return Violation(
        "effect",
        (small.client, big.client),
        min(small.start, big.start),
        max(small.end, big.end),
        evidence={
            "kind": kind,
            "resource": small.key,
            "tokens": [small.token, big.token],
            "writes": [
                {"client": x.client, "token": x.token, "start": x.start, "end": x.end}
                for x in (small, big)
            ],
            "index": index,
        },
    )


class OnlineChecks:
    """Several online checkers fed as one (a counter run judges its lock and its reads)."""

    def __init__(self, parts: list[Any], names: Any = None) -> None:
        self.parts, self.names = parts, names
        self.kinds = frozenset().union(*(p.kinds for p in parts))

    @property
    def found(self) -> list[Violation]:
        return [v for p in self.parts for v in p.found]

    def feed(self, rec: Mapping[str, Any]) -> None:
        for p in self.parts:
            p.feed(rec)

    def advance(self, source: Any, t: float) -> None:
        for p in self.parts:
            p.advance(source, t)

    def finish(self) -> None:
        for p in self.parts:
            p.finish()

    def confirmed(self) -> list[Violation]:
        return [v for p in self.parts for v in p.confirmed()]


def online_checker(checkers: Mapping[str, Any], clients: Iterable[Any] = ()) -> Any:
    """The online checks for a run's offline checkers: the lock checker's belief and effect
    overlaps (the kinds it fails on), the fencing checker's reused tokens, the counter's reads
    out of bounds (`clients`: the run's, whose files must all pass a read to bound it from
    above). None when no checker of the run can be followed online."""

    kinds: set[str] = set()
    names = None
    parts: list[Any] = []
    for c in checkers.values():
        if isinstance(c, LockChecker):
            kinds |= set(c.fail_on) & {"belief", "effect"}
            names = c.names
        elif isinstance(c, FencingChecker):
            kinds.add("reused-token")
            names = names or c.names
        elif isinstance(c, CounterChecker):
            parts.append(OnlineCounterChecker(c.add, c.read, clients))
    if kinds and names is not None:
        acquire, release, write = names
        parts.insert(0, OnlineLockChecker(acquire, release, write, kinds=kinds))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else OnlineChecks(parts, names)
