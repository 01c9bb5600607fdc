"""ZooKeeper's own `WriteLock` recipe (src/recipes/lock, Java) before ZOOKEEPER-2931, ported.

Source: org.apache.zookeeper.recipes.lock.WriteLock / ZNodeName as released up to 3.4.11. Each
contender creates `<dir>/x-<sessionId>-` (ephemeral, sequential), lists the children, sorts them,
and holds the lock when its node sorts first; otherwise it sets an `exists` watch on the node that
sorts just before its own and re-runs the whole procedure when the watch fires.

Expected flaw (ZOOKEEPER-2931, fixed in 3.4.12/3.5.4): `ZNodeName.compareTo` compared the name's
*prefix* (`x-<sessionId>`) before the sequence number, so contenders are ordered by session id,
not by arrival. A newcomer whose session id sorts lower than the holder's believes it is first
and takes the lock while the holder still holds it: two holders with no fault at all. Sessions
created through different servers carry different server ids in their high bits, so clients
spread over the ensemble hit this quickly.

Runs inside client containers: stdlib and kazoo only.
"""

from __future__ import annotations

import threading
import time
from functools import cmp_to_key
from typing import Any

from zkjepsen.recipes.base import Token, delete_quietly, token_for


def _parts(name: str) -> tuple[str, int]:
    """ZNodeName: prefix = up to the last '-', sequence = the digits after it (-1 if none)."""
    prefix, sep, suffix = name.rpartition("-")
    if not sep:
        return name, -1
    try:
        return prefix, int(suffix)
    except ValueError:
        return name, -1


def compare_pre_2931(a: str, b: str) -> int:
    """The buggy order: prefix (hence session id) first, the sequence only to break ties."""
    (pa, sa), (pb, sb) = _parts(a), _parts(b)
    if pa != pb:
        return -1 if pa < pb else 1
    if sa == -1 and sb == -1:
        return (a > b) - (a < b)
    if sa == -1:
        return 1
    if sb == -1:
        return -1
    return sa - sb


class FullNameWriteLock:
    single_use = False

    def __init__(self, zk: Any, path: str, **_: Any) -> None:
        self.zk = zk
        self.dir = path.rstrip("/")
        self.node: str | None = None
        self._held = False

    def _create(self) -> str:
        session_id = self.zk.client_id[0]
        prefix = f"x-{session_id}-"
        # WriteLock first looks for a node of its own session (a retried create after a lost
        # response): its only protection against orphans.
        for child in self.zk.get_children(self.dir):
            if child.startswith(prefix):
                return f"{self.dir}/{child}"
        return self.zk.create(f"{self.dir}/{prefix}", ephemeral=True, sequence=True)

    def acquire(self, timeout: float | None) -> Token | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        self.zk.ensure_path(self.dir)
        if self.node is None:
            self.node = self._create()
        me = self.node.rsplit("/", 1)[1]
        while True:
            children = sorted(self.zk.get_children(self.dir), key=cmp_to_key(compare_pre_2931))
            if me not in children:  # our node vanished (session expired): start over
                self.node = self._create()
                me = self.node.rsplit("/", 1)[1]
                continue
            before = children[: children.index(me)]
            if not before:
                self._held = True
                return token_for(self.zk, self.node)
            woke = threading.Event()
            predecessor = f"{self.dir}/{before[-1]}"
            if self.zk.exists(predecessor, watch=lambda _e, ev=woke: ev.set()) is None:
                continue  # gone between the listing and the watch: re-list at once
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not woke.wait(remaining):  # timed out waiting: certainly not holding
                self._give_up()
                return None

    def _give_up(self) -> None:
        if self.node is not None:
            delete_quietly(self.zk, self.node)
            self.node = None

    def release(self) -> None:
        self._held = False
        self._give_up()

    def holding(self) -> bool:
        return self._held


__all__ = ["FullNameWriteLock", "compare_pre_2931"]
