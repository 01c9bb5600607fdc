"""Who a fault hits: the shared context, target specs, and reading the clients' own records.

Target specs: `one` (a random server), `leader`, `follower` (a random server that does not
lead), `minority`, `majority`, `all`, `n2` or `n1,n3`
(explicit servers), `client:N`, `holder` (the client that believes it holds the lock, else a
random running client). Random choices come from the fault's own seeded RNG so a plan replays.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from zkjepsen.backends.base import Backend
from zkjepsen.docker.cluster import Node
from zkjepsen.history.holding import ACQUIRE_FS, RELEASE_FS
from zkjepsen.history.live import LiveHistory
from zkjepsen.nemesis import NemesisError, NoTargets


class ClientFiles(Protocol):
    """Where the clients' histories are (a `store.RunDir`; named structurally because the store
    imports the spec, which validates fault names from this package)."""

    def client_history(self, client: int) -> Path: ...
    def client_histories(self) -> list[Path]: ...


class ScheduleFiles(Protocol):
    """Where a run's faults are written (a `store.RunDir`: the store names every file)."""

    @property
    def path(self) -> Path: ...
    @property
    def nemesis_log(self) -> Path: ...
    @property
    def schedule(self) -> Path: ...


T = TypeVar("T")  # what NemesisContext.each maps over
R = TypeVar("R")

__all__ = ["ACQUIRE_FS", "RELEASE_FS"]  # (history/holding.py's, named here for the faults)


@dataclass
class NemesisContext:
    backend: Backend
    pool: Any = None  # a client.pool.ClientPool; None when the run has no client containers
    session_timeout_s: float = 4.0  # requested; a client's own `session` event wins
    holder_wait_s: float = 2.0  # how long `holder` waits for some client to hold the lock
    dirty_clocks: set[str] = field(default_factory=set)  # nodes whose clock needs a reset
    lock: threading.Lock = field(default_factory=threading.Lock)
    state: dict[str, Any] = field(default_factory=dict)  # per-family live state (strobes)
    # The history's time now (the nemesis log's clock), for a family to say when its fault
    # went in (arming.WENT_IN); None outside a run
    now_ns: Callable[[], int] | None = None
    _exec: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(8, thread_name_prefix="nemesis")
    )

    @property
    def run_id(self) -> str:
        return self.backend.run_id

    @property
    def run_dir(self) -> ClientFiles | None:
        """Where the clients write their histories (None: no client containers)."""
        return self.pool.run_dir if self.pool is not None else None

    @property
    def live(self) -> LiveHistory | None:
        """The run's one follower of the clients' files (the pool's; None: no clients)."""
        return self.pool.live if self.pool is not None else None

    def each(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """Apply fn to every item at once (a docker exec costs ~0.1-0.3 s each)."""
        return list(self._exec.map(fn, items))

    def node(self, name: str) -> Node:
        for n in self.backend.nodes:
            if n.name == name:
                return n
        raise NemesisError(f"no server named {name}")

    def clients(self) -> list[Any]:
        """The client handles (client.pool.ClientHandle), none without a pool."""
        return list(self.pool.handles) if self.pool is not None else []

    def client(self, name: str) -> Any:
        idx = int(name.lstrip("c"))
        for h in self.clients():
            if h.index == idx:
                return h
        raise NemesisError(f"no client named {name}")

    def session_timeout_of(self, client_name: str | None) -> float:
        """The negotiated timeout from the client's `session` event, else the requested one."""
        live = self.live
        if client_name and live is not None:  # a restarted client: its latest session's
            session = live.holding().sessions.get(int(client_name.lstrip("c")))
            if session is not None and session.timeout_ms:
                return session.timeout_ms / 1000
        return self.session_timeout_s


def resolve_servers(ctx: NemesisContext, spec: str, rng: random.Random) -> list[str]:
    names = [n.name for n in ctx.backend.nodes]
    n = len(names)
    if spec == "one":
        return [rng.choice(names)]
    if spec == "leader":
        leader = ctx.backend.leader()
        # Mid-election nobody leads: hit a random server rather than nothing (noted by caller).
        return [leader.name if leader else rng.choice(names)]
    if spec == "follower":
        leader = ctx.backend.leader()
        # Nobody leads (mid-election, or a service without one): any server is a follower.
        followers = [x for x in names if leader is None or x != leader.name]
        return [rng.choice(followers or names)]
    if spec == "minority":
        return sorted(rng.sample(names, max(1, (n - 1) // 2)))
    if spec == "majority":
        return sorted(rng.sample(names, n // 2 + 1))
    if spec == "all":
        return names
    chosen = [s.strip() for s in spec.split(",") if s.strip()]
    for c in chosen:
        ctx.node(c)
    return chosen


def running_clients(ctx: NemesisContext) -> list[Any]:
    out = []
    for h in ctx.clients():
        try:
            if h.status() == "running":
                out.append(h)
        except Exception:  # noqa: BLE001 - a removed container is simply not a target
            pass
    return out


def resolve_client(ctx: NemesisContext, spec: str, rng: random.Random) -> tuple[str, str]:
    """One client name (`c3`) and how it was chosen (`holder`, `random`, `explicit`).

    `holder` picks the client that acquired most recently and has not begun to release: it has
    the most critical section left, since the pause lands ~50-200 ms later (docker's API)."""
    if spec.startswith("client:"):
        return f"c{int(spec.split(':', 1)[1])}", "explicit"
    live = running_clients(ctx)  # docker round trips: done once, before the holder watch
    if not live:
        raise NoTargets("no running client to target")
    live_idx = {h.index for h in live}
    history = ctx.live
    if spec == "holder" and history is not None:
        deadline = time.monotonic() + ctx.holder_wait_s
        while True:
            holder = history.holding().newest_holder(among=live_idx)
            if holder is not None:
                return f"c{holder}", "holder"
            if time.monotonic() >= deadline:
                break
            time.sleep(0.01)
    return f"c{rng.choice(sorted(live_idx))}", "random"
