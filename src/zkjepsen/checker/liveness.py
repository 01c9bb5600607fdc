"""Liveness of a lock after the faults: once every fault has healed, the lock must make progress.

Safety checkers cannot see a lock that stops granting: an orphan lock node (a create whose
response was lost, by a recipe that cannot find its own node again) or a watch set on a node
that vanished leaves waiters blocked forever, and an empty history of holds is trivially
exclusive. Definition: the *quiet period* starts a grace time after the last fault ended (or at
the start of the history when there were none) and runs to the last client op; the grace is
`grace_s` or 1.5x the longest session timeout the clients recorded, whichever is longer (a
stale holder's lock node may live that long). If clients invoked `acquire` in the quiet period,
it lasted at least `min_quiet_s`, and no acquire completed `ok` in it, the lock is stuck:
invalid. A quiet period too short to judge is reported as `judged: false` and does not change
the verdict (the recovery phase of the run was too short for this check).

A *stall* is stuck too: a stretch of the quiet period at least `stall_s` long (and 3x the
longest session timeout) in which no acquire completed `ok` while some client's acquire was
pending for that whole stretch, or who kept asking all along (attempts that time out, each
followed by the next within `retry_gap_s`). An orphan node blocks waiters that asked before the
heal and never ask again, or times out every attempt of those that retry; only a harness timeout
(or the end of the run) frees them, and the grants that follow must not hide the stall. Only
time nobody else may have held the lock counts towards a stall, as towards the bound: a waiter
behind one hold longer than `stall_s` is in a queue (a scenario's 20 s holds were called stuck).

**The bound.** A service declares how long a lock may stay unavailable after a heal: its
session (or lease) timeout, the life of a dead holder's node, plus its election time (a new
leader, a restarted server serving again; `BackendInfo.election_s`). After the last heal every
client that still wants the lock must get it within that bound, not counting the time other
clients held it (a queue is not a hang): a client that waited longer while nobody held the lock
is stuck, named with how long it waited (`bound_s`; the verdict line prints the bound). Stuck
but safe is a finding: liveness INVALID, whatever the safety checkers say.

Fairness is reported, not judged: the details carry `fairness` (acquisitions and longest wait
per client, and who starved; see fairness.py), and starvation is noted in the verdict line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zkjepsen.checker import Result, Violation
from zkjepsen.checker.fairness import fairness, fault_grace_ns, starved_note
from zkjepsen.checker.lease import fault_spans
from zkjepsen.checker.nature import kills_of
from zkjepsen.history import NEMESIS, History, Op, fault_windows

S = 1_000_000_000


class LivenessChecker:
    KINDS = ("stuck",)

    def __init__(
        self,
        acquire: Iterable[str] = ("acquire",),
        release: Iterable[str] = ("release",),
        grace_s: float = 5.0,
        min_quiet_s: float = 3.0,
        stall_s: float = 15.0,
        retry_gap_s: float = 1.0,
        bound: tuple[float, float] | None = None,
    ) -> None:
        self.stall_ns = int(stall_s * S)
        self.acquire = frozenset(acquire)
        self.release = frozenset(release)
        self.grace_ns = int(grace_s * S)
        self.min_quiet_ns = int(min_quiet_s * S)
        # A client that gives up after a short timeout and asks again within this counts as
        # waiting all along (a lock stuck behind an orphan node times every attempt out).
        self.retry_gap_ns = int(retry_gap_s * S)
        # (session or lease timeout, election time) in seconds: the service's declared bound
        self.bound = bound

    def with_bound(self, session_s: float, election_s: float) -> LivenessChecker:
        """This checker judging every waiter by the bound session_s + election_s."""
        self.bound = (session_s, election_s)
        return self

    def check(self, history: History | list[Op]) -> Result:
        ops = history.ops if isinstance(history, History) else list(history)
        client_ops = [op for op in ops if op.process != NEMESIS and op.type != "event"]
        if not client_ops:
            return Result("unknown", {"reason": "no client ops: progress was not tested"})
        windows = fault_windows(ops)
        grace_ns = fault_grace_ns(ops, self.grace_ns)
        healed = max(
            (w.end if w.end is not None else client_ops[-1].time for w in windows),
            default=client_ops[0].time,
        )
        quiet_start = healed + grace_ns if windows else client_ops[0].time
        quiet_end = client_ops[-1].time
        details: dict[str, Any] = {"quiet_start": quiet_start, "quiet_end": quiet_end}
        # Fairness is reported, not judged: a lock that lets some clients starve while others
        # hold it still excludes and still makes progress (see fairness.py).
        details["fairness"] = fair = fairness(ops, self.acquire, self.retry_gap_ns / S)
        if fair["starved"]:
            details["note"] = starved_note(fair)
        waiting, granted = self._after_heal(client_ops, quiet_start)
        details |= {"acquires_granted_after_heal": granted, "clients_waiting": waiting}
        # 2x the grace: at least 3x the longest session timeout
        stall = self._stall(
            history if isinstance(history, History) else History(ops),
            quiet_start,
            quiet_end,
            max(self.stall_ns, 2 * grace_ns),
        )
        if stall is not None:
            return _stuck(details, stall)
        if self.bound is not None:
            details["bound_s"] = sum(self.bound)
            details["bound"] = bound_text(self.bound)
            over = self._over_bound(history, healed, quiet_end)
            if over is not None:
                return _stuck(details, over)
            details["note"] = "; ".join(
                x for x in (details.get("note"), f"every waiter within {details['bound']}") if x
            )
        if not waiting:
            return Result(True, {**details, "reason": "no acquire attempted after the heal"})
        if quiet_end - quiet_start < self.min_quiet_ns:
            return Result(
                True,
                {
                    **details,
                    "judged": False,
                    "reason": "the quiet period "
                    "after the last fault is too short to judge progress",
                },
            )
        if granted == 0:
            stuck = {
                "clients": waiting,
                "start": quiet_start,
                "end": quiet_end,
                "reason": f"no acquire succeeded in the {(quiet_end - quiet_start) / S:.1f}"
                " s after every fault healed, though clients kept asking",
            }
            return _stuck(details, stuck)
        return Result(True, {**details, "judged": True})

    def _after_heal(self, client_ops: list[Op], quiet_start: int) -> tuple[list[Any], int]:
        """The clients that invoked an acquire in the quiet period, and the acquires granted
        in it. An acquire its client's own program broke off (a protocol fault, `client-error`:
        it closed its stdout, died, answered junk) asked the lock nothing: a program broken on
        every request is no lock that stopped granting (exercised says it was not tested)."""
        broken = _broken_off(client_ops, self.acquire)
        waiting = sorted(
            {
                op.actor
                for op in client_ops
                if op.type == "invoke"
                and op.f in self.acquire
                and quiet_start <= op.time
                and op.index not in broken
            },
            key=str,
        )
        granted = sum(
            1
            for op in client_ops
            if op.type == "ok" and op.f in self.acquire and quiet_start <= op.time
        )
        return waiting, granted

    def _stall(
        self, history: History, start: int, end: int, min_ns: float
    ) -> dict[str, Any] | None:
        """The first stretch of [start, end] of at least min_ns with no acquire granted while
        some acquire was pending all along, and at least min_ns of that wait while no other
        client held the lock (a waiter behind one long hold is a queue, not a stall: the
        bound's rule); None if there is none."""
        every = history.calls(validate=False)
        calls = [c for c in every if c.invoke.f in self.acquire]
        held = _holds(every, self.acquire, self.release, end, _deaths(history.ops, end))
        grants = sorted(
            c.complete.time
            for c in calls
            if c.complete is not None
            and c.complete.type == "ok"
            and start <= c.complete.time <= end
        )
        edges = [start, *grants, end]
        for a, b in zip(edges, edges[1:], strict=False):
            if b - a < min_ns:
                continue
            waited = sorted(
                {
                    actor
                    for actor, lo, hi in _asking(calls, end, self.retry_gap_ns)
                    if min(b, hi) - max(a, lo) >= min_ns
                    and _free(held, actor, max(a, lo), min(b, hi)) >= min_ns
                },
                key=str,
            )
            if waited:
                return {
                    "clients": waited,
                    "start": a,
                    "end": b,
                    "reason": f"no acquire succeeded for {(b - a) / S:.1f} s after every "
                    f"fault healed while {len(waited)} client(s) waited all along",
                }
        return None

    def _over_bound(
        self, history: History | list[Op], healed: int, end: int
    ) -> dict[str, Any] | None:
        """The client that waited longest past the bound after the heal, not counting the
        time others held the lock; None if every waiter got it within the bound."""
        assert self.bound is not None
        bound_ns = int(sum(self.bound) * S)
        hist = history if isinstance(history, History) else History(history)
        calls = hist.calls(validate=False)
        held = _holds(calls, self.acquire, self.release, end, _deaths(hist.ops, end))
        asking = [c for c in calls if c.invoke.f in self.acquire]
        worst: tuple[int, Any, int, int] | None = None
        for actor, lo, hi in _waits(asking, end, self.retry_gap_ns):
            lo = max(lo, healed)
            if hi <= lo:
                continue
            free = _free(held, actor, lo, hi)
            if free > bound_ns and (worst is None or free > worst[0]):
                worst = (free, actor, lo, hi)
        if worst is None:
            return None
        free, actor, lo, hi = worst
        return {
            "clients": [actor],
            "start": lo,
            "end": hi,
            "waited_s": round((hi - lo) / S, 1),
            "bound": bound_text(self.bound),
            "reason": f"client {actor} waited {(hi - lo) / S:.1f} s after the last heal "
            f"without the lock ({free / S:.1f} s of it while nobody held it), past the bound "
            f"of {bound_text(self.bound)}",
        }


def _broken_off(client_ops: list[Op], acquire: frozenset[str]) -> set[int]:
    """The indexes of the acquire invokes whose op ended in a protocol fault of the client's
    own program (`client-error`)."""
    pending: dict[Any, int] = {}
    out: set[int] = set()
    for op in client_ops:
        if op.f not in acquire or op.type == "event":
            continue
        if op.type == "invoke":
            pending[op.process] = op.index
        elif op.process in pending:
            invoked = pending.pop(op.process)
            if op.type != "ok" and op.extra.get("error") == "client-error":
                out.add(invoked)
    return out


def bound_text(bound: tuple[float, float]) -> str:
    """'15.5 s (session 3 s + election 12.5 s)'"""
    session, election = bound
    return f"{session + election:g} s (session {session:g} s + election {election:g} s)"


def _deaths(ops: list[Op], end: int) -> dict[Any, list[int]]:
    """client -> when a fault killed its process (nature.kills_of: a kind that kills clients,
    aimed at it, seen to act there), each when it went in (`silent_from`)."""
    kills = kills_of(fault_spans([op for op in ops if op.process == NEMESIS], end))
    return {c: sorted(f.silent_from() for f in fs) for c, fs in kills.items()}


def _holds(
    calls: list,
    acquire: frozenset[str],
    release: frozenset[str],
    end: int,
    deaths: dict[Any, list[int]] | None = None,
) -> list[tuple[Any, int, int]]:
    """(actor, from, to): who may have held the lock when: from each acquire that did not
    fail (ok, or unknown) to the end of that client's next release (a failed release: to its
    next acquire), or `end`; or to its process's death (`deaths`), if that came first. A dead
    client holds nothing: what it left on the servers (a node, a key) is the lock's to free
    within the bound, and a waiter kept out by it past the bound is stuck (a key put with a
    lease of 2000 s where 2 s was meant, its holder killed, was called "every waiter within
    7 s" while three waited 19-22 s)."""
    deaths = deaths or {}
    by_actor: dict[Any, list] = {}
    for c in calls:
        if c.invoke.f in acquire or c.invoke.f in release:
            by_actor.setdefault(c.invoke.actor, []).append(c)
    out = []
    for actor, cs in by_actor.items():
        start: int | None = None
        for c in cs:
            done = c.complete.time if c.complete is not None else end
            if c.invoke.f in acquire:
                if start is not None:  # asking again: the last hold ended by then
                    out.append((actor, start, c.invoke.time))
                ok = c.complete is not None and c.complete.type != "fail"
                start = done if ok else None
            elif start is not None and c.complete is not None and c.complete.type == "ok":
                out.append((actor, start, done))
                start = None
        if start is not None:
            out.append((actor, start, end))
    return [_until_death(h, deaths.get(h[0], ())) for h in out]


def _until_death(hold: tuple[Any, int, int], deaths: Iterable[int]) -> tuple[Any, int, int]:
    """The hold cut at the first death of its client inside it."""
    actor, lo, hi = hold
    return actor, lo, min([hi, *(t for t in deaths if lo <= t < hi)])


def _waits(calls: list, end: int, gap_ns: int) -> list[tuple[Any, int, int]]:
    """(actor, from, to): each client's waits for the lock: its acquire attempts joined where
    the next began within gap_ns of the last one's end, each wait ending at a grant (or a
    pending call's `end`)."""
    by_actor: dict[Any, list[Any]] = {}
    for c in calls:
        by_actor.setdefault(c.invoke.actor, []).append(c)
    out = []
    for actor, cs in by_actor.items():
        lo: int | None = None
        hi = 0
        for c in sorted(cs, key=lambda c: c.invoke.time):
            if lo is not None and c.invoke.time - hi > gap_ns:
                out.append((actor, lo, hi))
                lo = None
            lo = c.invoke.time if lo is None else lo
            hi = c.complete.time if c.complete is not None else end
            if c.complete is not None and c.complete.type == "ok":
                out.append((actor, lo, hi))
                lo = None
        if lo is not None:
            out.append((actor, lo, hi))
    return out


def _free(held: list[tuple[Any, int, int]], actor: Any, lo: int, hi: int) -> int:
    """How much of [lo, hi] no client but `actor` may have held the lock."""
    return (hi - lo) - _covered([(a, b) for who, a, b in held if who != actor], lo, hi)


def _covered(spans: list[tuple[int, int]], lo: int, hi: int) -> int:
    """How much of [lo, hi] the union of spans covers."""
    total, reach = 0, lo
    for a, b in sorted(spans):
        a, b = max(a, reach), min(b, hi)
        if b > a:
            total += b - a
            reach = b
    return total


def _stuck(details: dict[str, Any], stuck: dict[str, Any]) -> Result:
    """The verdict on a lock stuck (or stalled) over stuck's window, for its clients."""
    return Result(
        False,
        {**details, "stuck": [stuck]},
        [
            Violation(
                "stuck",
                tuple(stuck["clients"]),
                stuck["start"],
                stuck["end"],
                evidence={k: stuck[k] for k in ("reason", "bound", "waited_s") if k in stuck},
            )
        ],
    )


def _asking(calls: list, end: int, gap_ns: int) -> list[tuple[Any, int, int]]:
    """(actor, from, to): each client's stretches of asking for the lock, its acquire calls
    joined where the next began within gap_ns of the last one's end (a pending call: `end`)."""
    by_actor: dict[Any, list[tuple[int, int]]] = {}
    for c in calls:
        done = c.complete.time if c.complete is not None else end
        by_actor.setdefault(c.invoke.actor, []).append((c.invoke.time, done))
    out = []
    for actor, spans in by_actor.items():
        spans.sort()
        lo, hi = spans[0]
        for a, b in spans[1:]:
            if a - hi <= gap_ns:
                hi = max(hi, b)
            else:
                out.append((actor, lo, hi))
                lo, hi = a, b
        out.append((actor, lo, hi))
    return out
