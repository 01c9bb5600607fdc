"""Triggers over live client files: armed now, fire on the k-th match, name the client."""

from __future__ import annotations

import json

import pytest

from zkjepsen.history.holding import holding_of
from zkjepsen.history.live import LiveHistory
from zkjepsen.nemesis.triggers import (
    QueueWatch,
    Trigger,
    TriggerWatch,
    on_acquire,
    on_invoke,
    on_leader_change,
    on_session,
)
from zkjepsen.store import RunDir


def live(d) -> LiveHistory:
    """The run's one follower of its clients' files, as the pool makes it."""
    return LiveHistory.of_run(RunDir(d))


def session_ids(records: list[dict]) -> frozenset[int]:
    """The session ids one client's records name (the live history's `Holding.sessions`)."""
    return holding_of({1: records}).sessions[1].ids if records else frozenset()


def append(d, client, **rec):
    path = RunDir(d).client_history(client)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps({"process": client, "client": client, **rec}) + "\n")


def test_acquire_trigger_ignores_the_past_and_names_the_client(tmp_path):
    append(tmp_path, 1, time=1, type="ok", f="acquire")  # before arming: does not count
    w = TriggerWatch(on_acquire(delay_s=0.1), live(tmp_path))
    assert w.poll() is None
    append(tmp_path, 2, time=5, type="invoke", f="acquire")
    append(tmp_path, 0, time=6, type="ok", f="acquire")  # the host's session: never a trigger
    assert w.poll() is None
    append(tmp_path, 3, time=9, type="ok", f="acquire")
    fired = w.poll()
    assert fired is not None and fired.client == 3 and fired.at_ns == 9


def test_kth_invoke_of_one_client(tmp_path):
    w = TriggerWatch(on_invoke("write", client=2, k=2), live(tmp_path))
    append(tmp_path, 1, time=1, type="invoke", f="write")
    append(tmp_path, 2, time=2, type="invoke", f="write")
    assert w.poll() is None
    append(tmp_path, 2, time=3, type="ok", f="write")
    append(tmp_path, 2, time=4, type="invoke", f="write")
    fired = w.poll()
    assert fired is not None and (fired.client, fired.at_ns) == (2, 4)


def test_session_state_and_a_cut_last_line(tmp_path):
    w = TriggerWatch(on_session("SUSPENDED"), live(tmp_path))
    append(tmp_path, 4, time=7, type="event", f="session-state", value="CONNECTED")
    with open(RunDir(tmp_path).client_history(4), "a") as f:
        f.write('{"time": 8, "type": "event", "f": "session-state", "value": "SUSP')
    assert w.poll() is None  # half a line waits for its end
    with open(RunDir(tmp_path).client_history(4), "a") as f:
        f.write('ENDED"}\n')
    fired = w.poll()
    assert fired is not None and fired.client == 4 and fired.at_ns == 8


def test_leader_change_asks_the_backend(tmp_path):
    leaders = iter(["n1", "n1", "n3"])
    w = TriggerWatch(
        on_leader_change(), live(tmp_path), leader=lambda: next(leaders), now_ns=lambda: 42
    )
    assert w.poll() is None
    fired = w.poll()
    assert fired is not None and fired.node == "n3" and fired.at_ns == 42


def test_round_trip_and_readable_form():
    t = on_session("LOST", client=3, delay_s=0.5)
    assert Trigger.from_json(json.loads(json.dumps(t.to_json()))) == t
    assert t.describe() == "on_session(client=3, state='LOST', delay_s=0.5)"
    assert on_acquire().describe() == "on_acquire()"


@pytest.mark.parametrize(
    "bad",
    [dict(kind="nope"), dict(kind="session"), dict(kind="invoked"), dict(kind="acquired", k=0)],
)
def test_bad_triggers_are_refused(bad):
    with pytest.raises(ValueError):
        Trigger(**bad)


class FakeQueue:
    """A lock path's children and their data, as a ZooKeeper session would list them."""

    def __init__(self, nodes: dict[str, bytes]) -> None:
        self.nodes = nodes

    def get_children(self, path):
        return list(self.nodes)

    def get(self, path):
        return self.nodes[path.rsplit("/", 1)[1]], None


def test_queue_watch_finds_a_new_node_and_how_many_are_ahead():
    zk = FakeQueue({"foo0000000003": b"client-2"})  # there before arming: an old node
    q = QueueWatch(zk, "/zkjepsen/lock")
    assert q.find(2) is None
    zk.nodes["foo0000000004"] = b"client-1"
    assert q.find(2) is None
    zk.nodes["foo0000000005"] = b"client-2"
    assert q.find(2) == ("foo0000000005", 2)
    assert q.find(1) == ("foo0000000004", 1)
    del zk.nodes["foo0000000003"], zk.nodes["foo0000000004"]
    assert q.find(2) == ("foo0000000005", 0)  # first in line: it will hold, not wait


class Stat:
    def __init__(self, owner: int) -> None:
        self.ephemeralOwner = owner


class OwnedQueue(FakeQueue):
    """Children with their data and the session that owns each (ZooKeeper's ephemeralOwner)."""

    def __init__(self, nodes: dict[str, tuple[bytes, int]]) -> None:
        self.owned = nodes

    def get_children(self, path):
        return list(self.owned)

    def get(self, path):
        data, owner = self.owned[path.rsplit("/", 1)[1]]
        return data, Stat(owner)


def session_event(sid: str) -> dict:
    return {"type": "event", "f": "session", "value": {"session_id": sid, "timeout_ms": 3000}}


def test_queue_watch_finds_a_clients_node_by_its_session_whatever_data_it_holds():
    """A program that stores its host's address (Curator) or nothing (go-zookeeper) in its lock
    node is found by the session its history names, as a node holding `client-N` is."""
    histories = {
        1: [session_event("0x10000a1b2c3d0000")],
        # a new session after LOST: its nodes are the client's too
        2: [session_event("0x20000000000000ff"), {"f": "acquire", "type": "invoke"},
            session_event("0x2000000000000100")],
    }  # fmt: skip
    zk = OwnedQueue({"_c_x-lock-0000000003": (b"172.18.0.9", 0x2000000000000100)})  # before
    q = QueueWatch(zk, "/zkjepsen/lock", lambda c: session_ids(histories.get(c, [])))
    zk.owned["_c_y-lock-0000000004"] = (b"172.18.0.7", 0x10000A1B2C3D0000)
    zk.owned["_c_z-lock-0000000005"] = (b"", 0x2000000000000100)
    assert q.find(1) == ("_c_y-lock-0000000004", 1)
    assert q.find(2) == ("_c_z-lock-0000000005", 2)
    assert q.find(3) is None  # no session known, no `client-3` data: not its node
    zk.owned["_c_w-lock-0000000006"] = (b"client-3", 0x999)  # a lock on sessions of its own
    assert q.find(3) == ("_c_w-lock-0000000006", 3)


def test_session_ids_read_hex_and_skip_what_is_not_a_zookeeper_session():
    records = [
        session_event("0xff"),
        session_event("etcd-lease-c1"),  # another service's name for it
        {"type": "event", "f": "session-state", "value": "LOST"},
        {"type": "event", "f": "session", "value": "0x12"},
        session_event("0X1A"),
    ]
    assert session_ids(records) == {0xFF, 0x1A}


def test_waiting_in_needs_an_invoke_and_round_trips():
    t = on_invoke("acquire", retries=3, waiting_in="/l")
    assert Trigger.from_json(json.loads(json.dumps(t.to_json()))) == t
    assert "waiting_in='/l'" in t.describe()
    with pytest.raises(ValueError):
        Trigger("acquired", waiting_in="/l")
