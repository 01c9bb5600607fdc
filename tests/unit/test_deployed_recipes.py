"""issue 51's recipes, their pure parts with the service's wire faked: what the etcd v3lock and
v3election recipes send (with a lease: the client's own, granted once and reused; without: no
lease field at all, proto3's 0, so the member makes and orphans a 60 s session), what they take
as the fence and the token; the registry names each recipe's service. The services' real
behaviour is in tests/integration (test_etcd.py, test_redis_backend.py, test_recipes.py)."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace

import pytest

from zkjepsen.recipes import RECIPES, recipe_backends
from zkjepsen.recipes import etcd_v3lock as v3


class FakeMember:
    """Answers the gateway paths the recipes use; records every request."""

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []

    def __call__(self, address, path, body, timeout):
        self.calls.append((path, body))
        if path == "v3/lease/grant":
            return {"ID": "7587", "TTL": body["TTL"]}
        if path == "v3/lock/lock":
            key = base64.b64decode(body["name"]) + b"/1da0"
            return {"key": base64.b64encode(key).decode()}
        if path == "v3/election/campaign":
            key = base64.b64decode(body["name"]) + b"/1da1"
            return {
                "leader": {
                    "name": body["name"],
                    "key": base64.b64encode(key).decode(),
                    "rev": "42",
                    "lease": body.get("lease", "0"),
                }
            }
        if path == "v3/kv/txn":
            return {
                "responses": [
                    {
                        "response_range": {
                            "kvs": [{"key": "", "create_revision": "41", "version": "1"}]
                        }
                    }
                ]
            }
        return {}


@pytest.fixture
def member(monkeypatch):
    fake = FakeMember()
    monkeypatch.setattr(v3.gateway, "call", fake)
    return fake


def session():
    from zkjepsen.backends.etcd.session import EtcdSession

    return EtcdSession("10.0.0.1:2379", timeout=4.0)


def paths(member):
    return [p for p, _ in member.calls]


def test_the_lock_without_a_lease_sends_none_and_fences_on_the_granted_key(member):
    s = session()
    lock = v3.V3LockNoLease(s, "/zkjepsen/lock", identifier="client-1")
    tok = lock.acquire(5.0)
    (body,) = [b for p, b in member.calls if p == "v3/lock/lock"]
    assert "lease" not in body and base64.b64decode(body["name"]) == b"/v3lock/zkjepsen/lock"
    assert "v3/lease/grant" not in paths(member)
    assert s.fence_key == b"/v3lock/zkjepsen/lock/1da0" and tok.token == 41
    assert lock.holding()
    lock.release()
    assert member.calls[-1] == ("v3/lock/unlock", {"key": v3.b64(b"/v3lock/zkjepsen/lock/1da0")})
    assert not lock.holding()


def test_the_lock_with_a_lease_grants_one_and_reuses_it(member):
    lock = v3.V3Lock(session(), "/zkjepsen/lock", params={"lock_ttl_s": 3})
    lock.acquire(5.0)
    lock.release()
    lock.acquire(5.0)
    grants = [b for p, b in member.calls if p == "v3/lease/grant"]
    locks = [b for p, b in member.calls if p == "v3/lock/lock"]
    assert grants == [{"TTL": "3"}]
    assert [b["lease"] for b in locks] == ["7587", "7587"]
    lock.lease.lost = True  # a keep-alive answered TTL 0: the next Lock needs a new lease
    lock.release()
    lock.acquire(5.0)
    assert len([p for p in paths(member) if p == "v3/lease/grant"]) == 2
    lock.close()
    assert ("v3/lease/revoke", {"ID": "7587"}) in member.calls


def test_the_election_campaigns_and_resigns_with_its_leader_key(member):
    from zkjepsen.recipes.etcd_v3election import V3ElectionNoLease

    s = session()
    e = V3ElectionNoLease(s, "/zkjepsen/master_election", identifier="client-2")
    tok = e.acquire(5.0)
    (body,) = [b for p, b in member.calls if p == "v3/election/campaign"]
    assert "lease" not in body and base64.b64decode(body["value"]) == b"client-2"
    assert tok.token == 42 and s.fence_key.endswith(b"/1da1")
    e.release()
    path, body = member.calls[-1]
    assert path == "v3/election/resign" and body["leader"]["rev"] == "42"


def test_a_lock_answer_without_a_key_is_no_grant(member, monkeypatch):
    monkeypatch.setattr(v3.gateway, "call", lambda *a: {"header": {}})
    lock = v3.V3LockNoLease(session(), "/l")
    with pytest.raises(RuntimeError):
        lock.acquire(1.0)
    assert not lock.holding()


def test_each_recipe_names_its_services():
    assert recipe_backends("etcd-v3lock-nolease") == ("etcd",)
    assert recipe_backends("python-redis-lock") == ("redis", "redis-sentinel")
    assert recipe_backends("pottery-redlock")[0] == "redlock"
    for name in ("kazoo-semaphore", "kazoo-rwlock", "kazoo-lease"):
        assert recipe_backends(name) == ("zookeeper",) and RECIPES[name].source == "library"


def test_the_lease_holds_by_its_own_clock(monkeypatch):
    import datetime

    from zkjepsen.recipes import kazoo_lease

    now = [datetime.datetime(2026, 11, 28, 20, 0, 0, 600000)]

    class Clock(datetime.datetime):
        @classmethod
        def utcnow(cls):
            return now[0]

    monkeypatch.setattr(kazoo_lease.datetime, "datetime", Clock)
    # kazoo stamps the lease with one utcnow() read inside its inner Lock
    monkeypatch.setattr(kazoo_lease, "NonBlockingLease", lambda *a, utcnow: bool(utcnow()))
    holder = {"holder": "client-1-1"}
    zk = SimpleNamespace(
        _session_timeout=4000,
        get=lambda node: (json.dumps(holder).encode(), SimpleNamespace(czxid=9)),
    )
    lease = kazoo_lease.KazooLease(zk, "/lease", identifier="client-1")
    tok = lease.acquire(1.0)
    assert (tok.node, tok.token) == ("/lease/lease_holder", 9)
    now[0] += datetime.timedelta(seconds=3.9)
    assert lease.holding()
    now[0] += datetime.timedelta(seconds=0.2)  # past its 4 s by its own clock
    assert not lease.holding()
    holder["holder"] = "client-2-1"  # replaced by another before we read it back: no token
    assert lease.acquire(1.0).token is None and lease.tasks == 2


def test_kazoo_lease_is_believed_from_the_now_kazoo_stamped_it_with(monkeypatch):
    """kazoo's NonBlockingLease reads `utcnow()` once it holds the lease path's inner Lock and
    writes `end = now + duration`; the application's belief counts from that reading, not from
    one taken before the call (a wait for the inner Lock would end the belief early)."""
    import datetime as dt

    from zkjepsen.recipes import kazoo_lease

    clock = [dt.datetime(2026, 1, 1)]
    fake_dt = SimpleNamespace(
        datetime=SimpleNamespace(utcnow=lambda: clock[0]), timedelta=dt.timedelta
    )

    class Lease:  # the inner Lock waited 3 s, then kazoo stamped the lease
        def __init__(self, zk, path, duration, ident, utcnow=lambda: clock[0]):
            clock[0] += dt.timedelta(seconds=3)
            self.end = utcnow() + duration

        def __bool__(self):
            return True

    monkeypatch.setattr(kazoo_lease, "datetime", fake_dt)
    monkeypatch.setattr(kazoo_lease, "NonBlockingLease", Lease)
    lease = kazoo_lease.KazooLease.__new__(kazoo_lease.KazooLease)
    lease.session, lease.path, lease.identifier = None, "/l", "c1"
    lease.duration, lease.until, lease.tasks = dt.timedelta(seconds=4), None, 0
    monkeypatch.setattr(lease, "_token", lambda ident: None)
    lease.acquire(1.0)
    clock[0] += dt.timedelta(seconds=3.5)
    assert lease.holding()  # 3.5 s into its 4 s lease
    clock[0] += dt.timedelta(seconds=0.5)
    assert not lease.holding()  # its end, by the same clock kazoo stamped it with
