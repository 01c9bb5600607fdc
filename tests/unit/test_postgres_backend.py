"""The PostgreSQL backend's pure parts: server settings, the readiness probe's wire format
(against a scripted socket), the registry entries and the fault declaration. No Docker, no
PostgreSQL: what they do against the real server is tests/integration/test_postgres.py."""

from __future__ import annotations

import importlib
import socket
import struct
import threading

from zkjepsen.backends.postgres import probe
from zkjepsen.backends.postgres.cluster import PgSettings
from zkjepsen.backends.registry import backends, image_recipe
from zkjepsen.docker.image import default_tag
from zkjepsen.nemesis.faults import KINDS
from zkjepsen.recipes import RECIPES, resolve_backend


def test_settings_make_the_server_notice_a_dead_client_within_seconds():
    args = PgSettings().args()
    conf = dict(a.split("=", 1) for a in args[1::2])
    assert args[::2] == ["-c"] * len(conf)
    idle, every, count = (int(conf[f"tcp_keepalives_{k}"]) for k in ("idle", "interval", "count"))
    assert idle + every * count <= 6 and int(conf["tcp_user_timeout"]) <= 6000
    assert conf["log_disconnections"] == "on" and conf["listen_addresses"] == "*"
    # Off by default, as PostgreSQL ships it; zero keepalives mean the kernel's own defaults.
    assert conf["idle_in_transaction_session_timeout"] == "0"
    os_default = PgSettings.from_params({"pg_keepalives": "os", "pg_idle_tx_timeout_s": 2.5})
    conf = dict(a.split("=", 1) for a in os_default.args()[1::2])
    assert conf["tcp_keepalives_idle"] == "0" and conf["tcp_user_timeout"] == "0"
    assert conf["idle_in_transaction_session_timeout"] == "2500"


def test_backend_is_registered_with_one_server_and_its_own_image():
    info = backends()["postgres"]
    assert info.family == "postgres" and info.nodes == 1
    recipe = image_recipe("postgres")
    assert "postgresql-15" in recipe.packages and "iptables" in recipe.packages
    assert default_tag(recipe).startswith("zkjepsen/postgres:")
    assert resolve_backend("pg-advisory", None) == "postgres"


def _server(replies: bytes) -> tuple[int, list[bytes], threading.Thread]:
    """A one-shot TCP server that reads the startup message, then sends `replies`."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    got: list[bytes] = []

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            size = struct.unpack("!I", conn.recv(4))[0]
            got.append(conn.recv(size - 4))
            conn.sendall(replies)
            try:
                got.append(conn.recv(16))
            except OSError:
                pass
        srv.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return srv.getsockname()[1], got, thread


def _msg(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!I", len(body) + 4) + body


def test_probe_is_ready_only_on_ready_for_query():
    port, got, thread = _server(_msg(b"R", b"\0\0\0\0") + _msg(b"S", b"a\0b\0") + _msg(b"Z", b"I"))
    assert probe.ready("127.0.0.1", port, timeout=2)
    thread.join(5)
    assert got[0].startswith(struct.pack("!I", probe.PROTOCOL_3)) and b"user\0postgres\0" in got[0]
    assert got[1] == b"X\0\0\0\4"  # it said goodbye
    starting = _msg(b"E", b"SFATAL\0C57P03\0Mthe database system is starting up\0\0")
    port, _, _ = _server(starting)
    assert not probe.ready("127.0.0.1", port, timeout=2)
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    assert not probe.ready("127.0.0.1", port, timeout=0.5)  # nobody listening


def test_pg_recipes_run_on_postgres_and_document_source_and_flaw():
    pg = {n: i for n, i in RECIPES.items() if n.startswith("pg-")}
    assert set(pg) == {"pg-for-update", "pg-insert", "pg-advisory"}
    for name, info in pg.items():
        assert info.backends == ("postgres",) and not info.command and info.flaw, name
        module, _, attr = info.target.partition(":")
        cls = getattr(importlib.import_module(module), attr)  # psycopg is imported lazily
        doc = importlib.import_module(cls.__module__).__doc__
        assert "Source:" in doc and "Expected flaw:" in doc, name


def test_terminate_fault_is_declared_and_aimed_at_the_holder():
    assert KINDS["pg-terminate-holder"].target == "holder"
