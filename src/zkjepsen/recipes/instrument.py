"""A counting proxy around a KazooClient: calls per method and watch notifications delivered.

Used by `benchmarks/herd.py` to measure the herd effect: pass `CountingClient(zk)` as the recipe's
client. Every watch callback a recipe registers is wrapped, so a notification is counted when
kazoo delivers it (server-side `wchc` counts registrations, not deliveries).
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

_WATCHED = ("get", "get_children", "exists")


class CountingClient:
    def __init__(self, zk: Any) -> None:
        self._zk = zk
        self._mu = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.notifications = 0
        # one wrapper per callback: kazoo keeps a set of watchers per path, so a fresh wrapper
        # per call would register (and count) the same watcher many times
        self._wrappers: dict[Any, Any] = {}

    def _bump(self, name: str) -> None:
        with self._mu:
            self.calls[name] += 1

    def _wrap_watch(self, fn: Any) -> Any:
        with self._mu:
            if fn in self._wrappers:
                return self._wrappers[fn]

        def counted(event: Any) -> None:
            with self._mu:
                self.notifications += 1
            fn(event)

        with self._mu:
            return self._wrappers.setdefault(fn, counted)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._zk, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        def call(*args: Any, **kw: Any) -> Any:
            self._bump(name)
            if name in _WATCHED and kw.get("watch") is not None:
                kw["watch"] = self._wrap_watch(kw["watch"])
            return attr(*args, **kw)

        return call

    def snapshot(self) -> dict[str, int]:
        with self._mu:
            return {**self.calls, "notifications": self.notifications}

    def reset(self) -> None:
        with self._mu:
            self.calls.clear()
            self.notifications = 0
