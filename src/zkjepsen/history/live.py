"""A run's live history: the ONE follower of its clients' files (and nemesis.jsonl).

While a run goes, several parts want what the clients write as they write it: the display, the
online checker and the stop conditions (run/online.py), the triggers (nemesis/arming.py), the
nemesis's `holder` target, a power loss's wait for an acknowledged write, the client clock's
landing, the pool's wait for every client's session, and (issue 50) the hunt. Each used to tail
the files itself, some from byte 0 at every arming. Now one `LiveHistory` per run (the client
pool makes it, next to the files' folder) reads each file once, only the bytes added since the
last read, parses each record once, and hands it to every subscriber:

- `poll()` catches up (any thread may call it; one read at a time). Nothing polls on its own
  schedule: each part calls `poll()` when it wants the newest records, as it tailed before.
- `subscribe(replay=...)` gives a `Subscription` whose `take()` returns the batches
  `(source, records)` read since (with `replay`: everything read before it too). A source is a
  client's number (0: the runner's own session) or `NEMESIS` for nemesis.jsonl. Subscribing
  catches up first, so a subscriber that does not replay sees exactly what is written after it
  subscribed (a trigger's arming). `subscribe(callback)` calls `callback(source, records)`
  instead, in the polling thread; a callback that raises is dropped (its `error` says why),
  and every other subscriber still gets the batch.
- `holding()` catches up and returns who holds now (history/holding.py's `Holding`).
- `records(source, start)` the records of one source read so far, from `start` on;
  `cursor(source)` returns them a poll at a time (a wait for one client's next record).

A record is a dict as the client wrote it; a half-written last line waits for its end, a file
may appear at any time (a client restarted, a late start), and a line that is not a record
(a SIGKILL cut it) is skipped, as the tailer always did. A file that gets shorter (a restarted
client cuts off its killed life's half line, then appends) is followed on from its complete
content, each record after the cut handed out once and whole (the Tailer's docstring says how).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from zkjepsen.history import NEMESIS
from zkjepsen.history.holding import Holding, HoldState
from zkjepsen.history.jsonl import Tailer, client_of

Source = int | str  # a client's number, or NEMESIS (nemesis.jsonl: the nemesis, the observer)
Batch = tuple[Source, list[dict[str, Any]]]
Callback = Callable[[Source, list[dict[str, Any]]], None]


class RunFiles(Protocol):
    """Where a run's live files are (a `store.RunDir`, named structurally: the store is a
    sibling floor)."""

    def client_histories(self) -> list[Path]: ...
    @property
    def nemesis_log(self) -> Path: ...


class Subscription:
    """What one subscriber has been handed and not yet taken (or its callback)."""

    def __init__(self, callback: Callback | None = None) -> None:
        self.callback = callback
        self.error: BaseException | None = None  # why its callback was dropped
        self._inbox: list[Batch] = []
        self._lock = threading.Lock()

    def deliver(self, source: Source, records: list[dict[str, Any]]) -> None:
        if self.callback is not None:
            self.callback(source, records)
            return
        with self._lock:
            self._inbox.append((source, records))

    def take(self) -> list[Batch]:
        """The batches delivered since the last `take()`, oldest first."""
        with self._lock:
            out, self._inbox = self._inbox, []
        return out


class LiveHistory:
    """The follower (see the module docstring). `find` lists the clients' files (the run
    layout's `client_histories`: files may appear at any time); `nemesis_log`, if given, is
    followed as source `NEMESIS`."""

    def __init__(self, find: Callable[[], Iterable[Path]], nemesis_log: Path | None = None) -> None:
        self.find = find
        self._tailers: dict[Path, tuple[Source, Tailer]] = {}
        if nemesis_log is not None:
            self._tailers[Path(nemesis_log)] = (NEMESIS, Tailer(nemesis_log))
        self._records: dict[Source, list[dict[str, Any]]] = {}
        self._subs: list[Subscription] = []
        self._holds = HoldState()
        self._lock = threading.RLock()
        self.reads = 0  # file reads so far (each a read of new bytes only)

    @classmethod
    def of_run(cls, run: RunFiles) -> LiveHistory:
        return cls(run.client_histories, run.nemesis_log)

    def poll(self) -> None:
        """Read what every file gained since the last poll, once, and hand it out."""
        with self._lock:
            for p in self.find():
                path = Path(p)
                if path not in self._tailers:
                    client = client_of(path)
                    if client is None:
                        continue  # not a client's file (`client-x.jsonl`): no source
                    self._tailers[path] = (client, Tailer(path))
            for source, tailer in list(self._tailers.values()):
                self.reads += 1
                records = tailer.poll()
                if records:
                    self._hand_out(source, records)

    def _hand_out(self, source: Source, records: list[dict[str, Any]]) -> None:
        self._records.setdefault(source, []).extend(records)
        for r in records:
            self._holds.feed(source, r)
        for sub in list(self._subs):
            try:
                sub.deliver(source, records)
            except Exception as e:  # noqa: BLE001 - one subscriber's fault is its own
                sub.error = e
                self._subs.remove(sub)

    def subscribe(self, callback: Callback | None = None, replay: bool = False) -> Subscription:
        """A subscriber from now on: with `replay`, first everything read so far (a batch per
        source); without, only what is written after this call (it catches up first)."""
        sub = Subscription(callback)
        with self._lock:
            self.poll()
            if replay:
                for source, records in self._records.items():
                    try:
                        sub.deliver(source, list(records))
                    except Exception as e:  # noqa: BLE001 - as in _hand_out
                        sub.error = e
                        return sub
            self._subs.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    def holding(self) -> Holding:
        """Who holds now, after catching up (history/holding.py)."""
        with self._lock:
            self.poll()
            return self._holds.value()

    def records(self, source: Source, start: int = 0) -> list[dict[str, Any]]:
        """The records of `source` read so far, from the `start`-th on (no catching up: call
        `poll()` first for the newest)."""
        with self._lock:
            return list(self._records.get(source, ())[start:])

    def count(self, source: Source) -> int:
        """How many records of `source` have been read (a cursor for `records`)."""
        with self._lock:
            return len(self._records.get(source, ()))

    def sources(self) -> list[Source]:
        with self._lock:
            return list(self._records)

    def cursor(self, source: Source, from_now: bool = False) -> Cursor:
        """A reader of one source's records through this history: each `poll()` catches up
        and returns that source's records it has not returned yet (from the first, or, with
        `from_now`, from what is written after this call)."""
        with self._lock:
            if from_now:
                self.poll()
            return Cursor(self, source, self.count(source) if from_now else 0)


class Cursor:
    """One source's records, each returned once (`LiveHistory.cursor`)."""

    def __init__(self, live: LiveHistory, source: Source, start: int) -> None:
        self.live, self.source, self.seen = live, source, start

    def poll(self) -> list[dict[str, Any]]:
        """Catch the history up, then `take()`."""
        self.live.poll()
        return self.take()

    def take(self) -> list[dict[str, Any]]:
        """The records read so far that this cursor has not returned yet (no file read)."""
        fresh = self.live.records(self.source, self.seen)
        self.seen += len(fresh)
        return fresh
