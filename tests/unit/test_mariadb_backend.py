"""The MariaDB backend's pure parts (issue 51): its settings and the server's arguments, the
readiness probe's wire format (against a scripted socket), the registry entries, the faults it
takes and refuses, and bad input refused before anything is created. No Docker, no MariaDB:
what they do against the real server is tests/integration/test_mariadb.py."""

from __future__ import annotations

import importlib
import socket
import sys
import threading
from pathlib import Path

import pytest

from zkjepsen.backends import base
from zkjepsen.backends.mariadb import probe
from zkjepsen.backends.mariadb.cluster import SERVER_ARGS, MariaDBBackend
from zkjepsen.backends.mariadb.service import MariaDBSettings
from zkjepsen.backends.mariadb.session import parse_hosts
from zkjepsen.backends.registry import backend_names, backends, image_recipe
from zkjepsen.backends.session import session_class
from zkjepsen.cli import main
from zkjepsen.docker.image import default_tag
from zkjepsen.errors import BadInput
from zkjepsen.recipes import RECIPES, resolve_backend
from zkjepsen.run.resolve import validate_spec
from zkjepsen.run.spec import TestSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bad_input import assert_refused  # noqa: E402 - one sentence, 254, no store


def test_presets_are_innodbs_flush_at_commit_and_bad_values_are_refused():
    assert MariaDBSettings().settled().fsync == "strict"
    assert MariaDBSettings().settled().server_args() == ["--innodb-flush-log-at-trx-commit=1"]
    assert MariaDBSettings(fsync="relaxed").server_args() == ["--innodb-flush-log-at-trx-commit=2"]
    assert "=2" in MariaDBSettings(fsync="relaxed").describe()
    with pytest.raises(BadInput, match="strict or relaxed"):
        MariaDBSettings(fsync="off")


def test_the_server_notices_a_dead_client_within_seconds_and_flushes_with_fsync():
    conf = dict(a.removeprefix("--").split("=", 1) for a in SERVER_ARGS if "=" in a)
    idle, every, count = (int(conf[f"tcp-keepalive-{k}"]) for k in ("time", "interval", "probes"))
    assert idle + every * count <= 6
    assert conf["innodb-flush-method"] == "fsync"  # not O_DIRECT: the power-loss layer holds it
    assert "--skip-name-resolve" in SERVER_ARGS


def test_backend_is_registered_with_one_server_its_own_image_and_session():
    assert "mariadb" in backend_names()
    info = backends()["mariadb"]
    assert info.family == "mariadb" and info.nodes == 1
    recipe = image_recipe("mariadb")
    assert "mariadb-server" in recipe.packages and "iptables" in recipe.packages
    assert default_tag(recipe).startswith("zkjepsen/mariadb:")
    assert resolve_backend("mariadb-get-lock", None) == "mariadb"
    assert session_class("mariadb").__name__ == "MariaDBSession"


def test_it_names_its_redo_log_as_its_data():
    """(test_applicability.py holds every backend's declared abilities to its class.)"""
    assert "data-files" in backends()["mariadb"].abilities
    assert isinstance(object.__new__(MariaDBBackend), base.NamesDataFiles)
    assert MariaDBBackend.data_files == ("ib_logfile0",)


def _server(reply: bytes) -> int:
    """A one-shot TCP server that greets its client with `reply`, as mariadbd does."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.sendall(reply)
        srv.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1]


def _packet(payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "little") + b"\0" + payload


def test_probe_is_ready_only_on_a_protocol_10_greeting():
    hello = b"\x0a5.5.5-10.11.6-MariaDB-0+deb12u1\0" + b"\1\0\0\0" + b"x" * 20
    port = _server(_packet(hello))
    assert probe.server_version("127.0.0.1", port, timeout=2) == "10.11.6-MariaDB-0+deb12u1"
    assert probe.ready("127.0.0.1", _server(_packet(hello)), timeout=2)
    refused = b"\xff\x10\x04Too many connections"
    assert not probe.ready("127.0.0.1", _server(_packet(refused)), timeout=2)
    assert not probe.ready("127.0.0.1", _server(_packet(hello)[:10]), timeout=2)  # cut short
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    assert not probe.ready("127.0.0.1", port, timeout=0.5)  # nobody listening


def test_the_session_takes_host_port_only():
    assert parse_hosts("10.1.2.11:3306") == ("10.1.2.11", 3306)
    assert parse_hosts("10.1.2.11") == ("10.1.2.11", 3306)
    for bad in ("mysql://10.1.2.11:3306", "u@10.1.2.11:3306", "", "10.1.2.11:db"):
        with pytest.raises(ValueError):
            parse_hosts(bad)


def test_the_recipe_runs_on_mariadb_and_documents_source_and_flaw():
    info = RECIPES["mariadb-get-lock"]
    assert info.backends == ("mariadb",) and not info.command and info.flaw
    module, _, attr = info.target.partition(":")
    cls = getattr(importlib.import_module(module), attr)  # PyMySQL is imported lazily
    doc = importlib.import_module(cls.__module__).__doc__ or ""
    assert "Source:" in doc and "Expected flaw:" in doc


def test_faults_one_server_allows_and_those_it_cannot_mean():
    for ok in ("pause-client", "isolate-client", "kill-leader", "pause-leader", "power-loss-all"):
        validate_spec(TestSpec(recipe="mariadb-get-lock", nemesis=[ok]))
    for name in ("power-loss-majority", "partition-halves", "clock-rate-leader"):
        with pytest.raises(BadInput, match=f"{name} does not apply to backend mariadb"):
            validate_spec(TestSpec(recipe="mariadb-get-lock", nemesis=[name]))


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent")
    monkeypatch.delenv("ZKJEPSEN_STORE", raising=False)
    return tmp_path


@pytest.mark.parametrize(
    "args,words",
    [
        (["test", "--recipe", "mariadb-get-lock", "--backend", "postgres"], ["runs on mariadb"]),
        (["test", "--recipe", "pg-advisory", "--backend", "mariadb"], ["not on backend mariadb"]),
        (["test", "--recipe", "kazoo", "--backend", "mariadb"], ["not on backend mariadb"]),
        (["test", "--recipe", "mariadb-get-lock", "--etcd-version", "3.5"], ["backend mariadb"]),
        (["cluster", "up", "--backend", "mariadb", "--tick-ms", "200"], ["backend mariadb"]),
        (["test", "--recipe", "mariadb-get-lock", "--fsync", "off"], ["strict or relaxed"]),
    ],
)
def test_bad_input_is_refused_before_anything_is_created(args, words, here, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    assert_refused(e.value.code, capsys.readouterr().err, here, *words)


def test_a_sweep_in_multiples_of_the_locks_timing_is_refused_its_lock_has_none():
    from zkjepsen.run.sweep import lock_timing

    spec = TestSpec(recipe="mariadb-get-lock", nemesis=["pause-client"])
    timing, why = lock_timing(spec)
    assert timing is None and "MariaDB lock has no timing of its own" in why
