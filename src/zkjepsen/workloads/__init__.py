"""Workloads: what each client does through the recipe, and which checkers judge the history.

A workload is an object with:
- `name`, `description` (one line, for `zkjepsen list workloads`);
- `setup(ctx)`: host side, once, before clients start (e.g. create parent znodes);
- `run_client(ctx)`: inside each client container, until `ctx.running()` is False;
- `final(ctx)`: host side, after the faults are healed (final reads, recorded as client 0);
- `checkers(params) -> dict[name, Checker]`.
`ctx` is a `zkjepsen.workloads.context.ClientContext`. Modules are imported lazily by name so a
client container imports only the workload it runs (stdlib + kazoo there; no matplotlib, no docker).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol

from zkjepsen.errors import BadInput

if TYPE_CHECKING:  # the context imports the recipes' registry: only its type is needed here
    from zkjepsen.workloads.context import ClientContext


class Workload(Protocol):
    name: str
    description: str

    def setup(self, ctx: ClientContext) -> None: ...
    def run_client(self, ctx: ClientContext) -> None: ...
    def final(self, ctx: ClientContext) -> None: ...
    def checkers(self, params: dict) -> dict[str, Any]: ...


# name -> "module:attribute"
WORKLOADS: dict[str, str] = {
    "ping": "zkjepsen.workloads.ping:PING",
    "lock": "zkjepsen.workloads.lock:LOCK",
    "election": "zkjepsen.workloads.lock:ELECTION",
    "counter": "zkjepsen.workloads.counter:COUNTER",
    "register": "zkjepsen.workloads.register:REGISTER",
    "rwlock": "zkjepsen.workloads.rwlock:RWLOCK",
    "queue": "zkjepsen.workloads.queue:QUEUE",
    "raw": "zkjepsen.workloads.raw:RAW",
    "barrier": "zkjepsen.workloads.barrier:BARRIER",
    "semaphore": "zkjepsen.workloads.semaphore:SEMAPHORE",
}


def get_workload(name: str) -> Workload:
    try:
        target = WORKLOADS[name]
    except KeyError:
        raise BadInput(
            f"unknown workload {name!r}; choose one of {', '.join(sorted(WORKLOADS))} "
            "(`zkjepsen list workloads`)"
        ) from None
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)
