"""`kazoo-lease`: kazoo's `NonBlockingLease` (kazoo.recipe.lease) as-is: a lease of `lock_ttl_s`
(default the session timeout) judged by the clients' clocks.

Source: kazoo 2.x `kazoo/recipe/lease.py`. One attempt takes a kazoo `Lock` on the lease path,
reads `<path>/lease_holder` (JSON: holder, end) and, when it is ours or its `end` is past by the
caller's own `datetime.utcnow()`, writes a new one ending at `utcnow() + duration` (that `utcnow()`
read inside the Lock; the application's hold counts from the same reading). It never
blocks and has no release: a lease lasts until its `end`. As a Recipe: `acquire` tries again
every 0.1 s until obtained or `timeout`; the application holds for `duration` from the grant by
its own clock, as the docs' example does ("if lease: do_hourly_database_cleanup()"), and stops
believing at its release (the lease itself runs on until its end, so the next holder waits).
Each acquisition is a new task with an identity of its own (`<client>-<n>`): the same identity
renews a lease whatever its end, so one client re-obtaining its own would starve the others.

Expected flaws: kazoo's docstring says it: "the lease stores time stamps using client clocks,
and will therefore only work if client clocks are roughly synchronised". A contender whose clock
runs ahead (clock-skew-client, clock-rate-client) reads a live lease's `end` as past and takes
it while the holder still holds. And `end` is stored to the whole second (`%H:%M:%S`), so every
lease ends for the others up to 1 s before its holder's `duration` is over: a hold that runs
close to `duration` overlaps the next holder with no fault at all. The token is the
`lease_holder` node's czxid (a new node at every grant), read back after the grant: None when
the node is already another client's.
"""

from __future__ import annotations

import datetime
import functools
import json
import time

from kazoo.exceptions import NoNodeError
from kazoo.recipe.lease import NonBlockingLease

from zkjepsen.recipes.base import Token, ZkRecipe, param

RETRY_S = 0.1


def _noted(seen: list[datetime.datetime]) -> datetime.datetime:
    """utcnow() as kazoo reads it, kept in `seen`."""
    seen.append(datetime.datetime.utcnow())
    return seen[-1]


class KazooLease(ZkRecipe):
    def setup(self) -> None:
        ttl = param(self.params, "lock_ttl_s", float(self.zk._session_timeout) / 1000)
        self.duration = datetime.timedelta(seconds=ttl)
        self.until: datetime.datetime | None = None  # by our own clock, while we hold
        self.tasks = 0  # acquisitions so far: each one's identity

    def acquire(self, timeout: float | None) -> Token | None:
        deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
        self.tasks += 1
        ident = f"{self.identifier}-{self.tasks}"
        while True:
            # The lease's own start: the `now` kazoo reads once it holds the lease path's inner
            # Lock, not one read before the call (the wait for that Lock, seconds when the
            # contenders retry, would end the application's belief before the lease's end).
            seen: list[datetime.datetime] = []
            lease = NonBlockingLease(
                self.zk, self.path, self.duration, ident, utcnow=functools.partial(_noted, seen)
            )
            if lease:
                self.until = seen[-1] + self.duration
                return self._token(ident)
            if time.monotonic() >= deadline:
                return None
            time.sleep(RETRY_S)

    def _token(self, ident: str) -> Token:
        """The lease holder node's czxid when it is still ours; None when another client has
        already replaced it (its clock said our lease had ended): the belief is recorded as-is."""
        node = f"{self.path}/lease_holder"
        try:
            data, stat = self.zk.get(node)
            mine = json.loads(data.decode()).get("holder") == ident
        except (NoNodeError, ValueError):
            mine = False
        return Token(stat.czxid if mine else None, None, node)

    def release(self) -> None:
        self.until = None  # nothing to release: the lease runs until its end

    def holding(self) -> bool:
        return self.until is not None and datetime.datetime.utcnow() < self.until
