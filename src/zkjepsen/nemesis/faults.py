"""Every fault kind's implementation, bound by name to its declaration (`zkjepsen.faultkinds`:
name, family, target, length, needs, power rule) in one table, `IMPLEMENTATIONS`.

Import-light (the family modules import no docker): spec validation and `zkjepsen list nemeses`
read the declarations through here before anything starts.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from zkjepsen.faultkinds import KINDS
from zkjepsen.faultkinds.abilities import CLIENT_CLOCK, SERVER_CLOCK, WIRE_PROXY
from zkjepsen.faultkinds.declare import FaultKind
from zkjepsen.faultkinds.disk import POWER_LOSS
from zkjepsen.nemesis import NemesisError
from zkjepsen.nemesis.client_clock import ClientClock, program_warp
from zkjepsen.nemesis.clock import Bump, Rate, Strobe
from zkjepsen.nemesis.disk import CorruptFile, PowerLoss
from zkjepsen.nemesis.family import Detail, FaultFamily, Params
from zkjepsen.nemesis.membership import MemberFault, RollingFault
from zkjepsen.nemesis.partition import Cut, IsolateClient, PacketLoss
from zkjepsen.nemesis.pg import TerminateHolder
from zkjepsen.nemesis.process import ProcessFault
from zkjepsen.nemesis.proxy import ProxyFault
from zkjepsen.nemesis.redlock import (
    PartitionRedlock,
    observe_shared_master,
    resolve_shared_master,
)
from zkjepsen.nemesis.targets import NemesisContext
from zkjepsen.spec import SHARED_MASTER


class FaultImpl(Protocol):
    @property
    def family(self) -> FaultFamily:
        """Its family's prepare and heal (the executor's only way to them)."""

    def resolve(
        self, ctx: NemesisContext, target: str, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        """(targets, detail): who is hit and how, drawn from the fault's own seeded RNG."""

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None: ...
    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None: ...


@dataclass(frozen=True)
class BoundFault:
    """A declared fault kind bound to its implementation (None: the "none" baseline)."""

    kind: FaultKind
    impl: FaultImpl | None

    @property
    def name(self) -> str:
        return self.kind.name

    @property
    def family(self) -> str:
        return self.kind.family

    @property
    def family_impl(self) -> FaultFamily | None:
        """Its implementation's family: its prepare and heal (None: the "none" baseline)."""
        return self.impl.family if self.impl is not None else None

    @property
    def duration(self) -> str | None:
        return self.kind.duration

    def resolve(
        self, ctx: NemesisContext, target: str | None, rng: random.Random, params: Params
    ) -> tuple[list[str], Detail]:
        return self._impl().resolve(ctx, target or self.kind.target, rng, params)

    def apply(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        self._impl().apply(ctx, targets, detail)

    def undo(self, ctx: NemesisContext, targets: list[str], detail: Detail) -> None:
        self._impl().undo(ctx, targets, detail)

    def _impl(self) -> FaultImpl:
        if self.impl is None:
            raise NemesisError(f"{self.name} is not a fault")
        return self.impl


IMPLEMENTATIONS: dict[str, FaultImpl] = {
    "partition-one": Cut("alone"),
    "partition-leader": Cut("alone"),
    "partition-halves": Cut("halves"),
    "partition-ring": Cut("ring"),
    "partition-bridge": Cut("bridge"),
    "isolate-client": IsolateClient(),
    "packet-loss": PacketLoss(),
    "kill-one": ProcessFault("kill", "servers"),
    "kill-leader": ProcessFault("kill", "servers"),
    "kill-minority": ProcessFault("kill", "servers"),
    "kill-majority": ProcessFault("kill", "servers"),
    "pause-server": ProcessFault("pause", "servers"),
    "pause-leader": ProcessFault("pause", "servers"),
    "pause-client": ProcessFault("pause", "client"),
    "kill-client": ProcessFault("kill", "client"),
    "clock-bump": Bump(),
    "clock-strobe": Strobe(),
    "clock-rate-leader": Rate(),
    "clock-rate-one": Rate(),
    # On clients: libfaketime in the program under test, not in the recorder (client_clock.py).
    "clock-skew-client": ClientClock("skew"),
    "clock-rate-client": ClientClock("rate"),
    "pg-terminate-holder": TerminateHolder(),
    "partition-redlock": PartitionRedlock(restart=False),
    "partition-redlock-restart": PartitionRedlock(restart=True),
    # Through the wire proxy in the client's container (the run needs proxy = true).
    "proxy-lose-create": ProxyFault("proxy-lose-create"),
    "proxy-delay-reply": ProxyFault("proxy-delay-reply"),
    "proxy-drop-pings": ProxyFault("proxy-drop-pings"),
    "proxy-close-after": ProxyFault("proxy-close-after"),
    "proxy-drop-request": ProxyFault("proxy-drop-request"),
    "proxy-hold-session": ProxyFault("proxy-hold-session"),
    # Through the service's own reconfiguration (nemesis/membership.py).
    "member-remove": MemberFault("remove"),
    "member-remove-leader": MemberFault("remove"),
    "member-add": MemberFault("add"),
    "member-replace": MemberFault("replace"),
    "rolling-restart": RollingFault(upgrade=False),
    "rolling-upgrade": RollingFault(upgrade=True),
    # Disk faults (disk.py): the runs that ask for one boot their servers under the layer.
    **{name: PowerLoss("drop", KINDS[name].target) for name in POWER_LOSS},
    "torn-write": PowerLoss("torn", "one"),
    "corrupt-file": CorruptFile(),
}


def _bind() -> dict[str, BoundFault]:
    """Every declared kind with its implementation; a fault declared without one, or one
    implemented but never declared, stops the import (a programming error, not the user's)."""
    missing = [n for n, k in KINDS.items() if k.power is not None and n not in IMPLEMENTATIONS]
    stray = [n for n in IMPLEMENTATIONS if n not in KINDS or KINDS[n].power is None]
    if missing or stray:
        raise ImportError(f"fault kinds without implementation {missing}, undeclared {stray}")
    return {n: BoundFault(k, IMPLEMENTATIONS.get(n)) for n, k in KINDS.items()}


FAULTS: dict[str, BoundFault] = _bind()


def families() -> list[FaultFamily]:
    """Every family of an implemented kind, each once, in heal order (`FaultFamily.rank`)."""
    found = {id(i.family): i.family for i in IMPLEMENTATIONS.values()}
    return sorted(found.values(), key=lambda f: (f.rank, f.name))


@dataclass(frozen=True)
class RoleTarget:
    """A server target read from the lock's state when its fault starts, not a kind's own pick:
    `resolve(ctx, client, rng)` (the client the trigger's firing named, or None) gives the
    server's name, which the kind then resolves as a named server, and what it adds to the
    fault's detail; `observe(ctx, targets, detail)`, the instant before the hit, writes the
    proof at the target that faultkinds/landing.py reads."""

    resolve: Callable[[NemesisContext, int | None, random.Random], tuple[str, Detail]]
    observe: Callable[[NemesisContext, list[str], Detail], None]


# The fault targets that are such roles (spec.py FAULT_TARGETS; where they apply: run/resolve.py
# `role_refusal`): a master the current Redlock holder's grant is on.
ROLE_TARGETS: dict[str, RoleTarget] = {
    SHARED_MASTER: RoleTarget(resolve_shared_master, observe_shared_master),
}


def nemesis_lines() -> list[tuple[str, str]]:
    """(name, line) of every declared kind, for `zkjepsen list nemeses`."""
    return [(n, k.line()) for n, k in sorted(KINDS.items())]


# The declarations' names the rooms above read through here (run/resolve.py, cli, report).
__all__ = [
    "CLIENT_CLOCK",
    "FAULTS",
    "IMPLEMENTATIONS",
    "KINDS",
    "ROLE_TARGETS",
    "SERVER_CLOCK",
    "WIRE_PROXY",
    "BoundFault",
    "FaultFamily",
    "FaultImpl",
    "RoleTarget",
    "families",
    "nemesis_lines",
    "program_warp",
]
