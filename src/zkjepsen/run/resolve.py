"""From a `TestSpec` (a plain value) to what runs: its names checked against the registries
(recipes, workloads, nemeses, backends, ZooKeeper versions), then resolved once into a typed
`ResolvedTest` that the runner uses.

`run/spec.py` checks each field on its own and imports nothing of the registries; everything
that needs a registry is here, so bad input is still refused before anything is created.
"""

from __future__ import annotations

import os
import platform
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zkjepsen import faultkinds
from zkjepsen.backends.registry import backend_info, check_nodes, make_backend, settings_for
from zkjepsen.client.command import (
    PROGRAM_DIR,
    PROGRAM_WORKLOADS,
    PROTOCOL_WORKLOADS,
    PYTHON_DRIVER,
    SERVICE_DRIVER,
    ZOOKEEPER_BACKENDS,
    ProgramPlan,
)
from zkjepsen.errors import BadInput
from zkjepsen.faultkinds import KINDS
from zkjepsen.faultkinds.abilities import (
    CLIENT_CLOCK,
    INDEPENDENT_MASTERS,
    PEERS,
    SERVER_CLOCK,
    WIRE_PROXY,
)
from zkjepsen.faultkinds.facts import RunFacts
from zkjepsen.recipes import RECIPES, resolve_backend, validate_recipe
from zkjepsen.run.analysis import checkers_for
from zkjepsen.run.readers import Shape, check_can_act, check_read
from zkjepsen.run.recording import record_schedule, settle_generator
from zkjepsen.run.spec import read_spec
from zkjepsen.spec import SHARED_MASTER, TestSpec
from zkjepsen.workloads import get_workload
from zkjepsen.workloads.params import validate_params

if TYPE_CHECKING:
    from zkjepsen.backends.plugin import BackendInfo
    from zkjepsen.nemesis.generator import Gen
    from zkjepsen.workloads import Workload

DEFAULT_CLIENTS = 10


def default_clients(recipe: str) -> int:
    """How many clients a test of `recipe` runs unless told: the recipe's own default (an
    unfair lock has fewer, so a plain run exercises every client), else 10."""

    info = RECIPES.get(recipe)
    return (info.clients if info is not None else None) or DEFAULT_CLIENTS


def settle(spec: TestSpec) -> TestSpec:
    """The checks of a spec's own fields that need a registry: the clients' default (the
    recipe's), a recorded generator's items (its faults are the run's nemesis). In place;
    returns the spec. Cheap: what a config file or a stored test.json gets. (The service's
    settings check their own fields as they are made.)"""
    if spec.clients is None:
        spec.clients = default_clients(spec.recipe)
    settle_generator(spec)
    return spec


def spec_from_json(d: Any) -> TestSpec:
    """A TestSpec from a table (a config, test.json), with its registry checks done: every
    setting it gives is read by a part of the run, and can act (run/readers.py)."""
    spec = settle(read_spec(d))
    check_read(spec)
    return spec


def program_for(
    recipe: str,
    workload: str,
    client_cmd: str | None = None,
    client_dir: str | None = None,
    client_mode: str = "protocol",
    backend: str | None = None,
) -> ProgramPlan | None:
    """Which program a client container runs (client/command.py says what each is); None: the
    in-process loop. `backend`: the run's (None: the recipe's default); a recipe of several
    services (tooz) is served with the session of the backend's service."""

    if recipe == "exec":
        here = str(Path(client_dir or os.getcwd()).resolve())
        return ProgramPlan(("/bin/sh", "-c", client_cmd or ""), here, PROGRAM_DIR, "user")
    if recipe.startswith("exec:"):
        path = Path(recipe[len("exec:") :]).resolve()
        mount = Path(client_dir).resolve() if client_dir else path.parent
        try:
            rel = path.relative_to(mount)
        except ValueError:
            rel = Path(path.name)
        return ProgramPlan((f"{PROGRAM_DIR}/{rel.as_posix()}",), str(mount), PROGRAM_DIR, "user")
    info = RECIPES.get(recipe)
    if info is not None and info.command:
        return ProgramPlan(tuple(info.command), None, None, info.language)
    where = backend or (info.backends[0] if info is not None else None)
    libraries = info.distributions if info is not None else ()
    if info is not None and where not in ZOOKEEPER_BACKENDS:
        # the wire protocol whatever the mode; the service named when not the recipe's first
        family = backend_info(str(where)).family
        own = backend_info(info.backends[0]).family
        service = () if family == own else (family,)
        return ProgramPlan((*SERVICE_DRIVER, recipe, *service), libraries=libraries)
    if workload in PROTOCOL_WORKLOADS and client_mode == "protocol":
        return ProgramPlan((*PYTHON_DRIVER, recipe), libraries=libraries)
    return None


def spec_program(spec: TestSpec) -> ProgramPlan | None:
    """`program_for` of a spec's own settings."""
    return program_for(
        spec.recipe, spec.workload, spec.client_cmd, spec.client_dir, spec.client_mode, spec.backend
    )


def is_foreign(recipe: str) -> bool:
    """A program zkjepsen cannot run in-process (the user's, another language's, or a Python
    recipe of another lock service, which runs only behind the wire protocol)."""

    info = RECIPES.get(recipe)
    return (
        recipe == "exec"
        or recipe.startswith("exec:")
        or bool(info and (info.command or info.backends[0] not in ZOOKEEPER_BACKENDS))
    )


def validate_program(spec: TestSpec) -> None:
    """Bad input, on the host: a program that cannot be found or cannot serve the workload."""
    if spec.recipe == "exec" and not spec.client_cmd:
        raise BadInput("recipe exec runs the program given with --client-cmd; give one")
    if spec.client_cmd and spec.recipe != "exec":
        raise BadInput(f"give either --recipe ({spec.recipe}) or --client-cmd, not both")
    if is_foreign(spec.recipe) and spec.workload not in PROGRAM_WORKLOADS:
        raise BadInput(
            f"a client program (recipe {spec.recipe}) serves the "
            f"{', '.join(PROGRAM_WORKLOADS)} workloads, not {spec.workload}"
        )
    if is_foreign(spec.recipe) and spec.client_mode == "in-process":
        raise BadInput(f"recipe {spec.recipe} is a program, it cannot run in-process")
    if spec.client_dir is not None and not Path(spec.client_dir).is_dir():
        raise BadInput(f"client dir {spec.client_dir} is not a directory")
    if spec.recipe.startswith("exec:"):
        path = Path(spec.recipe[len("exec:") :])
        if not path.is_file() or not os.access(path, os.X_OK):
            raise BadInput(f"{path} is not an executable file (recipe exec:PATH)")
    plan = program_for(spec.recipe, spec.workload, spec.client_cmd, spec.client_dir)
    if plan is not None and plan.mount is not None:
        # Only what it surely needs: deeper files may be private on purpose (a secret it never
        # reads); one it does need shows as its own error in the client's log.
        entry = Path(plan.mount) / plan.argv[0][len(PROGRAM_DIR) + 1 :]
        for p in (Path(plan.mount), *([entry] if plan.argv[0].startswith(PROGRAM_DIR) else [])):
            if not _open_to_others(p):
                raise BadInput(
                    f"{p} is not readable by other users, and the program under test runs as "
                    f"an unprivileged user in its container; run `chmod o+rx {p}`"
                )


def _open_to_others(path: Path) -> bool:
    """Can a user who is neither its owner nor in its group read (and enter, or run) it?"""

    need = stat.S_IROTH | stat.S_IXOTH
    try:
        return path.stat().st_mode & need == need
    except OSError:
        return True  # missing: reported elsewhere


def validate_spec(spec: TestSpec, alone: bool = True) -> None:
    """Fail fast, before anything is created, on names that do not exist and parameters the
    workload or recipe cannot use. Fills in what the registries decide (clients, backend, a
    fixed shape's nodes, the ZooKeeper version, params), so test.json says what really ran.
    `alone`: a setting this run does not read is refused; False (a matrix's cell, whose
    settings its other cells may read): only what cannot act is (`check_read_by_any`)."""

    settle(spec)
    get_workload(spec.workload)
    validate_recipe(spec.recipe)
    names = [n for n in spec.nemesis if n != "none"]
    _check_nemeses(spec, names)
    validate_program(spec)
    _settle_backend(spec, names)
    _check_roles(spec, names)
    spec.params = validate_params(
        spec.params, user_recipe=":" in spec.recipe or spec.recipe == "exec"
    )
    locks = spec.params.get("locks", 1)
    if locks > 1 and (spec.workload not in ("lock", "election") or locks > (spec.clients or 1)):
        raise BadInput(
            f"param locks={locks} needs the lock or election workload and at least as many "
            f"clients (workload {spec.workload}, {spec.clients} clients)"
        )
    if spec.params.get("nested") and spec.client_mode != "in-process":
        # The wire protocol's loops (client/loop.py) never nest: such a run would test
        # nothing it claims to.
        raise BadInput("param nested needs client_mode in-process (the protocol loops never nest)")
    if alone:
        check_read(spec)
    else:
        check_can_act(spec, Shape.of(spec))


def _check_nemeses(spec: TestSpec, names: list[str]) -> None:

    for n in names:
        if n not in KINDS:
            raise BadInput(
                f"unknown nemesis {n!r}; choose from {', '.join(sorted(KINDS))}"
                " (`zkjepsen list nemeses`)"
            )
    if spec.fault_trigger == "acquired-each" and not set(names) <= ON_ACQUIRE_BY_DEFAULT:
        raise BadInput(
            "fault_trigger acquired-each faults each client on its own acquires, side by side: "
            f"only faults aimed at the holder ({', '.join(sorted(ON_ACQUIRE_BY_DEFAULT))}), "
            f"not {', '.join(sorted(set(names) - ON_ACQUIRE_BY_DEFAULT))}"
        )


def _warp_lacks(process: str) -> str | None:
    """zkj-timewarp patches x86_64's vDSO only: elsewhere a clock fault it would carry cannot
    reach `process` (refused, never a silent no-op)."""
    if platform.machine() in ("x86_64", "AMD64"):
        return None
    return (
        f"clock faults cannot reach {process}: zkj-timewarp patches the vDSO of x86_64 only, "
        f"and this machine is {platform.machine()}"
    )


def run_facts(spec: TestSpec) -> RunFacts:
    """What the run `spec` resolves to, as the faults' one predicate reads it
    (faultkinds/facts.py): the backend its recipe runs on, its servers, what they can do in this
    version (the backend's declared abilities less what its settings take away, `lacks`; no
    peers on one server; no server clock a launcher cannot patch), and what its clients offer
    (the wire proxy; a program of its own, reachable by a clock). Not in place."""
    # here, not at the top: keeps the commands' start-up light (`list`, `--help`)
    from zkjepsen.nemesis.faults import program_warp

    backend = resolve_backend(spec.recipe, spec.backend)
    info = backend_info(backend)
    nodes = info.nodes if info.nodes is not None else spec.nodes
    why_not = dict(settings_for(backend, spec.service).lacks())
    if nodes < 2 and PEERS in info.abilities:  # the shape has peers, this run's one has none
        why_not[PEERS] = "its one server has no peers"
    if backend not in ZOOKEEPER_BACKENDS and (w := _warp_lacks(f"the {backend} servers")):
        why_not[SERVER_CLOCK] = w  # libfaketime serves only ZooKeeper's
    plan = spec_program(spec)
    clients = {WIRE_PROXY} if spec.proxy else set()
    if plan is not None and program_warp(1, plan.language):
        if w := _warp_lacks(f"the {plan.language or 'client'} program {plan.argv[0]}"):
            why_not[CLIENT_CLOCK] = w
    if plan is not None and CLIENT_CLOCK not in why_not:
        clients.add(CLIENT_CLOCK)
    abilities = frozenset(a for a in info.abilities if a not in why_not)
    count = spec.clients or default_clients(spec.recipe)
    return RunFacts(backend, nodes, abilities, frozenset(clients), why_not, count)


def refusals(spec: TestSpec, names: list[str] | None = None) -> dict[str, str]:
    """Every fault (or every one of `names`) that cannot run in the run `spec` resolves to ->
    why, one sentence naming the fault, the backend and why; the faults absent can. THE
    applicability answer: `test`, `matrix`'s n/a cells, `gate`, `scenario run`, `replay`,
    `shrink`, a stored run's checks and the hunt read it; nothing else decides."""
    return faultkinds.refusals(run_facts(spec), names)


def _settle_backend(spec: TestSpec, names: list[str]) -> None:
    """The servers the recipe runs on, and what that backend allows (faults, shape, its
    service's settings: settled, so test.json says what really ran)."""

    spec.backend = resolve_backend(spec.recipe, spec.backend)
    info = backend_info(spec.backend)
    if info.nodes is not None:
        spec.nodes = info.nodes  # its shape is fixed: test.json says what really ran
    check_nodes(spec.backend, spec.nodes)
    spec.service = settings_for(spec.backend, spec.service)
    refused = refusals(spec, names)
    for n in names:
        if n in refused:
            raise BadInput(refused[n])
    spec.service.check(spec, recipe_language(spec.recipe))
    if spec.proxy and "zk-wire" not in info.abilities:
        raise BadInput(
            f"the wire proxy speaks ZooKeeper's protocol; backend {spec.backend} has none"
        )


def role_refusal(spec: TestSpec, role: str, fault: str | None = None) -> str | None:
    """Why the server role `role` (SHARED_MASTER; any other: None) cannot aim a fault in the
    run `spec` resolves to (of kind `fault`, when given); None: it can. THE predicate for it,
    "may I" and "which" alike: `validate_spec` (a fault_target, a schedule's item) and the
    hunt's menu (the roles a fault gets, run/hunt.py) read it; nothing else decides.

    It applies where the servers are Redlock's independent masters, the recipe's acquire
    records the masters that granted it (RecipeInfo.records_grants: never guessed), and the
    fault hits one server."""
    if role != SHARED_MASTER:
        return None
    facts = run_facts(spec)
    if INDEPENDENT_MASTERS not in facts.abilities:
        return (
            f"target {role} is a master a Redlock holder's grant is on, and backend "
            f"{facts.backend} is not Redlock's independent masters (backend redlock is)"
        )
    info = RECIPES.get(spec.recipe)
    if info is None or not info.records_grants:
        grants = ", ".join(sorted(n for n, r in RECIPES.items() if r.records_grants))
        return (
            f"target {role} reads the masters that granted the holder's lock from its "
            f"acquire's record, and recipe {spec.recipe} records none (recipes that do: "
            f"{grants})"
        )
    kind = KINDS.get(fault or "")
    if kind is not None and kind.target != "one":
        return f"target {role} names one server, and {fault} is aimed at {kind.target}"
    return None


def _check_roles(spec: TestSpec, names: list[str]) -> None:
    """A fault_target, or a schedule item's target, naming a role `role_refusal` refuses."""
    asked: list[tuple[str | None, str]] = []
    if spec.fault_target == SHARED_MASTER and spec.generator is None:
        asked += [(n, "fault_target") for n in names]
    for i, item in enumerate(spec.generator or ()):
        if isinstance(item, dict) and item.get("target") == SHARED_MASTER:
            f = item.get("fault")
            asked.append((f if isinstance(f, str) else None, f"the schedule's item {i + 1}"))
    for fault, where in asked:
        why = role_refusal(spec, SHARED_MASTER, fault)
        if why:
            raise BadInput(f"{where} {SHARED_MASTER}: {why}")


def fault_refusal(spec: TestSpec, name: str) -> str | None:
    """`refusals` of one fault (None: it can run): a stored schedule's faults
    (run/stored_files.py)."""
    return refusals(spec, [name]).get(name)


def recipe_language(recipe: str) -> str:
    """The language a recipe's program is written in ('' for a user's program)."""

    return RECIPES[recipe].language if recipe in RECIPES else ""


# Faults aimed at the lock holder whose default schedule fires on an acquire: at a random
# time a mean hold of 0.2 s has usually ended by the time `docker pause` lands (~0.1-1 s on
# a loaded machine), so a timed 40 s run of pause-client landed 0 of 2 pauses (issue 40).
ON_ACQUIRE_BY_DEFAULT = faultkinds.acquire_triggered()


def default_fault_trigger(spec: TestSpec) -> str:
    """What `test` uses when neither --fault-trigger nor the config says: `acquired` when every
    fault is aimed at the holder (ON_ACQUIRE_BY_DEFAULT) and the workload acquires a lock,
    `time` otherwise (the standard schedule's times, as `matrix` and the findings use)."""

    # here, not at the top: keeps the commands' start-up light (`list`, `--help`)
    from zkjepsen.client.loop import WORKLOADS as LOCK_SHAPED

    faults = {n for n in spec.nemesis if n != "none"}
    if faults and faults <= ON_ACQUIRE_BY_DEFAULT and spec.workload in LOCK_SHAPED:
        return "acquired"
    return "time"


def fault_generator(spec: TestSpec, names: list[str]) -> Gen | None:
    """The standard schedule of `names`, aimed at `fault_target` and cut after `max_faults`
    faults when the spec says so; None when there is nothing to inject."""
    # here, not at the top: keeps the commands' start-up light (`list`, `--help`)
    from zkjepsen.nemesis import generator
    from zkjepsen.nemesis.triggers import on_acquire

    if not names:
        return None

    each = None
    if spec.fault_trigger == "acquired-each":  # each client on its own acquires, side by side
        clients = spec.clients or default_clients(spec.recipe)
        each = [on_acquire(client=c, retries=10) for c in range(1, clients + 1)]
    gen = generator.standard(
        names, time_limit_s=spec.time_limit_s, interval_s=spec.interval_s, lane_triggers=each
    )
    if spec.fault_trigger == "acquired":  # on whoever just acquired, until it lands in a hold
        # A fault on servers is armed only once they are whole again (every server serves,
        # one leads): back to back, a kill would hit a server still syncing or leave no quorum.
        settled = not set(names) <= ON_ACQUIRE_BY_DEFAULT
        gen = generator.on(on_acquire(retries=10, settled=settled), gen)
    if spec.fault_target is not None:
        gen = generator.fault_target(spec.fault_target, gen)
    if spec.max_faults is not None:
        gen = generator.max_faults(spec.max_faults, gen)
    return gen


@dataclass(frozen=True)
class ResolvedTest:
    """A validated spec with every name resolved, once: what the runner runs."""

    spec: TestSpec
    backend: BackendInfo  # what the servers are; `make_backend` builds one
    workload: Workload
    program: ProgramPlan | None  # what each client container runs; None: in-process
    generator: Gen | None  # the fault schedule's generator; None: no faults
    checkers: dict[str, Any]  # name -> checker, the workload's for the spec's params

    @property
    def faults(self) -> list[str]:
        return [n for n in self.spec.nemesis if n != "none"]

    def make_backend(self, store_dir: Path, **docker: Any) -> Any:
        """The backend (not started) for this test; `docker`: client, engine and images."""

        backend = make_backend(self.backend.name, self.spec, store_dir, **docker)
        if any(n in KINDS and KINDS[n].family == "disk" for n in self.spec.nemesis):
            backend.power_layer = True  # the servers boot under docker/powerfs.py
        if any(n in KINDS and SERVER_CLOCK in KINDS[n].needs for n in self.spec.nemesis):
            backend.server_clock = True  # etcd's, Redis's start under zkj-timewarp (servers.py)
        return backend


def resolve(spec: TestSpec, gen: Gen | None = None, schedule: Any = None) -> ResolvedTest:
    """Validate `spec` (in place, as `validate_spec`) and resolve it. `gen` replaces the
    spec's standard fault generator (a scenario's triggered `steps(...)`) and is recorded in
    it; `schedule`, an executed one to replay, names its faults (run/recording.py)."""

    record_schedule(spec, gen, schedule)
    validate_spec(spec)
    workload = get_workload(spec.workload)
    names = [n for n in spec.nemesis if n != "none"]
    if spec.generator is not None:
        from zkjepsen.nemesis.recorded import replayed  # as fault_generator's (import-light)

        gen = replayed(spec.generator)  # what test.json holds is what runs
    else:
        gen = fault_generator(spec, names)
    return ResolvedTest(
        spec=spec,
        backend=backend_info(spec.backend or ""),
        workload=workload,
        program=spec_program(spec),
        generator=gen,
        checkers=checkers_for(spec),
    )


def reportable_kinds(spec: TestSpec) -> set[str]:
    """Every `checker:kind` label the run's workload can report (violation_kinds' labels); a
    checker that types no violation is named bare."""

    out: set[str] = set()
    for name, checker in get_workload(spec.workload).checkers(spec.params).items():
        kinds = getattr(checker, "KINDS", None)
        out |= {name} if kinds is None else {f"{name}:{k}" for k in kinds}
    return out
