"""Every fault kind, declared once: its name, default target and length, and the implementation
that resolves, applies and undoes it (which also says its family).

Import-light (the family modules import no docker): spec validation and `zkjepsen list nemeses`
read `NEMESES` from here before anything starts.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Protocol

from zkjepsen.nemesis import NemesisError
from zkjepsen.nemesis.client_clock import ClientClock
from zkjepsen.nemesis.clock import Bump, Rate, Strobe
from zkjepsen.nemesis.partition import Cut, IsolateClient, PacketLoss
from zkjepsen.nemesis.pg import TerminateHolder
from zkjepsen.nemesis.process import ProcessFault
from zkjepsen.nemesis.proxy import ProxyFault
from zkjepsen.nemesis.redlock import PartitionRedlock
from zkjepsen.nemesis.targets import NemesisContext


class FaultImpl(Protocol):
    family: str  # partition | process | clock | proxy

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: dict[str, Any]
    ) -> tuple[list[str], dict[str, Any]]:
        """(targets, detail): who is hit and how, drawn from the fault's own seeded RNG."""

    def apply(self, ctx: NemesisContext, targets: list[str], detail: dict[str, Any]) -> None: ...
    def undo(self, ctx: NemesisContext, targets: list[str], detail: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class FaultKind:
    name: str
    target: str  # default target spec (see nemesis.targets)
    description: str
    impl: FaultImpl | None  # None: the "none" baseline
    # Default length: None = the schedule's fault duration; "1.5x" = 1.5 x the negotiated
    # session timeout (of the target client when there is one).
    duration: str | None = None
    # The backends it means something on (harness.backends names); () = every backend.
    # Elsewhere it would exercise nothing (no peer servers to cut, no leader, no libfaketime
    # in the servers, no PostgreSQL): `test` refuses it, `matrix` shows the cell as n/a.
    backends: tuple[str, ...] = ()
    why_not: str = ""  # the reason, for the refusal and the n/a cell

    @property
    def family(self) -> str:
        return self.impl.family if self.impl is not None else "none"

    def resolve(
        self, ctx: NemesisContext, target: str | None, rng: random.Random, params: dict[str, Any]
    ) -> tuple[list[str], dict[str, Any]]:
        return self._impl().resolve(ctx, target or self.target, rng, params)

    def apply(self, ctx: NemesisContext, targets: list[str], detail: dict[str, Any]) -> None:
        self._impl().apply(ctx, targets, detail)

    def undo(self, ctx: NemesisContext, targets: list[str], detail: dict[str, Any]) -> None:
        self._impl().undo(ctx, targets, detail)

    def _impl(self) -> FaultImpl:
        if self.impl is None:
            raise NemesisError(f"{self.name} is not a fault")
        return self.impl


ZK = ("zookeeper",)
PEERS = ("zookeeper", "redis-sentinel", "etcd")  # servers that replicate to each other
LEADS = ("zookeeper", "redis", "redis-sentinel", "postgres", "etcd")
REDLOCK = ("redlock",)

_KINDS = [
    FaultKind("none", "all", "no faults (a baseline run)", None),
    FaultKind(
        "partition-one",
        "one",
        "cut one random server off from the other servers",
        Cut("alone"),
        backends=PEERS,
        why_not="its servers do not talk to each other",
    ),
    FaultKind(
        "partition-leader",
        "leader",
        "cut the current leader off from the other servers",
        Cut("alone"),
        backends=PEERS,
        why_not="its servers do not talk to each other",
    ),
    FaultKind(
        "partition-halves",
        "all",
        "split the servers into a random minority and majority",
        Cut("halves"),
        backends=PEERS,
        why_not="its servers do not talk to each other",
    ),
    FaultKind(
        "partition-ring",
        "all",
        "majorities ring: every server sees a majority, no two the same one (>= 5 nodes)",
        Cut("ring"),
        backends=PEERS,
        why_not="its servers do not talk to each other",
    ),
    FaultKind(
        "partition-bridge",
        "all",
        "two halves joined only through one bridge server",
        Cut("bridge"),
        backends=PEERS,
        why_not="its servers do not talk to each other",
    ),
    FaultKind(
        "isolate-client",
        "holder",
        "drop every packet between one client (the lock holder if known) and all servers",
        IsolateClient(),
        duration="2x",
    ),
    FaultKind(
        "packet-loss",
        "all",
        "drop a random fraction (default 10%) of packets to and from the target servers",
        PacketLoss(),
    ),
    FaultKind(
        "kill-one",
        "one",
        "SIGKILL one random server, restart it at the end",
        ProcessFault("kill", "servers"),
    ),
    FaultKind(
        "kill-leader",
        "leader",
        "SIGKILL the leader, restart it at the end",
        ProcessFault("kill", "servers"),
        backends=LEADS,
        why_not="it has no leader",
    ),
    FaultKind(
        "kill-minority",
        "minority",
        "SIGKILL a minority of servers",
        ProcessFault("kill", "servers"),
    ),
    FaultKind(
        "kill-majority",
        "majority",
        "SIGKILL a majority of servers (the ensemble stops serving)",
        ProcessFault("kill", "servers"),
    ),
    FaultKind(
        "pause-server",
        "one",
        "freeze one random server (cgroup freezer)",
        ProcessFault("pause", "servers"),
    ),
    FaultKind(
        "pause-leader",
        "leader",
        "freeze the leader (cgroup freezer)",
        ProcessFault("pause", "servers"),
        backends=LEADS,
        why_not="it has no leader",
    ),
    FaultKind(
        "pause-client",
        "holder",
        "freeze one client (the lock holder if known) for 1.5x its session timeout",
        ProcessFault("pause", "client"),
        duration="1.5x",
    ),
    FaultKind(
        "kill-client",
        "holder",
        "SIGKILL one client (the lock holder if known); it restarts with a new session",
        ProcessFault("kill", "client"),
    ),
    FaultKind(
        "clock-bump",
        "one",
        "step one server's clock by +-1..60 s (libfaketime moves its monotonic clock too)",
        Bump(),
        backends=ZK,
        why_not="its servers run without libfaketime",
    ),
    FaultKind(
        "clock-strobe",
        "one",
        "flip one server's clock between +d and 0 every ~1.2 s",
        Strobe(),
        backends=ZK,
        why_not="its servers run without libfaketime",
    ),
    FaultKind(
        "clock-rate-leader",
        "leader",
        "run the leader's clock k x fast (default 4x): it expires sessions k x early",
        Rate(),
        backends=ZK,
        why_not="its servers run without libfaketime",
    ),
    # On clients: libfaketime in the program under test, not in the recorder (client_clock.py).
    FaultKind(
        "clock-skew-client",
        "random",
        "step one client program's clock (params: offset_s; default ahead by 2x its lock "
        "TTL / session timeout); the recorder's stamps stay real",
        ClientClock("skew"),
    ),
    FaultKind(
        "clock-rate-client",
        "random",
        "run one client program's clock k x fast (params: rate, default 4; Python: the wall "
        "clock only)",
        ClientClock("rate"),
    ),
    FaultKind(
        "pg-terminate-holder",
        "holder",
        "PostgreSQL ends one client's lock connection (pg_terminate_backend); postgres backend",
        TerminateHolder(),
        backends=("postgres",),
        why_not="no PostgreSQL",
    ),
    FaultKind(
        "partition-redlock",
        "all",
        "cut half the clients (not the holder) from 2 of the 5 Redlock masters: each side "
        "still sees a majority (the control for partition-redlock-restart)",
        PartitionRedlock(restart=False),
        backends=REDLOCK,
        why_not="not Redlock's 5 masters",
    ),
    FaultKind(
        "partition-redlock-restart",
        "all",
        "partition-redlock, then SIGKILL and restart (empty: no persistence) a master the cut "
        "half holds the lock through, while it holds",
        PartitionRedlock(restart=True),
        duration="3x",
        backends=REDLOCK,
        why_not="not Redlock's 5 masters",
    ),
    # Through the wire proxy in the client's container (the run needs proxy = true).
    FaultKind(
        "proxy-lose-create",
        "holder",
        "the server applies one client's next create (params: n), the client never gets "
        "the reply (ConnectionLoss)",
        ProxyFault("proxy-lose-create"),
        duration="2x",
        backends=ZK,
        why_not="the wire proxy speaks ZooKeeper's protocol",
    ),
    FaultKind(
        "proxy-delay-reply",
        "holder",
        "delay one client's next reply (params: seconds, op) by 2 s",
        ProxyFault("proxy-delay-reply"),
        backends=ZK,
        why_not="the wire proxy speaks ZooKeeper's protocol",
    ),
    FaultKind(
        "proxy-drop-pings",
        "holder",
        "answer one client's pings in its proxy: the servers expire an idle session while "
        "its connection stays healthy",
        ProxyFault("proxy-drop-pings"),
        duration="2x",
        backends=ZK,
        why_not="the wire proxy speaks ZooKeeper's protocol",
    ),
    FaultKind(
        "proxy-close-after",
        "holder",
        "close one client's connection right after the reply to its next op "
        "(params: op, n; default create)",
        ProxyFault("proxy-close-after"),
        duration="2x",
        backends=ZK,
        why_not="the wire proxy speaks ZooKeeper's protocol",
    ),
    FaultKind(
        "proxy-drop-request",
        "holder",
        "close one client's connection instead of forwarding its next op (params: op, n; "
        "default delete): the server never sees it, the client sees ConnectionLoss",
        ProxyFault("proxy-drop-request"),
        duration="2x",
        backends=ZK,
        why_not="the wire proxy speaks ZooKeeper's protocol",
    ),
    FaultKind(
        "proxy-hold-session",
        "holder",
        "cut one client off from every server while its proxy keeps its session alive with its "
        "own pings: the session and its ephemeral nodes outlive the client's view of them",
        ProxyFault("proxy-hold-session"),
        duration="2x",
    ),
]

FAULTS: dict[str, FaultKind] = {k.name: k for k in _KINDS}


def not_applicable(name: str, backend: str) -> str | None:
    """Why fault `name` exercises nothing on `backend` (None: it applies, or is unknown)."""
    kind = FAULTS.get(name)
    if kind is None or not kind.backends or backend in kind.backends:
        return None
    return f"{name} does not apply to backend {backend}: {kind.why_not}"


# name -> one-line description, for `zkjepsen list nemeses` and spec validation.
NEMESES: dict[str, str] = {k.name: k.description for k in _KINDS}
