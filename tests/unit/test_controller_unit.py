"""Remote engines without Docker: the controller's switches, its code, and who owns its runs."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from zkjepsen.docker import mounts, resources
from zkjepsen.docker.engine import Engine
from zkjepsen.errors import EXIT_BAD_INPUT, BadInput
from zkjepsen.run import controller, shipping


@pytest.mark.parametrize("env", ["ZKJEPSEN_CONTROLLER", "ZKJEPSEN_FILES"])
def test_a_bad_switch_is_one_sentence_and_exit_254_before_anything(env, tmp_path):
    """Checked before Docker is even asked (DOCKER_HOST leads nowhere here)."""
    import os

    for argv in (
        ["test", "--recipe", "kazoo", "--store", str(tmp_path)],
        ["test", "--recipe", "kazoo", "--engine", "tcp://203.0.113.7:2376"],
        ["matrix", "--recipes", "kazoo", "--nemeses", "none", "--runs", "1",
         "--store", str(tmp_path / "m"), "--out", str(tmp_path / "m.md")],
    ):  # fmt: skip
        p = subprocess.run(
            [sys.executable, "-m", "zkjepsen.cli", *argv],
            env={**os.environ, env: "sometimes", "DOCKER_HOST": "unix:///nonexistent"},
            capture_output=True,
            text=True,
        )
        assert p.returncode == EXIT_BAD_INPUT, p.stderr
        (line,) = p.stderr.strip().splitlines()
        assert env in line and "'sometimes'" in line, line
    assert not list(tmp_path.glob("*/2*"))  # no run folder either


def test_switch_values(monkeypatch):
    for value, want in (("", "auto"), ("Always", "always"), ("never", "never")):
        monkeypatch.setenv(controller.MODE_ENV, value)
        assert controller.mode() == want
    monkeypatch.setenv(mounts.MODE_ENV, " COPY ")
    assert mounts.files_mode() == "copy"
    monkeypatch.setenv(mounts.MODE_ENV, "autp")
    with pytest.raises(BadInput):
        mounts.files_mode()


class _Net:
    def __init__(self, gateway):
        self.api = SimpleNamespace(
            inspect_network=lambda name: {"IPAM": {"Config": [{"Gateway": gateway}]}}
        )


def test_which_engines_need_a_controller(monkeypatch):
    monkeypatch.delenv(controller.MODE_ENV, raising=False)
    far = Engine.parse("tcp://203.0.113.7:2376")
    assert controller.wanted(far)  # another host: never asked
    here = Engine.parse("unix:///tmp/zkj-unit-a.sock")
    assert not controller.wanted(here, _Net("127.0.0.1"))  # its bridge is one of ours
    other_ns = Engine.parse("unix:///tmp/zkj-unit-b.sock")
    assert controller.wanted(other_ns, _Net("203.0.113.1"))  # another network namespace
    monkeypatch.setenv(controller.MODE_ENV, "always")
    assert controller.wanted(here, _Net("127.0.0.1"))
    monkeypatch.setenv(controller.MODE_ENV, "never")
    assert not controller.wanted(other_ns, _Net("203.0.113.1"))
    with pytest.raises(BadInput):
        controller.wanted(far)


def test_the_engine_socket_inside_the_controller(monkeypatch):
    monkeypatch.delenv(controller.SOCKET_ENV, raising=False)
    assert controller.socket_path(Engine.parse("unix:///run/x/docker.sock")) == "/run/x/docker.sock"
    assert controller.socket_path(Engine.parse("ssh://me@build-7")) == "/var/run/docker.sock"
    monkeypatch.setenv(controller.SOCKET_ENV, "/srv/docker.sock")
    assert controller.socket_path(Engine.parse("ssh://me@build-7")) == "/srv/docker.sock"


def test_the_controller_code_is_our_package_and_its_runtime_libraries_only():
    names = {shipping._norm(d.metadata["Name"]) for d in shipping.distributions()}
    assert {"kazoo", "docker", "click", "rich", "orjson", "redis", "requests"} <= names
    assert not names & shipping.PLOTTING and "pytest" not in names
    items = shipping.files()
    inside = {p for _, p in items}
    assert f"{shipping.SRC}/zkjepsen/run/controller.py" in inside
    assert any(p.startswith(f"{shipping.SITE}/kazoo-") and "dist-info" in p for p in inside)
    assert not any("__pycache__" in p for p in inside)
    assert shipping.code_hash(items, "img") == shipping.code_hash(items, "img")
    assert shipping.code_hash(items, "img") != shipping.code_hash(items, "other")


def _ctl(owner: str, host: str) -> dict:
    return {
        "Id": "c",
        "Labels": {
            resources.ROLE_LABEL: resources.CONTROLLER_ROLE,
            resources.OWNER_LABEL: owner,
            resources.OWNER_HOST_LABEL: host,
        },
    }


def test_a_controllers_run_is_orphaned_only_when_its_local_owner_is_dead():
    me, here = resources.owner_token(), resources.host_id()
    dead = "999999999:1"
    inner = {"7:123"}  # the controller's process in its own pid namespace: means nothing here
    live = resources.RunResources("r", owners=inner, controller=_ctl(me, here))
    assert not live.orphaned and live.owner_alive
    gone = resources.RunResources("r", owners=inner, controller=_ctl(dead, here))
    assert gone.orphaned and not gone.owner_alive
    elsewhere = resources.RunResources("r", owners=inner, controller=_ctl(dead, "ci-7/abc"))
    assert not elsewhere.orphaned and elsewhere.owner_elsewhere  # `cleanup --all` only
    assert not live.owner_elsewhere


def test_inside_a_controller_its_own_container_is_not_its_runs(monkeypatch):
    listed = [
        {"Id": "s", "Labels": {resources.ROLE_LABEL: "server"}},
        {"Id": "c", "Labels": {resources.ROLE_LABEL: resources.CONTROLLER_ROLE}},
    ]
    client = SimpleNamespace(api=SimpleNamespace(containers=lambda **kw: listed))
    monkeypatch.delenv(resources.INSIDE_ENV, raising=False)
    assert [c["Id"] for c in resources.run_containers(client, {})] == ["c", "s"]
    monkeypatch.setenv(resources.INSIDE_ENV, "1")
    assert [c["Id"] for c in resources.run_containers(client, {})] == ["s"]


def test_a_given_run_id_is_used_once(monkeypatch):
    monkeypatch.setenv(resources.RUN_ID_ENV, "zkj-given")
    assert resources.new_run_id() == "zkj-given"
    assert resources.new_run_id() != "zkj-given"


def test_a_scenarios_triggered_faults_are_refused_on_a_controller_engine():
    """A triggered generator is Python code reacting to the live history: it cannot travel."""
    from zkjepsen.run.spec import TestSpec

    far = Engine.parse("tcp://203.0.113.7:2376")
    with pytest.raises(BadInput) as e:
        controller.run_remote(TestSpec(recipe="kazoo"), None, far, gen=object())
    assert "\n" not in str(e.value) and "controller" in str(e.value)
