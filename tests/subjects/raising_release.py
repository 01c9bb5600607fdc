"""kazoo's Lock whose `release()` really releases, then raises (issue 23): a recipe whose API
lies about its release. Every release is recorded `info`; the run must not come out VALID as
if the lock's hand-over had been tested (checker/fairness.py)."""

from __future__ import annotations

from zkjepsen.recipes.kazoo_lock import KazooLock


class ReleaseRaises(KazooLock):
    def release(self) -> None:
        super().release()  # the lock node is gone: the next waiter gets the lock
        raise RuntimeError("release failed (after releasing)")
