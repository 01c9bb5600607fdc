"""Whether a fault kind can run in a run: the one predicate (`refusal`), over what the resolved
run is (`RunFacts`), as etcd's robustness suite asks each failpoint `Available(config, member,
profile)`. A kind's needs are abilities (abilities.py) the run's servers or clients must have;
where needs are not enough, its declaration adds a predicate over the facts (`applies`: a ring
of majorities needs four servers). `refusals()` (faultkinds/__init__.py) asks it of every kind.

Who builds the facts: `run/resolve.py` (`refusals(spec)`), from what the backend declares
(`BackendInfo.abilities`), what its service's settings say this version lacks
(`ServiceSettings.lacks`), the server count, and the clients (their proxy, whether they are a
program of their own, the machine the clock launcher must patch). Pure: named tuples, no import
of the rest of zkjepsen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple, Protocol

from zkjepsen.faultkinds.abilities import ABILITIES, CLIENT_LACKS

NOTHING: Mapping[str, str] = MappingProxyType({})
# A predicate of a kind's own, beyond its needs: why it cannot run in `RunFacts` (None: it can).
Applies = Callable[["RunFacts"], "str | None"]


class RunFacts(NamedTuple):
    """A resolved run as a fault's applicability sees it."""

    backend: str  # the backend its servers are ("zookeeper", "redis-sentinel")
    nodes: int  # how many servers it starts with
    abilities: frozenset[str]  # what its servers can do, in this version and shape (ABILITIES)
    clients: frozenset[str] = frozenset()  # what its clients offer (CLIENT_ABILITIES)
    # ability -> why this run lacks it, where the general words (ABILITIES, CLIENT_LACKS) say
    # less than the run can: "ZooKeeper 3.4 has no dynamic reconfiguration (3.5+ has)".
    why_not: Mapping[str, str] = NOTHING
    client_count: int = 1  # how many clients it runs


def at_least_clients(clients: int, why: str) -> Applies:
    """A kind that needs `clients` or more clients: `why` (formatted with the run's
    `client_count`) when the run has fewer."""

    def applies(run: RunFacts) -> str | None:
        return None if run.client_count >= clients else why.format(clients=run.client_count)

    return applies


def at_least(servers: int, why: str) -> Applies:
    """A kind that means what it says only with `servers` or more: `why` (formatted with the
    run's `nodes`) when the run has fewer."""

    def applies(run: RunFacts) -> str | None:
        return None if run.nodes >= servers else why.format(nodes=run.nodes)

    return applies


class Needs(Protocol):
    """What of a declaration (declare.py `FaultKind`) the predicate reads."""

    @property
    def name(self) -> str: ...
    @property
    def needs(self) -> frozenset[str]: ...
    @property
    def client_needs(self) -> frozenset[str]: ...
    @property
    def applies(self) -> Applies | None: ...


def refusal(kind: Needs, run: RunFacts) -> str | None:
    """Why `kind` cannot run in `run` (None: it can): one sentence naming the fault, the backend
    and why (every ability it lacks; else the kind's own predicate; else what its clients lack)."""
    where = f"{kind.name} does not apply to backend {run.backend}"
    lacking = [a for a in sorted(kind.needs) if a not in run.abilities]
    if lacking:
        return f"{where}: {' and '.join(run.why_not.get(a) or ABILITIES[a] for a in lacking)}"
    why = kind.applies(run) if kind.applies is not None else None
    if why:
        return f"{where}: {why}"
    lacking = [a for a in sorted(kind.client_needs) if a not in run.clients]
    if lacking:
        return f"{where} with these clients: " + " and ".join(
            run.why_not.get(a) or CLIENT_LACKS[a] for a in lacking
        )
    return None
