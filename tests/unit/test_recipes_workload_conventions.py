"""The history conventions the checkers rely on, driven through the real workload code with a fake
context and scripted recipes (no ZooKeeper): ok/fail/info per outcome, process retirement after
info, abandoned critical sections, fenced rejections, and the careful kazoo lock's belief."""

from __future__ import annotations

import json
import random
import time

import pytest
from kazoo.exceptions import ConnectionLoss, NoNodeError
from kazoo.protocol.states import KazooState

from zkjepsen.client.loop import LockLoop
from zkjepsen.client.recorder import Recorder
from zkjepsen.recipes.base import Token
from zkjepsen.workloads.common import discard
from zkjepsen.workloads.context import ClientContext
from zkjepsen.workloads.inprocess import InProcessLockClient


def section(ctx, recipe, tok, resource, mode, writes, hold, ready=None):
    """The lock workload's critical section (client/loop.py) over the in-process client."""
    ctx.params.update(resource_path=resource, resource=mode)
    client = InProcessLockClient(ctx, "/l")
    client.recipe = recipe
    LockLoop(ctx, client, "lock").lock_section(tok.to_value(), writes, hold, ready)


def _ctx(tmp_path, zk=None) -> ClientContext:
    rec = Recorder(str(tmp_path / "c.jsonl"), 0, 2, 5)
    return ClientContext(
        client=2,
        nclients=5,
        session=zk,
        hosts="",
        recipe="x",
        params={},
        recorder=rec,
        deadline=float("inf"),
        rng=random.Random(1),
    )


def _records(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]


class Scripted:
    """acquire() returns or raises what it is told; holding() follows a script too."""

    def __init__(self, outcome, holding=(True,)) -> None:
        self.outcome, self._holding = outcome, list(holding)
        self.released = 0

    def acquire(self, timeout):
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome

    def release(self):
        self.released += 1

    def holding(self):
        return self._holding.pop(0) if len(self._holding) > 1 else self._holding[0]


TOK = Token(42, 7, "/l/lock-0000000007")


def _loop(ctx, recipe, mode=None):
    """The one loop over an in-process client whose recipe object is `recipe`."""
    ctx.params.update(lock_path="/l")
    client = InProcessLockClient(ctx, "/l", mode)
    client.recipe = recipe
    loop = LockLoop(ctx, client, "lock")
    loop.mode = mode
    return loop, client


def test_acquire_ok_fail_info(tmp_path):
    ctx = _ctx(tmp_path)
    outcomes = []
    for outcome in (TOK, None, ConnectionLoss(), None):
        loop, client = _loop(ctx, Scripted(outcome))
        outcomes.append((loop.acquire(), client.recipe is not None))
    assert outcomes == [
        (TOK.to_value(), True),
        (None, True),  # timeout: definite, the recipe object stays
        (None, False),  # unknown: the recipe object is dropped
        (None, True),
    ]
    recs = _records(tmp_path)
    assert [(r["type"], r["process"]) for r in recs] == [
        ("invoke", 2),
        ("ok", 2),
        ("invoke", 2),
        ("fail", 2),
        ("invoke", 2),
        ("info", 2),
        ("invoke", 7),
        ("fail", 7),
    ]  # after info: a new process id (2 + nclients)
    assert recs[1]["value"] == {"token": 42, "seq": 7, "node": "/l/lock-0000000007"}
    assert all(r["key"] == "/l" and r["f"] == "acquire" for r in recs)
    assert recs[3]["error"] == "timeout" and recs[5]["error"] == "ConnectionLoss"


def test_release_info_makes_recipe_unusable(tmp_path):
    ctx = _ctx(tmp_path)
    loop, client = _loop(ctx, Scripted(TOK))
    loop.release()
    assert client.recipe is not None
    bad = Scripted(TOK)
    bad.release = lambda: (_ for _ in ()).throw(ConnectionLoss())
    loop, client = _loop(ctx, bad)
    loop.release()
    assert client.recipe is None
    assert [r["type"] for r in _records(tmp_path)] == ["invoke", "ok", "invoke", "info"]


def test_rwlock_records_carry_the_mode(tmp_path):
    ctx = _ctx(tmp_path)
    loop, _ = _loop(ctx, Scripted(TOK), mode="read")
    loop.release(), loop.acquire()
    recs = _records(tmp_path)
    assert [r["value"] for r in recs] == [
        {"mode": "read"},
        {"mode": "read"},
        {"mode": "read"},
        {**TOK.to_value(), "mode": "read"},
    ]


class FakeZk:
    """get/set/transaction on one resource; the fenced check fails once `lock_gone`."""

    def __init__(self) -> None:
        self.data, self.version, self.lock_gone = b"{}", 0, False

    def get(self, path):
        return self.data, type("S", (), {"version": self.version})()

    def set(self, path, data, version=-1):
        self.data, self.version = data, self.version + 1

    def transaction(self):
        zk = self

        class T:
            def check(self, path, version):
                self.ok = not zk.lock_gone

            def set_data(self, path, data, version=-1):
                self.payload = data

            def commit(self):
                if not self.ok:
                    return [NoNodeError(), Exception("rolled back")]
                zk.set("/r", self.payload)
                return [True, True]

        return T()


def test_critical_section_writes_fences_and_abandons(tmp_path):
    zk = FakeZk()
    ctx = _ctx(tmp_path, zk)
    section(ctx, Scripted(TOK), TOK, "/r", "fenced", 2, 0.0)
    zk.lock_gone = True
    section(ctx, Scripted(TOK), TOK, "/r", "fenced", 1, 0.0)
    section(ctx, Scripted(TOK, holding=(True, False)), TOK, "/r", "unguarded", 3, 0.0)
    recs = _records(tmp_path)
    writes = [(r["type"], r.get("value")) for r in recs if r["f"] == "write"]
    s1, s2 = {"token": 42, "step": 1, "steps": 2}, {"token": 42, "step": 2, "steps": 2}
    one = {"token": 42, "step": 1, "steps": 1}
    first = {"token": 42, "step": 1, "steps": 3}
    assert writes == [
        ("invoke", s1),
        ("ok", s1),
        ("invoke", s2),
        ("ok", s2),
        ("invoke", one),
        ("fail", one),  # fencing refused
        ("invoke", first),
        ("ok", first),
    ]
    reads = [r for r in recs if r["f"] == "read" and r["type"] == "ok"]
    assert len(reads) == 3 and reads[1]["value"]["state"] == "done"  # each holder reads first
    assert all(r["key"] == "/r" for r in recs if r["f"] == "write")
    abandon = [r for r in recs if r["f"] == "abandon"]
    assert abandon and abandon[0]["value"]["after_writes"] == 1
    assert json.loads(zk.data)["state"] == "half"  # abandoned mid-update: half-done left


def test_token_mode_rejects_lower_token(tmp_path):
    zk = FakeZk()
    zk.data = json.dumps({"top_token": 50}).encode()
    ctx = _ctx(tmp_path, zk)
    section(ctx, Scripted(TOK), TOK, "/r", "token", 1, 0.0)
    higher = Token(60, 8, "/l/x")
    section(ctx, Scripted(higher), higher, "/r", "token", 1, 0.0)
    done = [r["type"] for r in _records(tmp_path) if r["f"] == "write" and r["type"] != "invoke"]
    assert done == ["fail", "ok"]
    assert json.loads(zk.data)["top_token"] == 60


def test_discard_releases_only_a_holder():
    holder, waiter = Scripted(TOK, holding=(True,)), Scripted(TOK, holding=(False,))
    discard(holder)
    discard(waiter)
    assert holder.released == 1 and waiter.released == 0


def test_careful_kazoo_lock_stops_believing_on_suspended():
    from kazoo.client import KazooClient

    from zkjepsen.recipes.kazoo_lock import CarefulKazooLock, KazooLock

    zk = KazooClient(hosts="127.0.0.1:1")  # never started: the Lock object only needs a handler
    plain, careful = KazooLock(zk, "/l"), CarefulKazooLock(zk, "/l")
    plain.lock.is_acquired = careful.lock.is_acquired = True
    for listener in list(zk.state_listeners):
        listener(KazooState.SUSPENDED)
    assert plain.holding() is True  # kazoo's own flag survives, the flaw under test
    assert careful.holding() is False
    careful.close()
    assert careful._on_state not in zk.state_listeners


class Closing(Scripted):
    closed = 0

    def close(self):
        self.closed += 1


@pytest.mark.parametrize("abandon", [False, True])
def test_in_process_client_remakes_the_recipe_after_an_unknown_acquire(tmp_path, abandon):
    """The recipe object's lifecycle moved from the old in-process loop into
    InProcessLockClient: after an unknown outcome it is thrown away (closed) and remade; with
    `abandon_unknown` it is dropped without closing, and closed only at the end of the run."""
    made: list[Closing] = []
    ctx = _ctx(tmp_path, FakeZk())
    ctx.params["abandon_unknown"] = abandon
    ctx.make_recipe = lambda path: made.append(Closing(ConnectionLoss(), (False,))) or made[-1]
    client = InProcessLockClient(ctx, "/l")
    assert client.start() and len(made) == 1
    a = client.acquire(1.0)
    assert (a.type, a.error) == ("info", "ConnectionLoss")
    assert client.recipe is None and made[0].closed == (0 if abandon else 1)
    assert client.start() and len(made) == 2  # a fresh object for the next attempt
    client.close()
    assert [r.closed for r in made] == [1, 1]


def test_rwlock_runs_the_one_loop_with_a_client_for_each_mode(tmp_path):
    """Readers read while they hold, writers run the lock section with one write; every
    acquire and release carries its mode; both mode clients are closed at the end."""
    ctx = _ctx(tmp_path, FakeZk())
    ctx.params.update(lock_path="/l", resource_path="/r", hold_s=0.0, think_s=0.0)
    ctx.deadline = time.monotonic() + 0.3
    modes = {m: InProcessLockClient(ctx, "/l", m) for m in ("read", "write")}
    for client in modes.values():
        client.recipe = Scripted(TOK)
    closed = []
    for m, client in modes.items():
        client.close = lambda m=m: closed.append(m)
    LockLoop(ctx, modes["write"], "rwlock", modes).run()
    recs = _records(tmp_path)
    holds = [r for r in recs if r["f"] == "acquire" and r["type"] == "ok"]
    assert {h["value"]["mode"] for h in holds} == {"read", "write"}  # seeded: both drawn
    assert all(h["value"]["token"] == 42 for h in holds)
    assert all(r["value"]["mode"] in ("read", "write") for r in recs if r["f"] == "release")
    # A reader's hold has one read (the document as found) and no write; a writer's one write.
    writes = [r for r in recs if r["f"] == "write" and r["type"] == "ok"]
    n_writes = sum(1 for h in holds if h["value"]["mode"] == "write")
    assert len(writes) == n_writes and all(w["value"]["steps"] == 1 for w in writes)
    assert sorted(closed) == ["read", "write"]
