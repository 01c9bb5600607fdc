"""Lock checker: mutual exclusion as the clients believed it, and atomicity as the resource saw it.

Terms (all times are the history's monotonic ns):
- A **hold** is one acquisition. For an `ok` acquire its **belief** is [acquire ok, the client's
  next release invoke on that lock) - the SIGKILL of its process (a `kill-client` nemesis op
  naming it), end of history if it never releases, or the client's next
  acquire invoke on that lock if it re-acquires without releasing. The **careful** belief (an
  application that stops at the first sign of trouble) also ends at the client's own SUSPENDED or
  LOST session event. An `info` acquire is a **maybe** hold over [acquire invoke, same end): it
  may have been granted at any time after the invoke. Clients are linked across retired
  processes by the `client` field; a history without it cannot link them, so a belief ends at
  an `info` op of its process (counted in `beliefs_cut_at_retirement`).
- **Belief overlap**: two definite holds of the same lock by different clients whose beliefs
  intersect (for a mode-aware rwlock: unless both are read holds). Involving a maybe hold, the
  overlap is only "possible" and never makes the verdict invalid on its own.
- **Effect overlap** (atomicity broken) on one resource: two accepted (`ok`) writes w and w'
  carrying tokens t < t' (t' was granted later in lock order) where w is NOT certainly before w'
  in real time, i.e. w completed after w' was invoked. Either w' completed before w was invoked:
  the resource certainly accepted the smaller token after the larger ("stale-after-newer", out of
  lock order); or the two writes were in flight at once ("interleaved"): each write lies inside
  its holder's belief, so the holders' beliefs overlapped and the resource took writes from both,
  in an order nobody can show to be lock order. A belief overlap with no effect overlap between
  the same two holds is a **near miss** (fencing, or luck, kept the data atomic).
- A `release` recorded without its lock key ends the client's only open hold; if the client
  holds several locks it is a bad line (exit 254), since guessing could hide an overlap.

Every violation names both clients (`client` when recorded, else the process), its window, and
the nemesis faults active in that window. Cost: one pass over the history, then a sort and a
sweep over interval endpoints per lock and per resource (O(n log n)).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from operator import itemgetter
from typing import Any

from zkjepsen.checker import Result, Violation
from zkjepsen.errors import BadInput
from zkjepsen.history import NEMESIS, History, Op, fault_windows, faults_during
from zkjepsen.history.stream import Record, paused_gc, records

INF = float("inf")


class Hold:
    """One acquisition (see the module docstring). Plain classes here, not dataclasses:
    `zkjepsen check --model lock` should not import dataclasses+inspect at every start."""

    __slots__ = ("client", "process", "key", "token", "start", "end", "careful_end", "maybe",
                 "mode", "seq", "node")

    def __init__(self, client: Any, process: Any, key: Any, token: Any,
                 start: int,  # acquire ok (or acquire invoke for a maybe hold)
                 end: float = INF,  # release invoke (or re-acquire invoke); INF: held to the end
                 careful_end: float = INF, maybe: bool = False, mode: str = "write",
                 seq: Any = None, node: Any = None) -> None:
        self.client, self.process, self.key, self.token = client, process, key, token
        self.start, self.end, self.careful_end, self.maybe = start, end, careful_end, maybe
        self.mode, self.seq, self.node = mode, seq, node

    def __repr__(self) -> str:
        return "Hold(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"

    def to_json(self) -> dict[str, Any]:
        return {"client": self.client, "process": self.process, "token": self.token,
                "seq": self.seq, "node": self.node, "mode": self.mode, "maybe": self.maybe,
                "start": self.start, "end": None if self.end == INF else self.end}


class Write:
    """An accepted write; `version` is the resource's version after it, when recorded."""

    __slots__ = ("client", "key", "token", "start", "end", "version")

    def __init__(self, client: Any, key: Any, token: Any, start: int, end: int,
                 version: int | None = None) -> None:
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


def _mode(invoked: Any, granted: dict[str, Any]) -> str:
    """"read" only when the invoke or the grant says so: a hold is exclusive by default."""
    if granted.get("mode") == "read":
        return "read"
    if isinstance(invoked, dict) and invoked.get("mode") == "read" and "mode" not in granted:
        return "read"
    return "write"


CLIENT_DEATHS = frozenset({"kill-client"})  # nemesis ops that end a client process


def _client_number(target: Any) -> Any:
    """Nemesis targets name clients `c3`; histories number them 3."""
    if isinstance(target, str) and target[:1] == "c" and target[1:].isdigit():
        return int(target[1:])
    return target


def observe(ops: Iterable[Op], acquire: Iterable[str] = ("acquire",),
            release: Iterable[str] = ("release",),
            write: Iterable[str] = ("write",)) -> LockObservations:
    """One pass: holds (with belief ends), accepted writes, counts of rejected/unknown writes.
    Reads the history as `Record` tuples (history/stream.py): a streamed history builds no Op."""
    acq, rel, wr = frozenset(acquire), frozenset(release), frozenset(write)
    obs = LockObservations()
    pending: dict[Any, Record] = {}  # process -> its open invoke
    open_holds: dict[tuple[Any, Any], Hold] = {}  # (client, lock key) -> hold still believed
    holds, writes = obs.holds, obs.writes
    t = 0
    for r in records(ops):
        _, t, p, typ, f, key, value, c = r
        if p == NEMESIS:
            obs.nemesis.append(Op(*r))
            # A SIGKILLed client process believes nothing any more: its holds end at the kill
            # (its lock node lingers until the session expires; a successor taking the lock
            # then is the recipe working, not a second believer).
            v = value if isinstance(value, dict) else {}
            if f in CLIENT_DEATHS and v.get("phase") == "start":
                dead = {_client_number(x) for x in v.get("targets") or ()}
                for ck in [ck for ck in open_holds if ck[0] in dead]:
                    h = open_holds.pop(ck)
                    h.end = t
                    h.careful_end = min(h.careful_end, t)
            continue
        client = p if c is None else c
        if typ == "invoke":
            pending[p] = r
            if f in rel or f in acq:
                if key is None and f in rel and (client, None) not in open_holds:
                    key = _keyless_release(open_holds, client, r)
                h = open_holds.pop((client, key), None)
                if h is not None:
                    h.end = t
                    if t < h.careful_end:
                        h.careful_end = t
            continue
        if typ == "event":
            if f == "client-error":
                # The program under test died or was killed by its recorder (client wire
                # protocol): like a SIGKILLed client, it believes nothing any more.
                for ck in [ck for ck in open_holds if ck[0] == client]:
                    h = open_holds.pop(ck)
                    h.end = min(h.end, t)
                    h.careful_end = min(h.careful_end, t)
            elif f == "session-state" and value in ("SUSPENDED", "LOST"):
                for (cl, _), h in open_holds.items():  # events are rare: a scan is fine
                    if cl == client and t < h.careful_end:
                        h.careful_end = t
            continue
        inv = pending.pop(p, None)
        if inv is None:
            continue
        f = inv[4]
        if typ == "info" and c is None and f not in acq:
            # The process is retired and, with no `client` field, its successor cannot be
            # linked to it: end its beliefs here rather than let them run to the end of time.
            for k in [k for (cl, k) in open_holds if cl == client]:
                h = open_holds.pop((client, k))
                h.end = min(h.end, t)
                h.careful_end = min(h.careful_end, t)
                obs.cut_at_retirement += 1
        if f in acq:
            if typ == "fail":
                continue
            v = value if value.__class__ is dict else {}
            maybe = typ != "ok"
            h = Hold(client, p, inv[5], v.get("token"), inv[1] if maybe else t, INF, INF,
                     maybe, _mode(inv[6], v), v.get("seq"), v.get("node"))
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
            elif typ == "fail":
                obs.rejected_writes += 1
            else:
                obs.unknown_writes += 1
    obs.last_time = t
    return obs


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


def interval_overlaps(holds: list[Hold], careful: bool = False) -> list[tuple[Hold, Hold]]:
    """Pairs of holds of the same lock by different clients whose (careful) beliefs intersect,
    by a sweep in start order: O(n log n + n * holds believed at once). Holds are mostly
    recorded in start order already, so the sort is near linear; a hold stays active while
    its end is after the current start (at equal times an end closes before a start opens)."""
    by_key: dict[Any, list[tuple[int, float, Hold]]] = {}
    for h in holds:
        end = h.careful_end if careful else h.end
        if end > h.start:
            hs = by_key.get(h.key)
            if hs is None:
                hs = by_key[h.key] = []
            hs.append((h.start, end, h))
    out = []
    first = itemgetter(0)
    for hs in by_key.values():
        hs.sort(key=first)  # stable: equal starts stay in history order
        active: list[tuple[int, float, Hold]] = []
        for item in hs:
            start, _, h = item
            if active:
                active = [a for a in active if a[1] > start]
                for _, _, o in active:
                    if o.client != h.client and not (o.mode == "read" and h.mode == "read"):
                        out.append((o, h))
            active.append(item)
    return out


def effect_overlaps(writes: list[Write]) -> list[tuple[Write, Write, str]]:
    """(w, w', kind) with token(w) < token(w') and w completed after w' was invoked (see the
    module docstring). For each w the witness is the largest-token write invoked before w
    completed: a prefix maximum over writes sorted by invoke time, found by bisection."""
    out = []
    by_key: dict[Any, list[Write]] = {}
    for w in writes:
        if w.token is not None:
            by_key.setdefault(w.key, []).append(w)
    for ws in by_key.values():
        if all(w.version is not None for w in ws):
            out += out_of_version_order(ws)
            continue
        ws.sort(key=lambda w: w.start)
        starts = [w.start for w in ws]
        best: list[Write] = []
        for w in ws:
            best.append(w if not best or w.token > best[-1].token else best[-1])
        for w in ws:
            j = bisect.bisect_left(starts, w.end) - 1  # writes invoked strictly before w ended
            if j >= 0 and best[j].token > w.token:
                newer = best[j]
                kind = "stale-after-newer" if newer.end < w.start else "interleaved"
                out.append((w, newer, kind))
    return out


def out_of_version_order(ws: list[Write]) -> list[tuple[Write, Write, str]]:
    """When every accepted write recorded the resource's version after it, the resource's own
    acceptance order is known exactly (no real-time guesswork about writes in flight): a write
    whose token is below the largest token accepted before it went in out of lock order."""
    out = []
    best: Write | None = None
    for w in sorted(ws, key=lambda w: w.version):
        if best is not None and w.token < best.token:
            out.append((w, best, "stale-after-newer"))
        if best is None or w.token > best.token:
            best = w
    return out


class LockChecker:
    """Belief and effect overlap for mutexes (and, with read/write modes, rwlocks).

    `acquire`/`release`/`write` name the ops (an election is acquire="elected",
    release="resign"). `fail_on` picks which findings make the verdict invalid.
    """

    def __init__(self, acquire: Iterable[str] = ("acquire",), release: Iterable[str] = ("release",),
                 write: Iterable[str] = ("write",),
                 fail_on: Iterable[str] = ("belief", "effect"), max_reported: int = 50) -> None:
        self.names = (tuple(acquire), tuple(release), tuple(write))
        self.fail_on = frozenset(fail_on)
        self.max_reported = max_reported

    def check(self, history: History | list[Op]) -> Result:
        # One pass (a streamed history is read once); the faults come from the nemesis ops
        # that pass kept.
        with paused_gc():
            obs = observe(history, *self.names)
        faults = fault_windows(obs.nemesis)
        end_of_test = obs.last_time

        def window(a: float, b: float) -> dict[str, Any]:
            return {"start": a, "end": None if b == INF else b}

        definite = [h for h in obs.holds if not h.maybe]
        belief, possible = [], []
        for a, b in interval_overlaps(obs.holds):
            rec = {"key": a.key, "clients": [a.client, b.client], "holds": [a, b],
                   **window(max(a.start, b.start), min(a.end, b.end))}
            (possible if a.maybe or b.maybe else belief).append(rec)
        careful = [{"key": a.key, "clients": [a.client, b.client], "holds": [a, b],
                    **window(max(a.start, b.start), min(a.careful_end, b.careful_end))}
                   for a, b in interval_overlaps(definite, careful=True)]
        effects = []
        for w, newer, kind in effect_overlaps(obs.writes):
            effects.append({"kind": kind, "resource": w.key, "clients": [w.client, newer.client],
                            "tokens": [w.token, newer.token],
                            "writes": [{"client": x.client, "token": x.token, "start": x.start,
                                        "end": x.end} for x in (w, newer)],
                            **window(min(w.start, newer.start), max(w.end, newer.end))})
        effect_tokens = {frozenset(e["tokens"]) for e in effects}
        near = [b for b in belief
                if frozenset((b["holds"][0].token, b["holds"][1].token)) not in effect_tokens]
        found = {"belief": belief, "careful": careful, "effect": effects}
        cap = self.max_reported
        for found_list in (belief, careful, effects, possible, near):
            for rec in found_list[:cap]:  # only what is reported: faults cost a scan each
                if "faults" not in rec:
                    rec["faults"] = faults_during(faults, rec["start"], rec["end"])
        violations = [_violation(kind, rec) for kind in ("belief", "careful", "effect")
                      if kind in self.fail_on for rec in found[kind][:cap]]
        details: dict[str, Any] = {
            "holds": len(obs.holds), "maybe_holds": len(obs.holds) - len(definite),
            "accepted_writes": len(obs.writes), "rejected_writes": obs.rejected_writes,
            "unknown_writes": obs.unknown_writes, "end_of_test": end_of_test,
            "beliefs_cut_at_retirement": obs.cut_at_retirement,
            "belief_overlap_count": len(belief), "belief_overlaps": belief[:cap],
            "careful_belief_overlap_count": len(careful), "careful_belief_overlaps": careful[:cap],
            "effect_overlap_count": len(effects), "effect_overlaps": effects[:cap],
            "near_miss_count": len(near), "near_misses": near[:cap],
            "possible_overlap_count": len(possible), "possible_overlaps": possible[:cap],
        }
        if any(found[k] for k in self.fail_on if k in found):
            return Result(False, details, violations, counts={
                k: len(found[k]) for k in self.fail_on if k in found and found[k]})
        if not definite:
            # Mutual exclusion holds trivially of a lock nobody got: nothing was tested.
            acq = "/".join(self.names[0])
            return Result("unknown", {**details, "reason": f"no {acq} succeeded: the lock was "
                                      "never held, so mutual exclusion was not tested"})
        return Result(True, details)


def _violation(kind: str, rec: dict[str, Any]) -> Violation:
    """A reported overlap as a typed violation; its dict stays in the details as before."""
    evidence = {k: v for k, v in rec.items() if k not in ("clients", "start", "end", "faults")}
    return Violation(kind, tuple(rec["clients"]), rec["start"], rec["end"],
                     tuple(rec.get("faults", ())), evidence)
