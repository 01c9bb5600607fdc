"""Who holds the lock now, as the clients believe it: ONE small state machine over their records.

The live history (history/live.py) folds every client record into one `HoldState`; anything
that asks "who holds now" during a run (the nemesis's `holder` target, a power loss's acquirer,
the kill's holders, Redlock's restart) reads its value, a `Holding`. It is the clients' belief,
from their own files: what the service itself says is the observer's (run/observer.py), a
different source, and what the verdict says is the checkers' (checker/lock_observe.py, which
also weighs kills, errors and unknown outcomes on the whole history).

The rules (the ones the nemesis has always targeted by): an `ok` of an acquire (ACQUIRE_FS)
makes its client a holder from that record's time; an `invoke` of a release (RELEASE_FS) ends
it. Where that `ok` names the servers that granted it (`granted`: Redlock's masters that said
yes, recipes/redlock.py), they are the holder's grant until then. An acquire invoked and not
yet answered puts its client in the queue, in invoke order. A client's `session` events give
its session ids and timeout, its `session-state` events its session's state. The host's own
session (client 0) is not a client under test: left out. Pure: no file, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

ACQUIRE_FS = ("acquire", "lock", "elected")
RELEASE_FS = ("release", "unlock", "resign")


@dataclass(frozen=True)
class Session:
    """A client's session as its own records say: the latest `session-state` (None before
    any), every session id its `session` events named, the latest timeout they gave (ms)."""

    state: str | None = None
    ids: frozenset[int] = frozenset()
    timeout_ms: int | float | None = None


@dataclass(frozen=True)
class Holding:
    """Who holds now, as a value. `holders`: client -> history time (ns) of the grant it
    believes it holds; `queue`: clients whose acquire is in flight, oldest invoke first;
    `sessions`: client -> its `Session`; `at_ns`: the newest record folded in; `grants`:
    holder -> the servers its grant's record names (`granted`), for the holders whose record
    names them."""

    holders: Mapping[int, int] = field(default_factory=dict)
    queue: tuple[int, ...] = ()
    sessions: Mapping[int, Session] = field(default_factory=dict)
    at_ns: int = 0
    grants: Mapping[int, tuple[str, ...]] = field(default_factory=dict)

    def newest_holder(self, among: Iterable[int] | None = None) -> int | None:
        """The holder granted last (ties: the higher client), among `among` if given: it has
        the most of its critical section left."""
        allowed = None if among is None else set(among)
        held = [(t, c) for c, t in self.holders.items() if allowed is None or c in allowed]
        return max(held)[1] if held else None

    def grant_age_ns(self, client: int, now_ns: int | None = None) -> int | None:
        """How long `client` has held (to `now_ns`, or to the newest record); None: it does
        not hold."""
        since = self.holders.get(client)
        return None if since is None else (self.at_ns if now_ns is None else now_ns) - since

    def to_json(self) -> dict[str, Any]:
        return {
            "holders": {str(c): t for c, t in sorted(self.holders.items())},
            "queue": list(self.queue),
            "sessions": {
                str(c): {"state": s.state, "ids": sorted(s.ids), "timeout_ms": s.timeout_ms}
                for c, s in sorted(self.sessions.items())
            },
            "at_ns": self.at_ns,
            **(
                {"grants": {str(c): list(g) for c, g in sorted(self.grants.items())}}
                if self.grants
                else {}
            ),
        }


class HoldState:
    """The state machine: `feed(client, record)` one client's record at a time (each client's
    in its file's order), `value()` the `Holding` now."""

    def __init__(self) -> None:
        self.holders: dict[int, int] = {}
        self.queue: dict[int, int] = {}  # client -> its pending acquire's invoke time
        self.sessions: dict[int, Session] = {}
        self.grants: dict[int, tuple[str, ...]] = {}
        self.at_ns = 0

    def feed(self, client: Any, rec: Mapping[str, Any]) -> None:
        if type(client) is not int or client <= 0:
            return  # the host's own session (0), or a source that is not a client
        f, typ, at = rec.get("f"), rec.get("type"), rec.get("time", 0)
        if type(at) is int and at > self.at_ns:
            self.at_ns = at
        if f in ACQUIRE_FS:
            if typ == "invoke":
                self.queue[client] = at
            elif typ in ("ok", "fail", "info"):
                self.queue.pop(client, None)
                if typ == "ok":
                    self.holders[client] = at
                    granted = rec.get("granted")
                    if isinstance(granted, list) and granted:
                        self.grants[client] = tuple(str(g) for g in granted)
                    else:
                        self.grants.pop(client, None)
        elif f in RELEASE_FS and typ == "invoke":
            self.holders.pop(client, None)
            self.grants.pop(client, None)
        elif typ == "event" and f in ("session", "session-state"):
            self._session(client, f, rec.get("value"))

    def _session(self, client: int, f: str, value: Any) -> None:
        s = self.sessions.get(client, Session())
        if f == "session-state":
            s = Session(str(value), s.ids, s.timeout_ms)
        elif isinstance(value, dict):
            ms = value.get("timeout_ms")
            s = Session(s.state, s.ids | session_ids([value]), ms or s.timeout_ms)
        self.sessions[client] = s

    def value(self) -> Holding:
        queue = tuple(c for c, _ in sorted(self.queue.items(), key=lambda q: (q[1], q[0])))
        return Holding(
            MappingProxyType(dict(self.holders)),
            queue,
            MappingProxyType(dict(self.sessions)),
            self.at_ns,
            MappingProxyType(dict(self.grants)),
        )


def session_ids(values: Iterable[Mapping[str, Any]]) -> frozenset[int]:
    """The sessions `session` event values name (`session_id`, `0x…` per
    docs/client-protocol.md, or an int); ids that are not hex (another service's names for
    its session) are left out."""
    out: set[int] = set()
    for value in values:
        sid = value.get("session_id")
        if type(sid) is int:
            out.add(sid)
        elif isinstance(sid, str):
            try:
                out.add(int(sid, 16))
            except ValueError:  # not hex: another service's name for its session
                continue
    return frozenset(out)


def holding_of(records: Mapping[int, Iterable[Mapping[str, Any]]]) -> Holding:
    """The `Holding` after every client's records (client -> its records, in file order)."""
    state = HoldState()
    for client, recs in records.items():
        for r in recs:
            state.feed(client, r)
    return state.value()
