"""The abstract lock state a hunt's run reached, and how close it came, read from its history.

The hunt steers by the lock's state, not by the servers' code: at every record of a run's
history (clients' records and the nemesis's fault starts and ends, merged in time order) the
clients' belief (history/holding.py's `HoldState`) says who holds, who waits, each session's
state; the nemesis's records say which faults are in flight and whether the leader was hit.
`abstract()` folds that into a few words with small buckets, so a run reaches a handful of
states and a hunt a few dozen:

    holder=none|one|two+  queue=0|1|2+  session=<the holder's>/<the worst other's>
    age=-|<0.5|<0.8|<1|>1 (the oldest grant's age in leases)  leader=same|hit  faults=0|1|2+

where a session state is ok (connected, or none said), susp (SUSPENDED) or lost (LOST,
EXPIRED, CLOSED). `leader=hit` once a fault aimed at the leader started or a leader-changed
trigger fired: the history holds no reading of who leads, so a change is known by its cause.

`near_misses()` names what came close without breaking (docs/hunt.md): a grant within a small
margin of the release of a holder a fault silenced for a lease or more in its hold, a session
lost or suspended while its client held, an acquire that waited near its bound while nobody
held the lock. Each is something a fault did to the lock, never what contention does alone:
a queue's wait and a handoff after a long hold are a lock at work (with four clients holding
6 s each, every run had them, and a near miss that every run has tells the guidance nothing).
Pure: records in, words out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zkjepsen.faultkinds import KINDS
from zkjepsen.history.holding import ACQUIRE_FS, RELEASE_FS, Holding, HoldState

NEMESIS = "nemesis"  # nemesis/nemesis_log.py's process name
LOST = ("LOST", "EXPIRED", "CLOSED", "EXPIRED_SESSION")
SUSPENDED = ("SUSPENDED",)
# A grant this close (in leases) after the release of a holder that a fault silenced for a
# lease or more in its hold came close: its lease ran out, its release a little later, and the
# two overlap.
MARGIN_LEASES = 0.25
# An acquire that waited this share of its timeout while nobody held the lock came close to
# liveness's bound (time others held is a queue, not a hang: checker/liveness.py).
NEAR_WAIT = 0.5


def session_word(state: str | None) -> str:
    if state is None:
        return "ok"
    s = state.upper()
    if s in LOST:
        return "lost"
    if s in SUSPENDED:
        return "susp"
    return "ok"


def age_word(age_ns: int | None, lease_s: float) -> str:
    if age_ns is None:
        return "-"
    x = age_ns / 1e9 / lease_s if lease_s > 0 else 0.0
    for bound, word in ((0.5, "<0.5"), (0.8, "<0.8"), (1.0, "<1")):
        if x < bound:
            return word
    return ">1"


def _bucket(n: int, words: tuple[str, ...]) -> str:
    return words[min(n, len(words) - 1)]


def abstract(
    now: Holding, lease_s: float, leader_hit: bool, faults_in_flight: int, at_ns: int
) -> str:
    """One abstract state, as words."""
    holders = sorted(now.holders.items(), key=lambda h: h[1])  # oldest grant first
    holder = holders[0][0] if holders else None
    sessions = {c: session_word(s.state) for c, s in now.sessions.items()}
    rank = {"ok": 0, "susp": 1, "lost": 2}
    others = [w for c, w in sessions.items() if c != holder]
    worst = max(others, key=lambda w: rank[w]) if others else "ok"
    mine = sessions.get(holder, "ok") if holder is not None else "-"
    age = at_ns - holders[0][1] if holders else None
    return " ".join(
        (
            f"holder={_bucket(len(holders), ('none', 'one', 'two+'))}",
            f"queue={_bucket(len(now.queue), ('0', '1', '2+'))}",
            f"session={mine}/{worst}",
            f"age={age_word(age, lease_s)}",
            f"leader={'hit' if leader_hit else 'same'}",
            f"faults={_bucket(faults_in_flight, ('0', '1', '2+'))}",
        )
    )


@dataclass
class Reached:
    """What one run reached: its abstract states (first reached first) and its near misses."""

    states: list[str]
    near: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"states": self.states, "near": self.near}


def reached(
    records: Iterable[Mapping[str, Any]],
    lease_s: float,
    leader_faults: Iterable[str] = (),
    acquire_timeout_s: float | None = None,
) -> Reached:
    """The states a run's history reached and its near misses. `records`: the merged history
    (any order: sorted by time here); `leader_faults`: the fault kinds that aim at the
    leader; `acquire_timeout_s`: the clients' acquire timeout (None: waits are not judged)."""
    recs = sorted((r for r in records if isinstance(r.get("time"), int)), key=lambda r: r["time"])
    leaders = set(leader_faults)
    fold = HoldState()
    in_flight: set[Any] = set()
    leader_hit = False
    states: dict[str, None] = {}
    near = _Near(lease_s, acquire_timeout_s)
    for r in recs:
        who, at = r.get("process"), r["time"]
        if who == NEMESIS:
            v = _table(r.get("value"))
            if v.get("phase") == "start":
                in_flight.add(v.get("fault_id"))
                near.fault_started(v.get("fault_id"), r.get("f"), v.get("targets"), at)
                fired = _table(v.get("fired"))
                leader_hit |= r.get("f") in leaders or bool(fired.get("node"))
            elif v.get("phase") == "end":
                in_flight.discard(v.get("fault_id"))
                near.fault_ended(v.get("fault_id"), at)
        elif type(who) is int and who > 0:
            before = fold.value()
            fold.feed(who, r)
            near.see(who, r, before, fold.value())
        else:
            continue
        states.setdefault(abstract(fold.value(), lease_s, leader_hit, len(in_flight), at))
    return Reached(list(states), near.words())


def _table(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, dict) else {}


class _Near:
    """The near misses of one history, fed record by record with the state before and after
    each."""

    def __init__(self, lease_s: float, acquire_timeout_s: float | None) -> None:
        self.lease_ns = lease_s * 1e9
        self.timeout_ns = acquire_timeout_s * 1e9 if acquire_timeout_s else None
        self.last_release: tuple[int, int, int] | None = None  # (client, at, its hold's age)
        self.asked: dict[int, int] = {}
        # the silences aimed at a client: fault id -> [client, start, end or None]
        self.silences: dict[Any, list[Any]] = {}
        self.free: list[tuple[int, int]] = []  # closed spans in which nobody held the lock
        self.free_from: int | None = 0  # nobody holds from the start
        self.found: dict[str, None] = {}

    def fault_started(self, fault_id: Any, kind: Any, targets: Any, at: int) -> None:
        rule = KINDS[kind].power if isinstance(kind, str) and kind in KINDS else None
        if rule is None or rule.landed != "silence" or not isinstance(targets, list):
            return
        for t in targets:
            if isinstance(t, str) and t.startswith("c") and t[1:].isdigit():
                self.silences[(fault_id, t)] = [int(t[1:]), at, None]

    def fault_ended(self, fault_id: Any, at: int) -> None:
        for key, span in self.silences.items():
            if key[0] == fault_id and span[2] is None:
                span[2] = at

    def _silenced(self, client: int, since: int, at: int) -> bool:
        """Was `client` silenced for a lease or more within [since, at]?"""
        for c, start, end in self.silences.values():
            if c == client and min(end if end is not None else at, at) - max(start, since) >= (
                self.lease_ns
            ):
                return True
        return False

    def _free_within(self, start: int, end: int) -> int:
        """How long nobody held the lock within [start, end] (ns)."""
        spans = [*self.free, *([(self.free_from, end)] if self.free_from is not None else [])]
        return sum(max(0, min(b, end) - max(a, start)) for a, b in spans)

    def see(self, client: int, r: Mapping[str, Any], before: Holding, after: Holding) -> None:
        f, typ, at = r.get("f"), r.get("type"), r["time"]
        if f in RELEASE_FS and typ == "invoke" and client in before.holders:
            since = before.holders[client]
            if self._silenced(client, since, at):  # its lease ran out in its hold
                self.last_release = (client, at, at - since)
        elif f in ACQUIRE_FS and typ == "invoke":
            self.asked[client] = at
        elif f in ACQUIRE_FS and typ == "ok":
            self._granted(client, at)
        elif f in ACQUIRE_FS and typ in ("fail", "info"):
            self._waited(client, at, "gave up")
        elif typ == "event" and f == "session-state" and client in before.holders:
            word = session_word(str(r.get("value")))
            if word != "ok":
                what = "lost" if word == "lost" else "suspended"
                self.found.setdefault(f"client {client}'s session {what} while it held")
        if before.holders and not after.holders:
            self.free_from = at
        elif after.holders and not before.holders and self.free_from is not None:
            self.free.append((self.free_from, at))
            self.free_from = None

    def _waited(self, client: int, at: int, how: str) -> None:
        asked = self.asked.pop(client, None)
        if asked is None or not self.timeout_ns:
            return
        free = self._free_within(asked, at)
        if free >= NEAR_WAIT * self.timeout_ns:
            self.found.setdefault(
                f"client {client} waited {(at - asked) / 1e9:.1f} s ({free / 1e9:.1f} s of it "
                f"while nobody held) of its {self.timeout_ns / 1e9:g} s acquire timeout, {how}"
            )

    def _granted(self, client: int, at: int) -> None:
        self._waited(client, at, "granted")
        last = self.last_release
        if last is None or last[0] == client or self.lease_ns <= 0:
            return
        gap = at - last[1]
        if 0 <= gap <= MARGIN_LEASES * self.lease_ns:
            self.found.setdefault(
                f"client {client} granted {gap / 1e9:.2f} s after client {last[0]} released "
                f"a hold of {last[2] / self.lease_ns:.1f} leases in which a fault silenced it "
                "for a lease or more"
            )

    def words(self) -> list[str]:
        return list(self.found)
