"""How a fault kind is declared: its type (`FaultKind`) and the checked constructor (`kind`) the
table in `faultkinds/__init__.py` is written with. Pure (named tuples, as the rest of this room)."""

from __future__ import annotations

from typing import NamedTuple

from zkjepsen.faultkinds.abilities import ABILITIES, CLIENT_ABILITIES
from zkjepsen.faultkinds.facts import Applies
from zkjepsen.faultkinds.landing import OBSERVERS
from zkjepsen.faultkinds.rules import RULES, PowerRule

FAMILIES = ("none", "partition", "process", "clock", "proxy", "disk")
# How a family's kinds are seen to land (landing.py's OBSERVERS), unless a kind says otherwise;
# the process family's kinds differ too much (a freeze, a kill, a reconfiguration) to share one.
FAMILY_OBSERVERS = {"partition": "dropped", "clock": "clock", "proxy": "acted"}


class FaultKind(NamedTuple):
    name: str
    family: str  # none | partition | process | clock | proxy | disk
    target: str  # default target spec (see nemesis.targets)
    description: str
    power: PowerRule | None  # None: not a fault (the "none" baseline)
    needs: frozenset[str] = frozenset()  # abilities of the service (ABILITIES)
    client_needs: frozenset[str] = frozenset()  # abilities of the run's clients
    # Default length: None = the schedule's fault duration; "1.5x" = 1.5 x the negotiated
    # session timeout (of the target client when there is one).
    duration: str | None = None
    kills_clients: bool = False  # its start ends the target clients' processes (and holds)
    observer: str = ""  # how it is seen to land: a key of landing.OBSERVERS
    # The `--param`s it reads (its magnitudes: offset_s, rate): a run that gives one and runs
    # no fault reading it is refused (run/readers.py), not run at some default.
    params: tuple[str, ...] = ()
    # Where its needs are not enough: why it cannot run in a resolved run (facts.py), or None.
    applies: Applies | None = None
    # Aimed at the lock holder, and best fired on an acquire: at a random time a short hold has
    # usually ended before it lands (`test`'s default trigger, shrink's retargeting, issue 40).
    on_acquire: bool = False

    def __post_init__(self) -> None:
        unknown = sorted(
            (set(self.needs) - set(ABILITIES)) | (set(self.client_needs) - set(CLIENT_ABILITIES))
        )
        if unknown or self.family not in FAMILIES:
            raise ValueError(
                f"fault {self.name}: unknown ability or family {unknown or self.family}"
            )

    def line(self) -> str:
        """Its `zkjepsen list nemeses` line (after the name)."""
        needs = f"  [needs: {', '.join(sorted(self.needs))}]" if self.needs else ""
        clients = (
            f"  [clients need: {', '.join(sorted(self.client_needs))}]" if self.client_needs else ""
        )
        return self.description + needs + clients


def kind(
    name: str,
    family: str,
    target: str,
    description: str,
    power: PowerRule | None,
    *needs: str,
    clients: tuple[str, ...] = (),
    duration: str | None = None,
    kills_clients: bool = False,
    observer: str = "",
    params: tuple[str, ...] = (),
    applies: Applies | None = None,
    on_acquire: bool = False,
) -> FaultKind:
    """A declaration, checked: a family, abilities, a power rule and an observer (how it is
    seen to land; its family's by default) this module knows (a typo would otherwise make a
    fault apply nowhere, or everywhere, or land never)."""
    unknown = sorted((set(needs) - set(ABILITIES)) | (set(clients) - set(CLIENT_ABILITIES)))
    if unknown or family not in FAMILIES or (power is not None and power.landed not in RULES):
        raise ValueError(f"fault kind {name}: unknown ability, family or rule {unknown or family}")
    observer = observer or FAMILY_OBSERVERS.get(family, "")
    if power is not None and observer not in OBSERVERS:
        raise ValueError(f"fault kind {name}: no observer says how it lands ({observer!r})")
    return FaultKind(
        name,
        family,
        target,
        description,
        power,
        frozenset(needs),
        frozenset(clients),
        duration,
        kills_clients,
        observer,
        params,
        applies,
        on_acquire,
    )
