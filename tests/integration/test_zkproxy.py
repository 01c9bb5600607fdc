"""The ZooKeeper wire proxy against a real ensemble: each fault happens, as the servers see it."""

from __future__ import annotations

import time

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss
from kazoo.retry import KazooRetry

from zkjepsen.client.zkproxy import ZkProxy, command


@pytest.fixture
def proxied(ensemble3):
    events: list[dict] = []
    proxy = ZkProxy([n.address for n in ensemble3.nodes], base_port=0, events=events.append).start()
    proxy.serve_control("127.0.0.1", 0)
    control = f"127.0.0.1:{proxy.listeners_control.getsockname()[1]}"
    direct = KazooClient(hosts=ensemble3.connect_string(), timeout=4)
    direct.start(timeout=15)
    clients: list[KazooClient] = []

    def client(timeout: float = 4.0) -> KazooClient:
        zk = KazooClient(hosts=proxy.connect_string(), timeout=timeout)
        zk.start(timeout=15)
        clients.append(zk)
        return zk

    yield proxy, control, events, direct, client
    for zk in [*clients, direct]:
        zk.stop()
        zk.close()
    proxy.stop()


def test_lost_create_reply_the_server_applied_it(proxied):
    proxy, control, events, direct, client = proxied
    zk = client()
    direct.ensure_path("/proxy-test")
    assert command(control, {"fault": "lose-create-reply", "n": 1})["ok"]
    with pytest.raises(ConnectionLoss):
        zk.create("/proxy-test/lost", b"x")
    direct.sync("/")  # direct may be on another server than the proxied client
    assert direct.exists("/proxy-test/lost") is not None  # applied, though never acknowledged
    assert [e["path"] for e in events if e["event"] == "create-reply-lost"] == ["/proxy-test/lost"]
    zk.create("/proxy-test/after", b"y")  # reconnected; the fault fired once
    direct.sync("/")  # direct may be on another server than the proxied client
    assert direct.exists("/proxy-test/after")


def test_dropped_pings_expire_an_idle_session_on_a_healthy_connection(proxied, caplog):
    proxy, control, events, direct, client = proxied
    zk = client(timeout=3.0)
    states: list[str] = []
    zk.add_listener(lambda s: states.append(str(s)))
    zk.create("/proxy-eph", b"", ephemeral=True)
    assert command(control, {"fault": "drop-pings"})["ok"]
    deadline = time.monotonic() + 15
    while direct.exists("/proxy-eph") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert direct.exists("/proxy-eph") is None, "the servers never expired the idle session"
    assert any(e["event"] == "ping-dropped" for e in events)
    # The proxy answered every ping, so the client never timed out its connection (kazoo's
    # "Connection time-out", which would have moved it to another server and kept the
    # session): every drop it saw was the servers closing it, and it learns of the loss only
    # from them. Not that it saw one drop only: a server closes a connection idle for the
    # session timeout on its own timer, apart from the leader's expiry of the session, so the
    # client may reconnect once onto the still-live session first (the suite saw SUSPENDED,
    # CONNECTED, SUSPENDED, LOST).
    time.sleep(1.0)
    assert "LOST" in states, states
    timeouts = [r.getMessage() for r in caplog.records if "time-out" in r.getMessage()]
    assert not timeouts, f"the client timed out a connection whose pings were answered: {timeouts}"


def test_delayed_reply_and_close_after(proxied):
    proxy, control, events, direct, client = proxied
    zk = client()
    command(control, {"fault": "delay-reply", "seconds": 1.0, "op": "getData"})
    asked_ns = time.monotonic_ns()
    zk.get("/")
    answered_ns = time.monotonic_ns()
    # the proxy held this getData's reply (its event comes between the ask and the answer, on
    # the one clock of this process), and only once; how long it took is not asserted
    held = [e for e in events if e["event"] == "reply-delayed"]
    assert [(e["op"], e["seconds"]) for e in held] == [("getData", 1.0)]
    assert asked_ns <= held[0]["at_ns"] <= answered_ns
    command(control, {"fault": "close-after", "op": "exists", "n": 2})
    zk.exists("/")
    zk.exists("/")  # answered, then the connection closes
    time.sleep(0.5)
    assert any(e["event"] == "closed-after" for e in events)
    assert zk.exists("/") is not None  # kazoo reconnected through the proxy


def test_dropped_request_the_server_never_saw_it(proxied):
    proxy, control, events, direct, client = proxied
    zk = client()
    direct.ensure_path("/proxy-drop")
    states: list[str] = []
    zk.add_listener(lambda s: states.append(str(s)))
    assert command(control, {"fault": "drop-request", "op": "delete", "n": 1})["ok"]
    with pytest.raises(ConnectionLoss):
        zk.delete("/proxy-drop")
    direct.sync("/")  # direct may be on another server than the proxied client
    assert direct.exists("/proxy-drop") is not None  # never applied: the node survives
    assert [e["op"] for e in events if e["event"] == "request-dropped"] == ["delete"]
    zk.delete("/proxy-drop")  # reconnected to the same session; the fault fired once
    direct.sync("/")  # direct may be on another server than the proxied client
    assert direct.exists("/proxy-drop") is None and "LOST" not in states


def test_held_session_outlives_the_cut_off_client_and_the_heal_lets_it_go(proxied):
    proxy, control, events, direct, client = proxied
    # Reconnect attempts at most 0.5 s apart: kazoo's default backoff would next try long after
    # the heal, when the servers have already expired the released session.
    zk = KazooClient(
        hosts=proxy.connect_string(),
        timeout=3.0,
        connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=0.5),
    )
    zk.start(timeout=15)
    try:
        _held_then_released(proxy, control, events, direct, zk)
    finally:
        zk.stop()
        zk.close()


def _held_then_released(proxy, control, events, direct, zk):
    sid = zk.client_id[0]
    states: list[str] = []
    zk.add_listener(lambda s: states.append(str(s)))
    zk.create("/proxy-held", b"", ephemeral=True)
    assert command(control, {"fault": "hold-session"})["ok"]
    time.sleep(7.0)  # more than twice the session timeout with no byte from the client
    assert states == ["SUSPENDED"], states  # cut off, and never let back in
    assert direct.exists("/proxy-held") is not None  # the proxy's pings kept the session
    held = [e for e in events if e["event"] == "session-held"]
    assert held and held[0]["session_id"] == f"0x{sid:x}"
    assert command(control, {"fault": "heal"})["ok"]
    assert zk.exists("/proxy-held") is not None  # back on the same, still-live session
    assert zk.client_id[0] == sid and "LOST" not in states
    # Held again and healed after the client has gone: nobody pings, the servers expire it.
    assert command(control, {"fault": "hold-session"})["ok"]
    zk.stop()  # its closeSession cannot get through the cut
    assert direct.exists("/proxy-held") is not None
    assert command(control, {"fault": "heal"})["ok"]
    deadline = time.monotonic() + 20  # the session timeout plus the servers' tick, generously
    while direct.exists("/proxy-held") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert direct.exists("/proxy-held") is None
