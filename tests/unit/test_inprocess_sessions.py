"""The in-process client names every session it has (workloads/inprocess.py SessionNamer): the
first, and the new one after a LOST session, never the same one twice. Without the second, a
phantom check judged the grants made on the new session against the old one (a kazoo-rwlock
run under pause-client: 2 phantom grants that ZooKeeper had shown all along)."""

from __future__ import annotations

from types import SimpleNamespace

from zkjepsen.workloads.inprocess import SessionNamer


def test_a_new_session_after_lost_is_named_and_a_reconnect_to_the_same_is_not():
    zk = SimpleNamespace(client_id=(0x1A, b""), _session_timeout=4000)
    events = []
    namer = SessionNamer(zk, lambda f, v: events.append((f, v)))
    namer.on_state("CONNECTED")  # before the first is named (zk.start): state only
    namer.name()
    namer.on_state("SUSPENDED")
    namer.on_state("CONNECTED")  # the same session again
    namer.on_state("LOST")
    zk.client_id = (0x2B, b"")
    namer.on_state("CONNECTED")
    sessions = [v["session_id"] for f, v in events if f == "session"]
    assert sessions == ["0x1a", "0x2b"]
    states = [v for f, v in events if f == "session-state"]
    assert states == ["CONNECTED", "SUSPENDED", "CONNECTED", "LOST", "CONNECTED"]
    assert events[-1] == ("session", {"session_id": "0x2b", "timeout_ms": 4000})
