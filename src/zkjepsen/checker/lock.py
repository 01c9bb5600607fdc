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
  overlap is only "possible" and never makes the verdict invalid on its own. Each belief overlap
  has a **nature** (checker/nature.py, the one classification): `lease` when the earlier holder
  was frozen or cut off past its lease when the later one was granted (inherent to leases: only
  a fence saves it), `server-clock` or `state-lost` when a server's clock ran the lease out
  early or a server forgot it (the fault's nature), `defect` otherwise (beyond a lease's or a
  fault's nature: the lock under test is wrong), and `defect` too when the earlier holder
  still wrote, while the later held, more than a lease after the fault healed or after its own
  LOST (nature.py `past_excuse`). The verdict does not change with it; the counts say which
  kind the overlaps were.
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
from zkjepsen.checker.attribution import disk_fault_before
from zkjepsen.checker.lease import DEFECT, LEASE, UNJUDGED
from zkjepsen.checker.lock_observe import INF, Hold, Write, observe
from zkjepsen.checker.nature import NATURES, classify_splits
from zkjepsen.history import History, Op, fault_windows, faults_during
from zkjepsen.history.stream import paused_gc


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
        if in_version_order(ws):
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


def in_version_order(ws: list[Write]) -> bool:
    """Whether the resource's versions give its acceptance order: every accepted write
    recorded one, and no two the same. A version given twice means the resource's counter
    went back (a server restarted without it): sorting by version would then interleave the
    writes before it with those after, and invent order violations, so real time decides."""
    versions = [w.version for w in ws]
    return None not in versions and len(set(versions)) == len(versions)


def out_of_version_order(ws: list[Write]) -> list[tuple[Write, Write, str]]:
    """When every accepted write recorded the resource's version after it, the resource's own
    acceptance order is known exactly (no real-time guesswork about writes in flight): a write
    whose token is below the largest token accepted before it went in out of lock order."""
    out = []
    best: Write | None = None
    for w in sorted(ws, key=lambda w: w.version or 0):  # every one set (see the caller)
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

    KINDS = ("belief", "careful", "effect")  # the violations it can report

    def __init__(
        self,
        acquire: Iterable[str] = ("acquire",),
        release: Iterable[str] = ("release",),
        write: Iterable[str] = ("write",),
        fail_on: Iterable[str] = ("belief", "effect"),
        max_reported: int = 50,
    ) -> None:
        self.names = (tuple(acquire), tuple(release), tuple(write))
        self.fail_on = frozenset(fail_on)
        self.max_reported = max_reported
        self.lease_s: float | None = None  # the run's session/lease setting (with_lease)

    def with_lease(self, lease_s: float) -> LockChecker:
        """Judge each split's nature (checker/lease.py) against this lease, for a client whose
        history says no negotiated one."""
        self.lease_s = lease_s
        return self

    def check(self, history: History | list[Op]) -> Result:
        # One pass (a streamed history is read once); the faults come from the nemesis ops
        # that pass kept.
        with paused_gc():
            obs = observe(history, *self.names)
        faults = fault_windows(obs.nemesis)
        end_of_test = obs.last_time
        definite = [h for h in obs.holds if not h.maybe]
        belief, possible, careful = _belief_overlaps(obs.holds, definite)
        natures = classify_splits(
            belief,
            obs.nemesis,
            obs.sessions,
            self.lease_s,
            obs.last_time,
            obs.holds,
            obs.acts,
            obs.told,
            obs.abandons,
            obs.dark,
            obs.back,
        )
        effects = _effect_overlaps(obs.writes)
        effect_tokens = {frozenset(e["tokens"]) for e in effects}
        near = [
            b
            for b in belief
            if frozenset((b["holds"][0].token, b["holds"][1].token)) not in effect_tokens
        ]
        found = {"belief": belief, "careful": careful, "effect": effects}
        cap = self.max_reported
        for found_list in (belief, careful, effects, possible, near):
            for rec in found_list[:cap]:  # only what is reported: faults cost a scan each
                if "faults" not in rec:
                    rec["faults"] = faults_during(faults, rec["start"], rec["end"])
                    rec.update(disk_fault_before(faults, rec["start"]))
        violations = [
            _violation(kind, rec)
            for kind in ("belief", "careful", "effect")
            if kind in self.fail_on
            for rec in found[kind][:cap]
        ]
        details: dict[str, Any] = {
            "holds": len(obs.holds),
            "maybe_holds": len(obs.holds) - len(definite),
            "accepted_writes": len(obs.writes),
            "rejected_writes": obs.rejected_writes,
            "unknown_writes": obs.unknown_writes,
            "end_of_test": end_of_test,
            "beliefs_cut_at_retirement": obs.cut_at_retirement,
            "belief_overlap_count": len(belief),
            "belief_overlaps": belief[:cap],
            # each split's nature (checker/nature.py): beyond a lease's or a fault's, a defect
            # of the lock; `lease_split_count` the splits a lease allows, `nature_counts` each
            # fault's nature's
            "beyond_lease_count": natures[DEFECT],
            "lease_split_count": natures[LEASE],
            "nature_counts": {k: natures[k] for k in NATURES if natures[k]},
            "unjudged_lease_count": natures[UNJUDGED],
            "careful_belief_overlap_count": len(careful),
            "careful_belief_overlaps": careful[:cap],
            "effect_overlap_count": len(effects),
            "effect_overlaps": effects[:cap],
            "near_miss_count": len(near),
            "near_misses": near[:cap],
            "possible_overlap_count": len(possible),
            "possible_overlaps": possible[:cap],
        }
        if any(found[k] for k in self.fail_on if k in found):
            return Result(
                False,
                details,
                violations,
                counts={k: len(found[k]) for k in self.fail_on if k in found and found[k]},
            )
        if not definite:
            # Mutual exclusion holds trivially of a lock nobody got: nothing was tested.
            acq = "/".join(self.names[0])
            return Result(
                "unknown",
                {
                    **details,
                    "reason": f"no {acq} succeeded: the lock was "
                    "never held, so mutual exclusion was not tested",
                },
            )
        return Result(True, details)


def _window(a: float, b: float) -> dict[str, Any]:
    return {"start": a, "end": None if b == INF else b}


def _belief_overlaps(holds: list[Hold], definite: list[Hold]) -> tuple[list[Any], ...]:
    """The belief overlaps (both holds definite), the possible ones (a maybe hold in them),
    and the careful belief overlaps, as reported records."""
    belief: list[dict[str, Any]] = []
    possible: list[dict[str, Any]] = []
    pairs = interval_overlaps(holds)
    for a, b in pairs:
        rec = {
            "key": a.key,
            "clients": [a.client, b.client],
            "holds": [a, b],
            **_window(max(a.start, b.start), min(a.end, b.end)),
        }
        (possible if a.maybe or b.maybe else belief).append(rec)
    if any(h.careful_end != h.end for h in definite):
        careful_pairs = interval_overlaps(definite, careful=True)
    else:  # no session trouble: the careful sweep is the sweep over the definite holds
        careful_pairs = [(a, b) for a, b in pairs if not (a.maybe or b.maybe)]
    careful = [
        {
            "key": a.key,
            "clients": [a.client, b.client],
            "holds": [a, b],
            **_window(max(a.start, b.start), min(a.careful_end, b.careful_end)),
        }
        for a, b in careful_pairs
    ]
    return belief, possible, careful


def _effect_overlaps(writes: list[Write]) -> list[dict[str, Any]]:
    """`effect_overlaps` as reported records."""
    effects = []
    for w, newer, kind in effect_overlaps(writes):
        effects.append(
            {
                "kind": kind,
                "resource": w.key,
                "clients": [w.client, newer.client],
                "tokens": [w.token, newer.token],
                "writes": [
                    {"client": x.client, "token": x.token, "start": x.start, "end": x.end}
                    for x in (w, newer)
                ],
                **_window(min(w.start, newer.start), max(w.end, newer.end)),
            }
        )
    return effects


def _violation(kind: str, rec: dict[str, Any]) -> Violation:
    """A reported overlap as a typed violation; its dict stays in the details as before."""
    evidence = {k: v for k, v in rec.items() if k not in ("clients", "start", "end", "faults")}
    return Violation(
        kind,
        tuple(rec["clients"]),
        rec["start"],
        rec["end"],
        tuple(rec.get("faults", ())),
        evidence,
    )
