"""A hand-made history for the oracle's tests (checker/nature.py, lease.py): times in seconds,
client N is process N, every client's lease LEASE_S from a `session` event at 0.1 s. Each
test module adds the steps its patterns need (a hold, a write, a fault) on top of `add`."""

from __future__ import annotations

from typing import Any

from zkjepsen.history import Op

S = 1_000_000_000
LEASE_S = 2.0


class HandHistory:
    def __init__(self, clients: tuple[int, ...] = (1, 2, 3), lease_s: float = LEASE_S) -> None:
        self.ops: list[Op] = []
        for c in clients:
            self.add(0.1, c, "event", "session", None, {"timeout_ms": int(lease_s * 1000)}, c)

    def add(self, t, process, typ, f, key=None, value: Any = None, client=None):
        self.ops.append(Op(len(self.ops), int(t * S), process, typ, f, key, value, client))
        return self

    def state(self, c, t, state):
        return self.add(t, c, "event", "session-state", None, state, c)
