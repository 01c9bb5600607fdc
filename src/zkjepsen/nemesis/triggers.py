"""Faults fired by events in the live history, not by the clock.

A timed fault (`pause-client@4.0s`) meets a different interleaving on every run, so a reproducer
built from it fails one time in three. A triggered fault ("pause whoever just acquired the lock,
0.1 s later, for 1.5x the session timeout") meets the same interleaving every time: that is what
makes a proof repeat.

A `Trigger` is a predicate over history records plus a delay. It is armed when the nemesis
reaches it in the plan (after the previous fault has ended) and fires on the k-th matching record
written after that; the fault is aimed at the client the record names (target `trigger`) or at
its own target. Triggers are plain values: they serialise into schedule.json and print as the
generator call that makes them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from zkjepsen.history.holding import ACQUIRE_FS, RELEASE_FS, Holding
from zkjepsen.history.live import LiveHistory
from zkjepsen.spec import SHARED_MASTER

KINDS = ("acquired", "released", "session", "invoked", "leader-changed")
LANDS = ("acquired", "invoked")  # events that begin a state a fault can land inside
# Whom a firing names instead of the event's own client (`aim`), read from the live lock state
# at the match: the newest holder, the waiter first in line, the waiter queued last; for a
# server's fault aimed at `shared-master`, the newest holder whose grant's record names the
# servers that granted it (a master of it is then the target: nemesis/redlock.py). A match
# when nobody has that role does not count: the trigger waits for the next one.
AIMS = ("holder", "next-waiter", "any-waiter", SHARED_MASTER)


@dataclass(frozen=True)
class Trigger:
    kind: str  # one of KINDS
    client: int | None = None  # only this client's records (None: any client)
    state: str | None = None  # session: the session state (SUSPENDED, LOST, ...)
    f: str | None = None  # invoked: the operation (write, add, acquire ...)
    k: int = 1  # fire on the k-th match after arming
    delay_s: float = 0.0  # then wait this long before the fault starts
    # A fault aimed at the client the event names must land while what the event began is still
    # on (acquired: it still holds; invoked: the op is still pending). docker pause and a
    # sidecar's iptables take 0.1-1 s, so a short hold can end first: such a miss is undone at
    # once and the trigger re-armed, at most `retries` times (each attempt is in the history).
    retries: int = 0
    # invoked: fire only once the client's node is queued in this lock path behind another
    # (a child made after arming, not the lowest, owned by the client's session: QueueWatch): a
    # waiter killed before its create landed (0.4 s on a loaded machine) leaves nothing behind.
    waiting_in: str | None = None
    # Armed only once the service is whole again (every server serves, one leads: a server
    # restarted by the previous fault has synced): kills back to back otherwise hit a
    # restarted server mid-sync or leave no quorum. Backends that cannot say: armed at once.
    settled: bool = False
    # Name this role's client in the firing, not the event's (AIMS; None: the event's client).
    aim: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown trigger {self.kind!r}; one of {', '.join(KINDS)}")
        if self.kind == "session" and not self.state:
            raise ValueError("a session trigger needs the state it waits for")
        if self.kind == "invoked" and not self.f:
            raise ValueError("an invoked trigger needs the operation it counts")
        if self.k < 1 or self.delay_s < 0 or self.retries < 0:
            raise ValueError("a trigger fires on a k >= 1, waits a delay >= 0, retries >= 0 times")
        if self.waiting_in and self.kind != "invoked":
            raise ValueError("waiting_in needs an invoked trigger (the acquire that queues)")
        if self.retries and self.kind not in LANDS:
            raise ValueError(f"retries need an event that begins a state ({', '.join(LANDS)})")
        if self.aim is not None and self.aim not in AIMS:
            raise ValueError(f"unknown aim {self.aim!r}; one of {', '.join(AIMS)}")

    def matches(self, rec: dict[str, Any], client: int | None) -> bool:
        if self.client is not None and client != self.client:
            return False
        f, t = rec.get("f"), rec.get("type")
        if self.kind == "acquired":
            return f in ACQUIRE_FS and t == "ok"
        if self.kind == "released":
            return f in RELEASE_FS and t == "invoke"
        if self.kind == "session":
            return f == "session-state" and t == "event" and str(rec.get("value")) == self.state
        if self.kind == "invoked":
            return f == self.f and t == "invoke"
        return False

    def still_on(self, records: list[dict[str, Any]], event_ns: int, until_ns: int) -> bool:
        """Did the state the event began last until `until_ns`? `records`: the history of the
        client the event names. acquired: no release invoked since; invoked: the op has not
        completed since."""
        for r in records:
            at = r.get("time", 0)
            if at <= event_ns or at > until_ns:
                continue
            f, t = r.get("f"), r.get("type")
            if self.kind == "acquired" and f in RELEASE_FS and t == "invoke":
                return False
            if self.kind == "invoked" and f == self.f and t in ("ok", "fail", "info"):
                return False
        return True

    def to_json(self) -> dict[str, Any]:
        # retries only when set: schedules written before it existed read back the same
        return {
            k: v
            for k, v in asdict(self).items()
            if v is not None and (k not in ("retries", "settled") or v)
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Trigger:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def describe(self) -> str:
        """As the generator call that makes it (for emitted tests and `scenario list`)."""
        args = [
            f"{k}={v!r}"
            for k, v in self.to_json().items()
            if k != "kind" and v != {"k": 1, "delay_s": 0.0, "retries": 0, "settled": False}.get(k)
        ]
        name = {
            "acquired": "on_acquire",
            "released": "on_release",
            "session": "on_session",
            "invoked": "on_invoke",
            "leader-changed": "on_leader_change",
        }[self.kind]
        return f"{name}({', '.join(args)})"


@dataclass(frozen=True)
class Fired:
    at_ns: int  # history time of the record that fired it
    client: int | None  # the client the record names (None for leader changes)
    node: str | None = None  # the new leader, for leader changes
    record: dict[str, Any] | None = None


class TriggerWatch:
    """Follows the clients' records through the run's live history (and, for leader changes,
    the backend) from the moment it is armed; `poll()` returns the firing, once, when the k-th
    match has been written. `close()` ends its subscription."""

    def __init__(
        self,
        trigger: Trigger,
        live: LiveHistory,
        leader: Callable[[], str | None] | None = None,
        now_ns: Callable[[], int] | None = None,
    ) -> None:
        self.trigger, self.live = trigger, live
        # arm: what was written before now does not count (a leader change reads no records)
        self.sub = live.subscribe() if trigger.kind != "leader-changed" else None
        self.leader, self.now_ns = leader, now_ns
        self.first_leader = leader() if (leader and trigger.kind == "leader-changed") else None
        self.seen = 0

    def poll(self) -> Fired | None:
        t = self.trigger
        if t.kind == "leader-changed":
            current = self.leader() if self.leader else None
            if current is not None and current != self.first_leader:
                self.first_leader = current
                aimed = aimed_client(t.aim, self.live.holding(), None) if t.aim else None
                if t.aim and aimed is None:
                    return None  # nobody has the role now: this change does not count
                self.seen += 1
                if self.seen >= t.k:
                    return Fired(self.now_ns() if self.now_ns else 0, aimed, node=current)
            return None
        if self.sub is None:
            return None
        self.live.poll()
        hits: list[tuple[int, int, dict[str, Any]]] = []
        for source, records in self.sub.take():
            if not isinstance(source, int) or not source:
                continue  # the host's own session (client 0) is not a client under test
            hits += [(r.get("time", 0), source, r) for r in records if t.matches(r, source)]
        for at, c, r in sorted(hits, key=lambda h: h[0]):
            aimed = aimed_client(t.aim, self.live.holding(), c) if t.aim else c
            if aimed is None:
                continue  # nobody has the role now: this match does not count
            self.seen += 1
            if self.seen >= t.k:
                return Fired(at, aimed, record=r)
        return None

    def close(self) -> None:
        if self.sub is not None:
            self.live.unsubscribe(self.sub)


def aimed_client(aim: str | None, now: Holding, event_client: int | None) -> int | None:
    """The client with the role `aim` (AIMS) in the lock state `now`, other than the event's
    own client where another has the role; None when nobody has it."""
    if aim == "holder":
        return now.newest_holder()
    if aim == SHARED_MASTER:  # the holder whose masters a server's fault is aimed at
        return now.newest_holder(among=now.grants)
    queue = [c for c in now.queue if c != event_client] or list(now.queue)
    if not queue:
        return None
    return queue[0] if aim == "next-waiter" else queue[-1]


def grant_of(now: Holding, prefer: int | None = None) -> tuple[int, tuple[str, ...]] | None:
    """The holder a `shared-master` fault is aimed through, and the servers its grant's record
    names: `prefer` (the client the firing named) while it still holds a recorded grant, else
    the newest holder with one; None when no holder's record names its servers."""
    if prefer is not None and prefer in now.holders and now.grants.get(prefer):
        return prefer, now.grants[prefer]
    holder = now.newest_holder(among=[c for c, g in now.grants.items() if g])
    return None if holder is None else (holder, now.grants[holder])


def choose_master(
    granted: Iterable[str], names: Mapping[str, str], rng: random.Random
) -> tuple[str, list[str]] | None:
    """One server of a grant, drawn from the fault's own RNG (a plan replays), and every server
    the grant is on, by name: `granted` are the addresses the recipe recorded (`ip:port`),
    `names` the run's servers' names by address. An address no server has is left out (never
    guessed); None when none is left."""
    on = sorted({names[a] for a in granted if a in names}, key=_server_order)
    return (rng.choice(on), on) if on else None


def _server_order(name: str) -> tuple[int, str]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (int(digits) if digits else 0, name)


class QueueWatch:
    """Finds a client's node in a lock's queue on a ZooKeeper session of the nemesis's own
    (`session`: a started KazooClient). Nodes there when it was made are not counted.

    A client's node is the ephemeral one its session owns (`ephemeralOwner` among
    `sessions(client)`, the ids its history's `session` events name), whatever data a program
    stores in it (Curator: its host's address; go-zookeeper: nothing). A Python recipe that opens
    sessions of its own (recipes/blog.py) is found by the data the harness gives every Python
    recipe as its identifier, `client-N`, which that recipe stores in its node for this."""

    def __init__(
        self, session: Any, path: str, sessions: Callable[[int], set[int]] = lambda c: set()
    ) -> None:
        self.session, self.path, self.sessions = session, path, sessions
        self.before = set(self._children())

    def _children(self) -> list[str]:
        try:
            return list(self.session.get_children(self.path))
        except Exception:  # noqa: BLE001 - no such path yet, or a reconnect: nothing queued
            return []

    def find(self, client: int) -> tuple[str, int] | None:
        """The client's new node and how many nodes are ahead of it; None if it has none."""
        children = sorted(self._children(), key=lambda n: n[-10:])  # by sequence number
        want, owners = f"client-{client}".encode(), self.sessions(client)
        for i, name in enumerate(children):
            if name in self.before:
                continue
            try:
                data, stat = self.session.get(f"{self.path}/{name}")
            except Exception:  # noqa: BLE001 - gone meanwhile
                continue
            if getattr(stat, "ephemeralOwner", None) in owners or data == want:
                return name, i
        return None


def on_acquire(
    client: int | None = None,
    k: int = 1,
    delay_s: float = 0.0,
    retries: int = 0,
    settled: bool = False,
    aim: str | None = None,
) -> Trigger:
    return Trigger(
        "acquired",
        client=client,
        k=k,
        delay_s=delay_s,
        retries=retries,
        settled=settled,
        aim=aim,
    )


def on_release(
    client: int | None = None, k: int = 1, delay_s: float = 0.0, aim: str | None = None
) -> Trigger:
    return Trigger("released", client=client, k=k, delay_s=delay_s, aim=aim)


def on_session(
    state: str,
    client: int | None = None,
    k: int = 1,
    delay_s: float = 0.0,
    aim: str | None = None,
) -> Trigger:
    return Trigger("session", client=client, state=state, k=k, delay_s=delay_s, aim=aim)


def on_invoke(
    f: str,
    client: int | None = None,
    k: int = 1,
    delay_s: float = 0.0,
    retries: int = 0,
    waiting_in: str | None = None,
    aim: str | None = None,
) -> Trigger:
    return Trigger(
        "invoked",
        client=client,
        f=f,
        k=k,
        delay_s=delay_s,
        retries=retries,
        waiting_in=waiting_in,
        aim=aim,
    )


def on_leader_change(k: int = 1, delay_s: float = 0.0, aim: str | None = None) -> Trigger:
    return Trigger("leader-changed", k=k, delay_s=delay_s, aim=aim)
