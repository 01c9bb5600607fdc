"""`semaphore`: each client loops acquire a permit -> hold (mean `hold_s`) -> release -> think,
as `lock` with an empty critical section (the holders of a semaphore share whatever it guards,
so there is no single-writer resource to judge). Judged by the semaphore checker: never more
than `permits` clients believe they hold at once (checker/semaphore.py). The recipe reads the
same `permits` (kazoo's Semaphore: `max_leases`); a mutex recipe passes with any `permits`.
The loop is the one of `lock` (client/loop.py `LockLoop`): in-process for a Python recipe,
over the wire protocol for a program (`permits` in its init's params).
Params: permits, lock_path, hold_s, hold_fixed, think_s, acquire_timeout_s.
Checkers: semaphore, liveness, exercised.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.checker.exercised import Exercised
from zkjepsen.checker.liveness import LivenessChecker
from zkjepsen.checker.semaphore import SemaphoreChecker
from zkjepsen.recipes.base import param
from zkjepsen.workloads.lock import LockWorkload

DEFAULT_PERMITS = 2


class SemaphoreWorkload(LockWorkload):
    def __init__(self) -> None:
        super().__init__("semaphore", default_path="/zkjepsen/semaphore")
        self.description = "take one of `permits` permits -> hold -> release; never more holders"
        self.multi_step = False

    def writes_resource(self, params: dict[str, Any]) -> bool:
        return False  # an empty critical section (client/loop.py: no writes for `semaphore`)

    def checkers(self, params: dict[str, Any]) -> dict[str, Any]:
        permits = param(params, "permits", DEFAULT_PERMITS)
        return {
            "semaphore": SemaphoreChecker(permits),
            "liveness": LivenessChecker(),
            "exercised": Exercised(
                need=("acquire",), per_client=("acquire",), release=("release",)
            ),
        }


SEMAPHORE = SemaphoreWorkload()
