"""A lock service is a plugin (backends/plugin.py): a fifth service is its own package plus one
line in the registry (and its recipes' entry); the core, the command line and the TOML reader
take its settings, options and abilities from what it declares."""

from __future__ import annotations

import sys
import types
from dataclasses import asdict, dataclass, replace
from typing import Any

import click
import pytest
from click.testing import CliRunner

from zkjepsen.backends import registry
from zkjepsen.backends.plugin import BackendInfo, Service, ServiceOption
from zkjepsen.errors import BadInput


@dataclass(frozen=True)
class ToySettings:
    version: str | None = None
    name = "toy"

    def __post_init__(self) -> None:
        if self.version not in (None, "1", "2"):
            raise BadInput(f"unknown toy version {self.version!r}; choose from 1, 2")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def settled(self) -> ToySettings:
        return replace(self, version=self.version or "1")

    def check(self, spec: Any, language: str) -> None:
        pass

    def describe(self) -> str:
        return f"Toy {self.version or '1'}"

    def lacks(self) -> dict[str, str]:
        return {}


TOY = Service(
    name="toy",
    label="Toy",
    settings=ToySettings,
    backends=(BackendInfo("toy", "toy", "a toy store", "toy.cluster:make", abilities=frozenset()),),
    server_recipe=lambda settings: None,  # type: ignore[arg-type,return-value]
    options=(ServiceOption("--toy-version", "version", "Toy's version.", str, metavar="V"),),
    legacy={"toy_version": "version"},
)


@pytest.fixture
def fifth_service(monkeypatch):
    """The throwaway service registered the way a real one is: its module, one registry line."""
    module = types.ModuleType("toy_service")
    module.SERVICE = TOY  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "toy_service", module)
    monkeypatch.setattr(registry, "SERVICE_MODULES", (*registry.SERVICE_MODULES, "toy_service"))
    registry.services.cache_clear()
    registry.backends.cache_clear()
    yield
    registry.services.cache_clear()
    registry.backends.cache_clear()


def test_a_fifth_service_is_one_registry_line_and_its_own_package(fifth_service):
    from zkjepsen.cli.versions import service_options, service_tables
    from zkjepsen.run.spec import read_spec

    assert "toy" in registry.backend_names() and registry.service_of("toy") is TOY
    # Its TOML table, its old flat key, and test.json's `service` table all read back the same.
    for table in ({"toy": {"version": "2"}}, {"toy_version": "2"}):
        spec = read_spec({"recipe": "kazoo", **table})
        assert spec.service == ToySettings(version="2")
        assert read_spec(spec.to_json()) == spec
    with pytest.raises(BadInput, match="unknown toy version '3'"):
        read_spec({"toy": {"version": "3"}})
    # Its option is on the commands it names, and lands in its own table.
    seen = {}

    @click.command()
    @service_options("test")
    def cmd(**opts):
        seen.update(service_tables("test", opts))

    result = CliRunner().invoke(cmd, ["--toy-version", "2"])
    assert result.exit_code == 0, result.output
    assert seen == {"toy": {"version": "2"}}
    # ...and refused, naming itself, on another service's backend.
    with pytest.raises(BadInput, match="--toy-version is Toy's; backend zookeeper has none"):
        registry.settings_for("zookeeper", ToySettings(version="2"))
    assert registry.settings_for("toy", None) == ToySettings(version="1")  # its defaults


def test_every_real_service_declares_what_the_core_asks():
    """Each service's settings type settles, round-trips and describes itself; each backend
    names a service that exists."""
    for svc in registry.services().values():
        settled = svc.settings().settled()
        assert settled.name == svc.name
        assert svc.from_table(settled.to_json(), f"[{svc.name}]") == settled
        assert isinstance(settled.describe(), str)
        for info in svc.backends:
            assert info.family == svc.name and registry.backend_info(info.name) is info
        for opt in svc.options:
            assert opt.flag.startswith("--") and opt.commands
