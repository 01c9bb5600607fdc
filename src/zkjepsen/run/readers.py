"""Every setting used or refused (issue 48): each part of a run declares what it reads (the
workload `workloads/params.py` WORKLOAD_PARAMS, a recipe RECIPE_PARAMS, a service
SERVICE_PARAMS, a fault kind its `params`), and a setting given that no part of the resolved run
reads is bad input, refused before anything is created; so are targets, triggers and magnitudes
that the resolved run (its servers, its clients, its workload's ops, a fault's unit) cannot act
on. Before, each was run at a default or at random: `--param lock_ttl_s` on kazoo, `offset_s`
without a clock fault, `client:99` with 2 clients, `kill-minority` on the only server.

`check_read` is what one run gets (`validate_spec`, and `spec_from_json`: a config, a stored
test.json); a matrix, whose settings are shared by its cells, refuses a setting no cell reads
(`check_read_by_any`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from zkjepsen.backends.registry import backend_info
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import KINDS
from zkjepsen.recipes import resolve_backend
from zkjepsen.spec import SHARED_MASTER, TestSpec
from zkjepsen.workloads.params import (
    KNOWN,
    RECIPE_PARAMS,
    SERVICE_PARAMS,
    WORKLOAD_PARAMS,
    WORKLOAD_READS_TOO,
    validate_params,
)

# The workloads whose ops include an acquire (nemesis/targets.py ACQUIRE_FS: acquire, elected):
# what an `acquired` trigger waits for; on any other it would never fire.
ACQUIRING = ("lock", "election", "counter", "rwlock", "raw", "semaphore")
ON_ACQUIRE = ("acquired", "acquired-each")
SERVERS = re.compile(r"^n([0-9]+)$")
CLIENT_AIMS = ("holder", "random")  # a fault kind aimed at a client (nemesis/targets.py)
SERVER_ROLES = ("one", "leader", "follower", "minority", "majority", SHARED_MASTER)


@dataclass(frozen=True)
class Unread:
    """A setting given that this run never reads: `sentence` says which and why."""

    setting: str
    sentence: str


@dataclass(frozen=True)
class Shape:
    """What a setting is checked against: the resolved run's parts and counts."""

    workload: str
    recipe: str
    service: str  # the service family of its backend
    nodes: int
    clients: int
    faults: tuple[str, ...]

    @classmethod
    def of(cls, spec: TestSpec) -> Shape:
        info = backend_info(resolve_backend(spec.recipe, spec.backend))
        clients = spec.clients if spec.clients is not None else 1
        faults = tuple(n for n in spec.nemesis if n != "none")
        return cls(
            spec.workload, spec.recipe, info.family, info.nodes or spec.nodes, clients, faults
        )

    @property
    def user_program(self) -> bool:
        """A user's recipe or program: it may read any parameter zkjepsen does not know."""
        return ":" in self.recipe or self.recipe == "exec"

    def describe(self) -> str:
        faults = ", ".join(self.faults) or "no fault"
        return f"recipe {self.recipe}, workload {self.workload}, {faults}"


def param_readers(shape: Shape) -> set[str]:
    """Every parameter some part of this run reads."""
    kinds = KINDS
    out = {n for n, _ in WORKLOAD_PARAMS.get(shape.workload, ())}
    out |= set(WORKLOAD_READS_TOO.get(shape.workload, ()))
    out |= set(RECIPE_PARAMS.get(shape.recipe, ()))
    out |= set(SERVICE_PARAMS.get(shape.service, ()))
    for f in shape.faults:
        out |= set(kinds[f].params) if f in kinds else set()
    return out


def where_read(name: str) -> str:
    """Which parts read parameter `name`, in any run (for the refusal's sentence)."""
    kinds = KINDS
    parts = [f"workload {w}" for w, ps in WORKLOAD_PARAMS.items() if name in dict(ps)]
    parts += [f"workload {w}" for w, ps in WORKLOAD_READS_TOO.items() if name in ps]
    parts += [f"recipe {r}" for r, ps in RECIPE_PARAMS.items() if name in ps]
    parts += [f"the {s} servers" for s, ps in SERVICE_PARAMS.items() if name in ps]
    parts += [f"fault {k}" for k, kind in kinds.items() if name in kind.params]
    return ", ".join(dict.fromkeys(parts)) or "nothing"


def unread(spec: TestSpec, shape: Shape) -> list[Unread]:
    """The settings `spec` gives that this run would never read."""
    out = []
    if not shape.user_program:
        readers = param_readers(shape)
        for name in spec.params:  # an unknown name: validate_params says so in its words
            if name in KNOWN and name not in readers:
                out.append(
                    Unread(
                        f"param {name}",
                        f"param {name} is read by nothing in this run ({shape.describe()}); "
                        f"only {where_read(name)} read it, so leave it out",
                    )
                )
    if spec.client_dir is not None and not (
        spec.recipe == "exec" or spec.recipe.startswith("exec:")
    ):
        out.append(
            Unread(
                "client_dir",
                f"client_dir is read only by a program of your own (--client-cmd, or --recipe "
                f"exec:PATH), and recipe {spec.recipe} runs none, so leave it out",
            )
        )
    out += _unread_faulting(spec, shape)
    return out


def _unread_faulting(spec: TestSpec, shape: Shape) -> list[Unread]:
    """Settings that steer faults, in a run that injects none or cannot fire them."""
    out = []
    none = "this run injects no fault (nemesis none), so leave it out or give a fault"
    if spec.until_power is not None and not shape.faults:
        out.append(
            Unread("until_power", f"until-power bounds a violation rate per fault and {none}")
        )
    if spec.fault_target is not None and not shape.faults:
        out.append(
            Unread("fault_target", f"fault_target {spec.fault_target} aims faults and {none}")
        )
    elif spec.fault_target is not None and spec.generator is not None:
        out.append(  # resolve runs a given schedule as recorded: its items name their targets
            Unread(
                "fault_target",
                f"fault_target {spec.fault_target} aims the standard schedule's faults, and "
                "this run's schedule is given (each of its faults names its own target), so "
                "put the target in the schedule's faults or leave it out",
            )
        )
    if spec.fault_trigger in ON_ACQUIRE and spec.generator is None:
        if not shape.faults:
            out.append(
                Unread(
                    "fault_trigger", f"fault_trigger {spec.fault_trigger} fires faults and {none}"
                )
            )
        elif shape.workload not in ACQUIRING:
            out.append(
                Unread(
                    "fault_trigger",
                    f"fault_trigger {spec.fault_trigger} waits for an acquire and the "
                    f"{shape.workload} workload never acquires (those that do: "
                    f"{', '.join(ACQUIRING)}); leave it out for faults at their times",
                )
            )
    return out


def check_can_act(spec: TestSpec, shape: Shape) -> None:
    """Targets, triggers and magnitudes the resolved run can act on, or bad input."""
    if spec.fault_target is not None and shape.faults:
        check_target(spec.fault_target, shape, "fault_target")
        for f in shape.faults:
            check_side(spec.fault_target, f)
    kinds = KINDS
    for f in shape.faults:  # (a kind's own default target: its predicate's, faultkinds)
        target = spec.fault_target or ""
        if target == "minority" and shape.nodes < 3:
            raise BadInput(
                f"{f} aims at a minority of the servers, and of {shape.nodes} server(s) there "
                "is none to hit without hitting half or more; run it on 3 servers or more"
            )
    if any(f in kinds and "offset_s" in kinds[f].params for f in shape.faults):
        check_offset(spec.params.get("offset_s"), "param offset_s")
    for i, item in enumerate(spec.generator or ()):
        _check_item(item, shape, f"the schedule's item {i + 1} ({item.get('fault')})")


def check_side(target: str, fault: str) -> None:
    """`fault_target` aims every fault: one on a client takes a client (nemesis/targets.py
    would pick a random client for a server's name), one on servers only (a process or clock
    fault, a partition between servers) takes servers (a client's name fails as no server)."""
    kind = KINDS.get(fault)
    if kind is None:
        return
    names_servers = target in SERVER_ROLES or all(
        SERVERS.match(n.strip()) for n in target.split(",")
    )
    names_client = target.startswith("client:") or target == "holder"  # (random: membership's)
    if kind.target in CLIENT_AIMS and names_servers:
        raise BadInput(
            f"fault_target {target} names servers, and {fault} acts on a client; give "
            "client:N, holder or random, or leave it out"
        )
    on_servers = kind.family in ("process", "clock") or (
        kind.family == "partition" and "peers" in kind.needs
    )
    if kind.target not in CLIENT_AIMS and on_servers and names_client:
        raise BadInput(
            f"fault_target {target} names a client, and {fault} acts on servers; give server "
            f"names (n1,n3), {', '.join(SERVER_ROLES)} or all, or leave it out"
        )


def check_target(target: Any, shape: Shape, what: str) -> None:
    """A `client:N` or servers' names (`n1,n3`) that exist in this run."""
    if not isinstance(target, str):
        return  # its type is the schedule's reader's to refuse
    if target.startswith("client:"):
        n = target.partition(":")[2]
        if n.isdigit() and not 1 <= int(n) <= shape.clients:
            raise BadInput(
                f"{what} {target} names no client: this run starts {shape.clients} "
                f"(client:1 to client:{shape.clients})"
            )
        return
    for name in (s.strip() for s in target.split(",")):
        m = SERVERS.match(name)
        if m and not 1 <= int(m.group(1)) <= shape.nodes:
            raise BadInput(
                f"{what} {target} names no server {name}: this run has {shape.nodes} "
                f"(n1 to n{shape.nodes})"
            )
    if target == "minority" and shape.nodes < 3:
        raise BadInput(
            f"{what} minority: of {shape.nodes} server(s) there is no minority to hit; "
            "run on 3 servers or more"
        )


def check_offset(value: Any, what: str) -> None:
    """A clock fault steps whole seconds (libfaketime's and zkj-timewarp's offsets, as
    nemesis/clock.py writes them): a fraction would be rounded away, so it is refused."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if math.isfinite(value) and value != int(value):
            raise BadInput(
                f"{what}={value:g}: clock faults step whole seconds, so a fraction would be "
                f"rounded to {round(value):d}; give a whole number of seconds"
            )


def _check_item(item: dict[str, Any], shape: Shape, what: str) -> None:
    if "target" in item:
        check_target(item["target"], shape, f"{what}'s target")
    params = item.get("params")
    if isinstance(params, dict) and "offset_s" in params:
        check_offset(params["offset_s"], f"{what}'s offset_s")
    trigger = item.get("trigger")
    if not isinstance(trigger, dict):
        return
    kind, client = trigger.get("kind"), trigger.get("client")
    if kind in ("acquired", "released") and shape.workload not in ACQUIRING:
        raise BadInput(
            f"{what} fires on {kind}, and the {shape.workload} workload never acquires "
            f"(those that do: {', '.join(ACQUIRING)})"
        )
    if isinstance(client, int) and not isinstance(client, bool):
        if not 1 <= client <= shape.clients:
            raise BadInput(
                f"{what} waits for client {client}, and this run starts {shape.clients} "
                f"(1 to {shape.clients})"
            )


def check_read(spec: TestSpec) -> None:
    """One run: every setting it gives is read by one of its parts, and can act."""
    shape = Shape.of(spec)
    validate_params(spec.params, user_recipe=shape.user_program)  # bad values, in their words
    check_can_act(spec, shape)
    for u in unread(spec, shape):
        raise BadInput(u.sentence)


def check_read_by_any(specs: Iterable[TestSpec]) -> None:
    """Runs that share their settings (a matrix's cells): each can act on what it is given,
    and a setting no run reads is refused (one a cell leaves unread another may read)."""
    first: dict[str, Unread] = {}
    read: set[str] = set()
    for spec in specs:
        shape = Shape.of(spec)
        check_can_act(spec, shape)
        left = {u.setting: u for u in unread(spec, shape)}
        for setting, u in left.items():
            first.setdefault(setting, u)
        read |= _given(spec) - set(left)
    for setting, u in first.items():
        if setting not in read:
            raise BadInput(u.sentence)


def _given(spec: TestSpec) -> set[str]:
    """The settings `unread` can name, of those `spec` gives."""
    out = {f"param {n}" for n in spec.params}
    fields = ("client_dir", "until_power", "fault_target", "fault_trigger")
    return out | {f for f in fields if getattr(spec, f) is not None}
