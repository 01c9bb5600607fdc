"""Recipe registry, user recipes, shared helpers and the counting proxy - no ZooKeeper needed."""

from __future__ import annotations

import sys
import types

import pytest

from zkjepsen.errors import BadInput
from zkjepsen.recipes import RECIPES, make_recipe
from zkjepsen.recipes.base import Token, param, seq_of, sort_by_seq
from zkjepsen.recipes.instrument import CountingClient
from zkjepsen.workloads import WORKLOADS, get_workload
from zkjepsen.workloads.common import Rejected, is_definite


def test_unknown_recipe_is_bad_input_listing_the_names():
    with pytest.raises(BadInput) as e:
        make_recipe("nope", object(), "/x")
    assert "kazoo" in str(e.value) and "curator" in str(e.value)


def test_every_registered_recipe_and_workload_imports():
    import importlib

    for info in RECIPES.values():
        if info.command:  # a program in another language (tests/unit/test_drivers_build.py)
            continue
        module, _, attr = info.target.partition(":")
        cls = getattr(importlib.import_module(module), attr)
        assert cls.__module__ and importlib.import_module(cls.__module__).__doc__
        assert "flaw" in importlib.import_module(cls.__module__).__doc__.lower()
    for name in WORKLOADS:
        wl = get_workload(name)
        assert wl.name == name and wl.description


class _UserLock:
    def __init__(self, zk, path):
        self.zk, self.path, self.held = zk, path, False

    def acquire(self, timeout):
        self.held = True
        return Token(1, None, self.path + "/n")

    def release(self):
        self.held = False

    def holding(self):
        return self.held


def test_user_recipe_by_module_path(monkeypatch):
    mod = types.ModuleType("my_locks")
    mod.UserLock = _UserLock
    mod.ready = _UserLock("zk", "/ready")
    mod.NotALock = lambda zk, path, **kw: object()
    monkeypatch.setitem(sys.modules, "my_locks", mod)
    r = make_recipe("my_locks:UserLock", "zk", "/l")  # takes no keywords: called as (zk, path)
    assert isinstance(r, _UserLock) and r.path == "/l"
    assert make_recipe("my_locks:ready", "zk", "/l") is mod.ready
    with pytest.raises(BadInput, match="acquire"):
        make_recipe("my_locks:NotALock", "zk", "/l")
    with pytest.raises(BadInput, match="no 'Missing'"):
        make_recipe("my_locks:Missing", "zk", "/l")
    with pytest.raises(BadInput, match="cannot import"):
        make_recipe("no_such_module_zz:X", "zk", "/l")


def test_sequence_order_ignores_prefixes():
    kids = ["hostb-W-0000000003", "hosta-R-0000000010", "zz-R-0000000002", "not-a-contender"]
    assert sort_by_seq(kids) == ["zz-R-0000000002", "hostb-W-0000000003", "hosta-R-0000000010"]
    assert seq_of("lock-0000000001") == 1  # the dash is a separator, not a sign
    assert seq_of("x") is None


def test_param_coerces_cli_strings():
    assert param({"hold_s": "0.5"}, "hold_s", 0.1) == 0.5
    assert param({"writes": "3"}, "writes", 2) == 3
    assert param({"sync_reads": "false"}, "sync_reads", True) is False
    assert param({}, "resource", "unguarded") == "unguarded"


def test_outcome_classification():
    from kazoo.exceptions import BadVersionError, ConnectionLoss, NoNodeError, SessionExpiredError

    assert is_definite(BadVersionError()) and is_definite(NoNodeError()) and is_definite(Rejected())
    assert not is_definite(ConnectionLoss()) and not is_definite(SessionExpiredError())


class _FakeZk:
    def __init__(self):
        self.watches = []

    def get_children(self, path, watch=None):
        if watch:
            self.watches.append(watch)
        return ["a"]

    def create(self, path, *a, **kw):
        return path


def test_counting_client_counts_calls_and_each_delivered_notification_once():
    fake = _FakeZk()
    zk = CountingClient(fake)
    seen = []
    cb = seen.append
    zk.get_children("/l", watch=cb)
    zk.get_children("/l", watch=cb)
    zk.create("/l/x")
    assert zk.calls["get_children"] == 2 and zk.calls["create"] == 1
    assert fake.watches[0] is fake.watches[1]  # one wrapper per callback, as kazoo dedups them
    fake.watches[0]("event")
    assert seen == ["event"] and zk.snapshot()["notifications"] == 1


def test_the_curator_port_makes_no_zookeeper_call_when_built():
    """As Curator's InterProcessMutex: the driver rebuilds the lock after a session loss, and a
    constructor that called ZooKeeper then (ensure_path) made the run UNKNOWN."""

    class Expired:
        def __getattr__(self, name):
            raise AssertionError(f"the constructor called zk.{name}")

    lock = make_recipe("curator", Expired(), "/zkjepsen/lock", identifier="c1")
    assert not lock.holding()


def test_election_setup_can_leave_the_lock_path_to_the_recipe():
    """make_lock_path false: the setup makes only the resource; Curator then makes the latch's
    parent itself, as a container node the servers delete once empty (CURATOR-724)."""
    made: list[str] = []
    session = types.SimpleNamespace(
        ensure_path=made.append, create=lambda path, data=b"": made.append(path)
    )
    for flag, lock_made in ((True, True), (False, False)):
        made.clear()
        ctx = types.SimpleNamespace(session=session, params={"make_lock_path": flag})
        get_workload("election").setup(ctx)
        assert ("/zkjepsen/master_election" in made) is lock_made
        assert "/zkjepsen/resource" in made
