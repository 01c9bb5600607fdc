"""Each service's options are read by that service (issue 49B): a flag several services declare
(`--fsync`) goes, as typed, to the run's service alone, and no other service's settings are
made on the way (an etcd run's `--fsync` used to become ZooKeeper's settings first and be
carried over); an option of a service the run does not use is one sentence, exit 254. Pure:
no engine."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from zkjepsen.backends import registry
from zkjepsen.backends.shared import FSYNC, fold, shared_flags
from zkjepsen.cli.versions import service_options, service_tables
from zkjepsen.errors import BadInput
from zkjepsen.recipes import RECIPES
from zkjepsen.run.resolve import validate_spec
from zkjepsen.run.spec import read_spec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bad_input import assert_refused, here, run_cli  # noqa: E402, F401 - fixtures


def _recipe_of(backend: str) -> str:
    """A registered recipe that runs on `backend`."""
    return next(r for r, info in sorted(RECIPES.items()) if backend in info.backends)


def _cli_tables(command: str, argv: list[str]) -> dict[str, dict[str, object]]:
    """The services' tables the command line gives for `argv` (as `test` reads them)."""
    seen: dict[str, dict[str, object]] = {}

    @click.command()
    @service_options(command)
    def cmd(**opts: object) -> None:
        seen.update(service_tables(command, opts))

    result = CliRunner().invoke(cmd, argv)
    assert result.exit_code == 0, result.output
    return seen


def _refuse_making(monkeypatch: pytest.MonkeyPatch, but: str) -> None:
    """Making any service's settings but `but`'s fails the test."""
    for name, svc in registry.services().items():
        if name != but:

            def made(*a: object, _name: str = name, **kw: object) -> None:
                raise AssertionError(f"{_name}'s settings were made for a {but} run")

            monkeypatch.setattr(svc.settings, "__init__", made)


BACKENDS = sorted(registry.backends())
SHARED = sorted(shared_flags(registry.services()))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("value", FSYNC)
def test_a_shared_flag_is_read_by_the_run_s_service_alone(backend, value, monkeypatch):
    """For every backend and every value, `--fsync` from the command line lands in the run's
    service's settings, recorded there, and no other service's settings are made."""
    assert SHARED == ["--fsync"]  # a new shared flag: give it a value here too
    tables = _cli_tables("test", ["--fsync", value])
    declarers = {n for n, svc in registry.services().items() if svc.option("fsync")}
    assert set(tables) == declarers  # the command line gives it to every declarer...
    family = registry.backend_info(backend).family
    if family not in declarers:  # a service with no such flag (memcached: no disk): refused
        label = registry.service(family).label
        with pytest.raises(BadInput, match=f"--fsync is a setting of .*; {label} has none"):
            read_spec({"recipe": _recipe_of(backend), "backend": backend, **tables})
        return
    _refuse_making(monkeypatch, family)
    spec = read_spec({"recipe": _recipe_of(backend), "backend": backend, **tables})
    assert spec.service is not None and spec.service.name == family  # ...the run's reads it
    assert spec.service.given() == {"fsync": value}
    assert read_spec(spec.to_json()) == spec  # and test.json says so


def test_a_lone_shared_table_of_another_service_is_the_run_s():
    """A config's `[zookeeper] fsync` for an etcd run: the value is the run's service's, read by
    etcd's settings; a table of another service's own settings is left to be refused."""
    services = registry.services()
    assert fold({"zookeeper": {"fsync": "relaxed"}}, services, "etcd") == {
        "etcd": {"fsync": "relaxed"}
    }
    own = {"zookeeper": {"version": "3.9"}}
    assert fold(own, services, "etcd") == own
    spec = read_spec({"recipe": "etcd3-python", "zookeeper": {"fsync": "relaxed"}})
    assert spec.service is not None and spec.service.name == "etcd"


def test_settings_made_by_one_service_are_never_carried_to_another():
    zk = registry.service("zookeeper").settings(fsync="relaxed")
    with pytest.raises(BadInput, match="--fsync is ZooKeeper's fsync preset; backend etcd"):
        registry.settings_for("etcd", zk)
    spec = read_spec({"recipe": "etcd3-python"})
    spec.service = zk  # a spec made in Python with another service's settings value
    with pytest.raises(BadInput, match="backend etcd has none"):
        validate_spec(spec)


def test_a_shared_flag_s_value_is_checked_by_each_declarer_s_own_parser():
    """`--fsync off` is refused on the command line (Redis's settings take "off", its settled
    default, but its option does not), whichever service the run is."""
    seen: dict[str, object] = {}

    @click.command()
    @service_options("test")
    def cmd(**opts: object) -> None:
        seen.update(opts)

    result = CliRunner().invoke(cmd, ["--fsync", "off"])
    assert isinstance(result.exception, BadInput)  # the CLI's main: one sentence, 254
    assert "strict or relaxed, not 'off'" in str(result.exception)
    assert not seen


@pytest.mark.parametrize(
    "recipe,flag,value,owner",
    [
        ("etcd3-python", "--zk-version", "3.9", "ZooKeeper"),
        ("redis-setnx", "--zk-version", "3.9", "ZooKeeper"),
        ("pg-for-update", "--client-suite", "bookworm", "ZooKeeper"),
        ("kazoo", "--etcd-version", "3.5", "etcd"),
        ("redlock", "--etcd-version", "3.5", "etcd"),
    ],
)
def test_an_option_of_another_service_is_one_sentence(recipe, flag, value, owner, here, capsys):  # noqa: F811
    code, err = run_cli(["test", "--recipe", recipe, flag, value], capsys)
    assert_refused(code, err, here, flag, owner, "has none")
