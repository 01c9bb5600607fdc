"""`rwlock`: readers share, writers exclude. Each acquisition picks a mode (read with probability
`read_frac`); the acquire's invoke and ok values carry `"mode"`, so the lock checker lets
read holds overlap each other and nothing else. Readers read the resource (`f: "read"`),
writers write it with their token (`f: "write"`, as in `lock`).

The recipe must offer `with_mode(mode)` (the `rwlock` recipe does); a plain mutex is used for
both modes (stricter than needed, still correct). The loop is the one of `lock`
(client/loop.py `LockLoop`, with a client for each mode): in-process for a Python recipe; a
program serves both modes, each request naming its side (`mode`, docs/client-protocol.md).
Params: lock_path, resource_path, resource, hold_s, think_s, read_frac, acquire_timeout_s.
Checkers: lock (mode-aware belief + effect overlap), fencing.
"""

from __future__ import annotations

from typing import Any

from zkjepsen.recipes.base import param
from zkjepsen.workloads.lock import LockWorkload


class RWLockWorkload(LockWorkload):
    def __init__(self) -> None:
        super().__init__("rwlock", default_path="/zkjepsen/shared_lock")
        self.description = "read/write lock: readers share, writers exclude (mode in values)"
        self.multi_step = False  # a writer writes one step

    def writes_resource(self, params: dict[str, Any]) -> bool:
        return param(params, "read_frac", 0.6) < 1  # only readers: nothing written


RWLOCK = RWLockWorkload()
