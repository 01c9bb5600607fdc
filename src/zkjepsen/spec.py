"""The run's value: a test as a plain, serialisable value (`TestSpec`, what `test.json` holds),
its own fields' checks, and the shape of a lock service's settings (`ServiceSettings`) that the
spec carries.

The ground floor: it imports nothing of zkjepsen but `errors`, so every room that reads a spec
(docker, backends, nemesis, report, run...) can name its type. Every setting is validated here,
before any directory, link or container exists: a wrong type, NaN, infinity or an out-of-range
value is one sentence and exit 254, whichever way it came in (command line, a TOML config, a
stored `test.json`, the pytest plugin). What needs a registry (a service's settings from a
table, a recipe's default clients, the names of recipes, workloads, faults and backends) is
read by run/spec.py (`read_spec`) and checked by run/resolve.py.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from zkjepsen.errors import BadInput


class ServiceSettings(Protocol):
    """One service's own settings, a frozen value (`test.json`'s `service` table); each
    service's `service.py` declares its type (backends/plugin.py `Service.settings`)."""

    name: str  # the service ("zookeeper"): which `Service` the settings belong to

    def to_json(self) -> dict[str, Any]: ...

    def settled(self) -> ServiceSettings:
        """The same settings with every default filled in (so test.json says what ran)."""
        ...

    def check(self, spec: TestSpec, language: str) -> None:
        """Bad input that needs the whole test (its recipe and the language its program is
        written in, its session timeout...)."""
        ...

    def describe(self) -> str:
        """What the servers run, for the console and tables ("ZooKeeper 3.8"); '' for none."""
        ...

    def given(self) -> dict[str, Any]:
        """The fields set by the user (not None): what a refusal names."""
        ...

    def lacks(self) -> dict[str, str]:
        """Abilities its backends declare (faultkinds/abilities.py) that these settings take
        away, each with why ("ZooKeeper 3.4 has no dynamic reconfiguration"): what the faults'
        one predicate reads (faultkinds/facts.py, through run/resolve.py `refusals`)."""
        ...


MAX_TIME_S = 24 * 3600.0  # one run longer than a day is a typo, not a test
# A Docker image reference: [registry/]name[:tag][@digest], lower-case path components.
IMAGE_REF = re.compile(
    r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
    r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$"
)
CLIENT_MODES = ("protocol", "in-process")
# run/resolve.py makes "acquired" a nemesis trigger; "time": each fault at its scheduled time
FAULT_TRIGGERS = ("acquired", "acquired-each", "time")
# What `fault_target` may name (nemesis/targets.py resolves each): a role, a client by number,
# or servers by name. Anything else used to fall through to a random client without a word.
# `shared-master`: a master the current Redlock holder's grant is on (nemesis/redlock.py; only
# where run/resolve.py `role_refusal` allows it).
SHARED_MASTER = "shared-master"
FAULT_TARGETS = (
    "one",
    "leader",
    "follower",
    "minority",
    "majority",
    "all",
    "holder",
    "random",
    SHARED_MASTER,
)
FAULT_TARGET_RE = re.compile(r"^(?:client:[0-9]{1,3}|n[1-9](?:,n[1-9])*)$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}$")


def _int(name: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadInput(f"{name} must be a whole number from {lo} to {hi}, not {v!r}")
    if not lo <= v <= hi:
        raise BadInput(f"{name} {v} is out of range; use {lo} to {hi}")
    return v


def _seconds(name: str, v: Any, lo: float, hi: float, allow_zero: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise BadInput(f"{name} must be a finite number of seconds, not {v!r}")
    if v < lo or v > hi or (v == lo and not allow_zero and lo == 0):
        bound = f"at least {lo:g}" if allow_zero else f"more than {lo:g}"
        raise BadInput(f"{name} {v:g} is out of range; use {bound} and at most {hi:g} seconds")
    return float(v)


def _str(name: str, v: Any, optional: bool = False) -> str | None:
    if v is None and optional:
        return None
    if not isinstance(v, str) or not v.strip():
        raise BadInput(f"{name} must be a non-empty string, not {v!r}")
    return v


def _fault_names(v: Any) -> list[str]:
    """The nemesis as a list of names. An empty one (`--nemesis ""`, `nemesis = []`, a stray
    comma) is refused, not read as `none`: a typo must not turn a fault run into a quiet one."""
    given = v
    if isinstance(v, str):
        v = v.split(",")
    if not isinstance(v, list) or not all(isinstance(n, str) for n in v):
        raise BadInput(f"nemesis must be a list of fault names, not {given!r}")
    names = [n.strip() for n in v]
    if not names or not all(names):
        raise BadInput(
            f"nemesis {given!r} has an empty fault name; give one or more names separated by "
            "commas (`zkjepsen list nemeses`), or none for a run without faults"
        )
    return names


@dataclass
class TestSpec:
    """One test, serialisable (test.json). Names are checked and resolved by
    run/resolve.py (`validate_spec`, `resolve`)."""

    __test__ = False  # a spec, not a pytest test class
    # None: kazoo, or exec when client_cmd is given (so a recipe given is told from none given)
    recipe: str = None  # type: ignore[assignment]  # a str once __post_init__ has run
    workload: str = "lock"
    nemesis: list[str] = field(default_factory=lambda: ["none"])
    nodes: int = 5
    clients: int | None = None  # None: the recipe's default (an int after resolve.settle)
    time_limit_s: float = 60.0
    recovery_s: float = 10.0
    session_timeout_s: float = 4.0
    seed: int = 0
    image: str | None = None
    pin_clients: bool = False  # True: client i talks only to server i mod n; False: all servers
    interval_s: float = 10.0  # quiet time between faults
    fault_duration_s: float = 8.0  # default fault length (pause faults: relative to the session)
    params: dict[str, Any] = field(default_factory=dict)  # workload/recipe parameters
    name: str | None = None
    max_faults: int | None = None  # a fault budget (the pytest marker sets it)
    fault_target: str | None = None  # override every fault's default target (e.g. "random")
    # The program under test speaks the client wire protocol (docs/client-protocol.md):
    client_cmd: str | None = None  # its command line (run by /bin/sh -c); recipe is then "exec"
    client_dir: str | None = None  # host dir mounted read-only at /opt/zkjepsen/program (cwd)
    client_mode: str = "protocol"  # Python recipes: through the Python driver, or "in-process"
    proxy: bool = False  # each client talks to the servers through its own wire proxy
    engine: str | None = None  # the Docker engine the run lived on (a record; --engine chooses)
    # What the servers are (backends/registry.py): zookeeper, redis, redis-sentinel, redlock,
    # ...; None: the recipe's own (validate_spec fills it in, so test.json records it).
    backend: str | None = None
    # The service's own settings (its versions, tick, the clients' suite...: each service's
    # `service.py` declares them); None: its defaults (validate_spec records them, settled).
    service: ServiceSettings | None = None
    # Stop conditions of the main phase (run/online.py): at the first violation the online
    # checker confirms, or once the power bound on the per-opportunity violation rate falls
    # below `until_power` (a rate in (0, 1)); the time limit still caps it.
    stop_on_violation: bool = False
    until_power: float | None = None
    # Every fault of the standard schedule fires on this event instead of at its time
    # (nemesis/triggers.py): "acquired" hits whoever just acquired (re-armed until it lands
    # inside a hold), the fault's own target when `fault_target` names one; "acquired-each":
    # a trigger per client, each client faulted on its own acquires, side by side (its faults
    # may overlap another client's: nemesis/generator.lanes).
    fault_trigger: str | None = None
    # A schedule given as Python (the pytest plugin's gen=, a scenario's steps, a shrink's emitted
    # test), unrolled into its items' tables (nemesis/recorded.py): it runs instead of the
    # standard schedule of `nemesis`, which then names its faults. None: the standard schedule.
    generator: list[dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        if self.recipe is None:
            self.recipe = "exec" if self.client_cmd is not None else "kazoo"
        _str("recipe", self.recipe)
        _str("workload", self.workload)
        self.nemesis = _fault_names(self.nemesis)
        _int("nodes", self.nodes, 1, 9)
        if self.clients is not None:  # None: the recipe's default (run/resolve.py settles it)
            _int("clients", self.clients, 1, 100)
        self.time_limit_s = _seconds("time limit", self.time_limit_s, 0, MAX_TIME_S)
        self.recovery_s = _seconds("recovery", self.recovery_s, 0, 3600, allow_zero=True)
        self.interval_s = _seconds("fault interval", self.interval_s, 0, MAX_TIME_S)
        self.fault_duration_s = _seconds("fault duration", self.fault_duration_s, 0, MAX_TIME_S)
        # What the servers grant is the service's to say (run/resolve.py `_check_session`).
        self.session_timeout_s = _seconds("session timeout", self.session_timeout_s, 0, 3600)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise BadInput(f"seed must be a whole number, not {self.seed!r}")
        if self.image is not None and (
            not isinstance(self.image, str) or not IMAGE_REF.match(self.image)
        ):
            raise BadInput(
                f"image {self.image!r} is not a valid image reference; give a local "
                "image name such as zkjepsen/zookeeper:mytag"
            )
        if not isinstance(self.pin_clients, bool):
            raise BadInput(f"pin_clients must be true or false, not {self.pin_clients!r}")
        if not isinstance(self.params, dict) or not all(isinstance(k, str) for k in self.params):
            raise BadInput(f"params must be a table of name = value, not {self.params!r}")
        if self.name is not None and (
            not isinstance(self.name, str) or not NAME_RE.match(self.name)
        ):
            raise BadInput(
                f"name {self.name!r} must be letters, digits, '.', '_', '+' or '-' "
                "(it names the store folder)"
            )
        if self.max_faults is not None:
            _int("max_faults", self.max_faults, 0, 100_000)
        t = self.fault_target
        if t is not None and not (
            t in FAULT_TARGETS or (isinstance(t, str) and FAULT_TARGET_RE.match(t))
        ):
            raise BadInput(
                f"fault_target {t!r} is not one of {', '.join(FAULT_TARGETS)}, client:N or "
                "server names (n1,n3); leave it out for each fault's own target"
            )
        _str("client_cmd", self.client_cmd, optional=True)
        _str("client_dir", self.client_dir, optional=True)
        if self.client_cmd is not None and self.recipe != "exec":
            raise BadInput(  # whichever recipe it is: never one of the two silently dropped
                f"give either a recipe ({self.recipe}) or a client command, not both"
            )
        if self.client_mode not in CLIENT_MODES:
            raise BadInput(
                f"client_mode must be one of {', '.join(CLIENT_MODES)}, not {self.client_mode!r}"
            )
        if not isinstance(self.proxy, bool):
            raise BadInput(f"proxy must be true or false, not {self.proxy!r}")
        _str("engine", self.engine, optional=True)
        if self.fault_trigger is not None and self.fault_trigger not in FAULT_TRIGGERS:
            raise BadInput(
                f"fault_trigger {self.fault_trigger!r} is not one of "
                f"{', '.join(FAULT_TRIGGERS)}; leave it out for faults at their times"
            )
        if not isinstance(self.stop_on_violation, bool):
            raise BadInput(
                f"stop_on_violation must be true or false, not {self.stop_on_violation!r}"
            )
        if self.until_power is not None and (
            isinstance(self.until_power, bool)
            or not isinstance(self.until_power, (int, float))
            or not 0 < self.until_power < 1
        ):
            raise BadInput(
                f"until-power {self.until_power!r} is not a rate between 0 and 1 (exclusive); "
                "give the per-fault violation rate to bound, e.g. --until-power 0.05"
            )
        _str("backend", self.backend, optional=True)
        if self.generator is not None and not (
            isinstance(self.generator, list) and all(isinstance(t, dict) for t in self.generator)
        ):
            raise BadInput(
                "generator must be a list of item tables ({sleep = s}, {fault = name, ...}, "
                f"{{heal = true}}), not {self.generator!r:.100}"
            )
        # A table (test.json's `service`) is read by its service before the spec is made
        # (run/spec.py `read_spec`): here it is a value its service made, or none.
        # (Not isinstance of the protocol: a member it gains would refuse every older type.)
        if self.service is not None and not hasattr(self.service, "settled"):
            raise BadInput(f"service must be a table of a service's settings, not {self.service!r}")

    @property
    def test_name(self) -> str:
        return self.name or f"{self.recipe}-{self.workload}-{'+'.join(self.nemesis)}".replace(
            ":", "_"
        ).replace("/", "_")

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["service"] = (
            None if self.service is None else {"name": self.service.name, **self.service.to_json()}
        )
        return out
