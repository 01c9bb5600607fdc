"""What a lock service declares about itself, so the core never names one.

Jepsen's test holds a `db` value that owns its settings; here each service package
(`backends/<service>/service.py`) declares one `Service`:
- its **settings** type (a `ServiceSettings`, zkjepsen/spec.py: versions, tick, the clients'
  suite...), which checks its own fields, fills in its defaults (`settled`) and checks what
  needs the whole test (`check`: session bounds, a recipe without a driver on a version);
- its **backends** (`BackendInfo`: the shapes its servers run in: one Redis master, Sentinel,
  Redlock's five masters...);
- its **options** (`ServiceOption`: the command-line flags that set a settings field, and the
  commands that take each; its TOML table is `[<service name>]` with the fields' own names);
- its **images** (the servers' recipe for a settings value, and what the clients run);
- its **legacy keys**: the flat `test.json` keys older runs stored (read back in
  `registry.read_service`, the one compat function).

Import-light (no docker): spec validation, `list` and `--help` read these declarations before
anything starts. The registry (`backends/registry.py`) lists the services, one line each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from dataclasses import fields as dc_fields
from typing import TYPE_CHECKING, Any

from zkjepsen.errors import BadInput
from zkjepsen.spec import ServiceSettings, TestSpec

if TYPE_CHECKING:
    from zkjepsen.docker.image import ImageRecipe

# What the clients of a service run (Service.clients): the servers' own image, or zkjepsen's
# client image (the ZooKeeper node image: python3, libfaketime, the JVM and Go drivers).
SERVERS_IMAGE = "servers"
SHARED_CLIENTS = "shared"


@dataclass(frozen=True)
class ServiceOption:
    """A command-line flag that sets one field of a service's settings."""

    flag: str  # "--zk-version"
    field: str  # the settings field it sets ("version")
    help: str
    parse: Callable[[Any], Any]  # value -> the field's value (BadInput when wrong)
    metavar: str = "VALUE"
    commands: frozenset[str] = frozenset({"test", "cluster", "image", "matrix", "scenario"})
    # An axis (matrix, scenario run): a comma-separated list, one row per value of `field`.
    axis: bool = False
    owner: str = ""  # how a refusal names it: "ZooKeeper's tickTime" (default: the label's)
    row_tag: str = ""  # an axis's row suffix: "kazoo zk3.4" (tag "zk")
    int_range: tuple[int, int] | None = None  # a whole number in this range (parse gets an int)

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class BackendInfo:
    name: str
    family: str  # the service it belongs to (a `Service` name): a recipe's backends are of one
    description: str
    target: str  # "module:factory": (spec, store_dir, **make_backend's keywords) -> Backend
    nodes: int | None = None  # fixed number of servers; None: the spec's `nodes`
    # Ready to serve within this many seconds after the containers start, or the run fails.
    ready_timeout_s: float = 60.0
    sizes: tuple[int, ...] = ()  # the server counts it runs (); any
    service: str = ""  # the server software and version, for tables ("": its settings say)
    abilities: frozenset[str] = frozenset()  # what faults may ask of it (faultkinds' names)
    # How long its servers may take to serve the lock again after a heal (a leader elected, a
    # restarted server back): with the session (lease) timeout, the bound liveness judges by.
    election_s: float = 5.0


@dataclass(frozen=True)
class Service:
    name: str  # "zookeeper": the family of its backends, the TOML table's name
    label: str  # "ZooKeeper": how text names it
    settings: Callable[..., ServiceSettings]  # keyword fields -> settings (BadInput when wrong)
    backends: tuple[BackendInfo, ...]
    server_recipe: Callable[[ServiceSettings], ImageRecipe]
    # What its clients run: SERVERS_IMAGE, SHARED_CLIENTS, or a function of the settings giving
    # a recipe (ZooKeeper's client suite) or None (the servers' image).
    clients: str | Callable[[ServiceSettings], ImageRecipe | None] = SHARED_CLIENTS
    options: tuple[ServiceOption, ...] = ()
    legacy: Mapping[str, str] = field(default_factory=dict)  # old flat test.json key -> field
    # A legacy key older runs stored with this value whatever their service: no setting.
    legacy_ignored: Mapping[str, Any] = field(default_factory=dict)

    def from_table(self, table: Any, where: str) -> ServiceSettings:
        """Its settings from a TOML/JSON table (`[zookeeper]`), unknown keys refused."""
        if not isinstance(table, dict):
            raise BadInput(f"{where} must be a table of {self.label} settings, not {table!r}")
        known = [f.name for f in dc_fields(self.settings) if f.name != "name"]  # type: ignore[arg-type]
        unknown = sorted(set(map(str, table)) - set(known))
        if unknown:
            valid = ", ".join(known) or "none"
            raise BadInput(f"unknown {where} setting(s) {', '.join(unknown)}; valid ones: {valid}")
        return self.settings(**table)

    def option(self, name: str) -> ServiceOption | None:
        """The (non-axis) flag that sets field `name`, if any."""
        return next((o for o in self.options if o.field == name and not o.axis), None)

    def refusal(self, settings: ServiceSettings, backend: str) -> str:
        """Why settings of this service cannot go to `backend` (of another service)."""
        name = next(iter(settings.given()), "")
        opt = self.option(name)
        if opt is not None:
            owner = opt.owner or f"{self.label}'s"
            return f"{opt.flag} is {owner}; backend {backend} has none"
        return f"[{self.name}] settings ({name}) are {self.label}'s; backend {backend} has none"


@dataclass(frozen=True)
class NoSettings:
    """The settings of a service that has none of its own yet (a subclass names it)."""

    name = ""

    def to_json(self) -> dict[str, Any]:
        return {}

    def given(self) -> dict[str, Any]:
        return {}

    def settled(self) -> NoSettings:
        return self

    def check(self, spec: TestSpec, language: str) -> None:
        pass

    def describe(self) -> str:
        return ""

    def lacks(self) -> dict[str, str]:
        return {}
