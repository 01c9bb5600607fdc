"""The CURATOR-604 and kazoo-291 scenarios as definitions, the proxy's hold-session against a
fake server (only the frames' shape matters here; tests/integration/test_zkproxy.py holds a
real session), and the re-entrant kazoo 2.0 lock against a fake kazoo Lock."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from zkjepsen.client.zkproxy import PING_XID, ZkProxy, read_frame
from zkjepsen.errors import BadInput
from zkjepsen.nemesis import generator as g
from zkjepsen.nemesis.faults import FAULTS
from zkjepsen.reproduce.scenarios import SCENARIOS
from zkjepsen.run.resolve import validate_spec
from zkjepsen.run.spec import TestSpec


def planned_tables(*args, **kw):  # a plan as schedule.json's "planned" holds it
    return [p.to_json() for p in g.plan(*args, **kw)]


def test_the_stale_ephemeral_scenario_names_its_ticket_and_aims_the_hold_at_a_waiter():
    s = SCENARIOS["stale-ephemeral-quick-reconnect"]
    assert "CURATOR-604" in s.source and "CURATOR-604" in s.title
    assert s.expect["curator-java"].present == {"lock:belief"}
    assert {"lock:belief", "liveness:stuck"} <= s.expect["kazoo"].absent
    (planned,) = planned_tables(s.schedule, seed=1)
    assert planned["f"] == "proxy-hold-session" and planned["target"] == "trigger"
    assert planned["trigger"]["kind"] == "invoked" and planned["trigger"]["f"] == "acquire"
    # Longer than Curator's injected expiry (session timeout + its 2/3-timeout poll), shorter
    # than the driver's retry policy (half the request timeout), so the lock loop lives on.
    spec = s.spec("curator-java")
    assert (
        spec.session_timeout_s * 5 / 3
        < planned["duration_s"]
        < spec.params["request_timeout_s"] / 2
    )
    for recipe in s.expect:
        validate_spec(s.spec(recipe))


def test_the_reentrant_release_scenario_names_kazoo_291_and_needs_no_fault():
    s = SCENARIOS["reentrant-release"]
    assert "291" in s.source and s.schedule is None
    assert s.expect["kazoo-291"].present == {"lock:belief"}
    assert "lock:belief" in s.expect["curator"].absent
    for recipe in s.expect:
        spec = s.spec(recipe)
        assert spec.params["nested"] and spec.client_mode == "in-process"
        validate_spec(spec)


def test_nested_is_refused_where_the_loop_never_nests():
    with pytest.raises(BadInput, match="in-process"):
        validate_spec(TestSpec(recipe="kazoo-291", params={"nested": True}))


def test_hold_session_is_a_proxy_fault_kind():
    kind = FAULTS["proxy-hold-session"]
    assert kind.family == "proxy" and kind.duration == "2x"


class FakeServer:
    """Answers one connect (timeout 3000 ms, session 0x1234) and counts the pings it gets."""

    def __init__(self) -> None:
        self.ls = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.ls.getsockname()[1]}"
        self.pings = 0
        self.closed = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        c, _ = self.ls.accept()
        with c:
            read_frame(c)  # ConnectRequest
            body = struct.pack(">iiqi", 0, 3000, 0x1234, 16) + b"p" * 16
            c.sendall(struct.pack(">i", len(body)) + body)
            try:
                while True:
                    frame = read_frame(c)
                    xid, op = struct.unpack(">ii", frame[4:12])
                    if xid == PING_XID and op == 11:
                        self.pings += 1
                        c.sendall(struct.pack(">iiqi", 16, PING_XID, 0, 0))
            except (OSError, ConnectionError):
                self.closed.set()


def test_hold_session_cuts_the_client_off_and_pings_for_it_until_the_heal():
    server = FakeServer()
    events: list[dict] = []
    proxy = ZkProxy([server.address], base_port=0, events=events.append).start()
    try:
        client = socket.create_connection(("127.0.0.1", proxy.ports()[0]))
        connect = struct.pack(">iqiq", 0, 0, 3000, 0) + struct.pack(">i", 16) + b"\0" * 16
        client.sendall(struct.pack(">i", len(connect)) + connect)
        read_frame(client)  # the server's ConnectResponse, forwarded
        assert proxy.arm({"fault": "hold-session"})["ok"]
        client.settimeout(5)
        assert client.recv(1) == b""  # cut off
        again = socket.create_connection(("127.0.0.1", proxy.ports()[0]))
        again.settimeout(5)
        assert again.recv(1) == b""  # and no new connection gets through
        deadline = time.monotonic() + 10  # generous: a loaded machine; pings go every 1 s
        while server.pings < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.pings >= 2 and not server.closed.is_set()
        held = [e for e in events if e["event"] == "session-held"]
        assert held and held[0]["session_id"] == "0x1234"
        assert proxy.arm({"fault": "heal"})["ok"]
        assert server.closed.wait(5)  # the heal lets the old session go
        assert any(e["event"] == "session-released" for e in events)
    finally:
        proxy.stop()


class FakeKazooLock:
    """kazoo's Lock as far as the wrapper sees it: is_acquired, a node, release deletes it."""

    def __init__(self) -> None:
        self.is_acquired, self.deleted, self.node = False, 0, "n-0000000001"

    def acquire(self, timeout=None):
        self.is_acquired = True
        return True

    def release(self):
        if self.is_acquired:
            self.deleted += 1
        self.is_acquired = False


def test_kazoo_20_lock_reenters_but_frees_the_node_at_the_inner_release(monkeypatch):
    from zkjepsen.recipes import kazoo_lock
    from zkjepsen.recipes.base import Token

    monkeypatch.setattr(kazoo_lock, "Lock", lambda zk, path, ident: FakeKazooLock())
    monkeypatch.setattr(kazoo_lock, "token_for", lambda zk, node: Token(7, 1, node))
    lock = kazoo_lock.Kazoo20Lock(object(), "/l")
    outer = lock.acquire(1.0)
    assert lock.acquire(1.0) == outer  # re-entered at once
    lock.release()  # the inner level
    assert lock.lock.deleted == 1 and not lock.lock.is_acquired  # the node is gone...
    assert lock.holding()  # ...while the outer level still believes
    lock.release()
    assert not lock.holding() and lock.lock.deleted == 1
