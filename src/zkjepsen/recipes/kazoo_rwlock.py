"""`kazoo-rwlock`: kazoo's `ReadLock` and `WriteLock` (kazoo.recipe.lock) as-is, for the `rwlock`
workload (readers share, a writer excludes everyone).

Source: kazoo 2.x `kazoo/recipe/lock.py`: both are its `Lock` with another node name and another
set of blockers. A WriteLock's node is `<uuid>__lock__<seq>` and every smaller node blocks it;
a ReadLock's is `<uuid>__rlock__<seq>` and only smaller `__lock__` (write) nodes block it
(`_EXCLUDE_NAMES`). Each waits on its last blocker and re-lists.

Expected flaw: as kazoo's `Lock`, `is_acquired` survives the loss of the session: a writer (or a
reader) frozen or cut off past its session timeout keeps believing while its node is gone and
the other side acquires: a reader beside a writer, or two writers. Without faults: none.
The mode comes from the workload (`with_mode`), else the `mode` param (read/write, default
write), as with `rwlock`.
"""

from __future__ import annotations

from typing import Any

from kazoo.exceptions import LockTimeout
from kazoo.recipe.lock import ReadLock, WriteLock

from zkjepsen.recipes.base import Token, ZkRecipe, token_for


class KazooRWLock(ZkRecipe):
    def __init__(self, *args: Any, mode: str | None = None, **kwargs: Any) -> None:
        self._mode = mode
        super().__init__(*args, **kwargs)

    def setup(self) -> None:
        self.mode = self._mode or str(self.params.get("mode", "write"))
        if self.mode not in ("read", "write"):
            raise ValueError(f"kazoo-rwlock mode must be read or write, not {self.mode!r}")
        kind = ReadLock if self.mode == "read" else WriteLock
        self.lock = kind(self.zk, self.path, self.identifier)

    def with_mode(self, mode: str) -> KazooRWLock:
        """The other side of the same lock on the same session (the rwlock workload's)."""
        return KazooRWLock(
            self.zk, self.path, identifier=self.identifier, params=self.params, mode=mode
        )

    def acquire(self, timeout: float | None) -> Token | None:
        try:
            if not self.lock.acquire(timeout=timeout):
                return None
        except LockTimeout:
            return None
        return token_for(self.zk, f"{self.path}/{self.lock.node}")

    def release(self) -> None:
        self.lock.release()

    def holding(self) -> bool:
        return self.lock.is_acquired
