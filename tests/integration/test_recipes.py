"""Every recipe against a real 3-node ensemble, with real kazoo sessions on the host.

- each lock recipe acquires (a fencing token: the node's czxid), excludes a second session until
  the holder releases, then hands over with a larger token;
- the rwlock lets readers share and makes a writer wait; Curator's mutex is re-entrant;
- the blog lock shows a split holder when a waiter ahead of another is SIGKILLed (no network
  fault), while kazoo's Lock and the predecessor lock keep the next waiter waiting;
- the blog lock hangs when its predecessor goes between the listing and the `exists` (its watch
  sits on a missing node), where the predecessor lock lists again and acquires.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from kazoo.client import KazooClient

from zkjepsen.recipes import RECIPES, make_recipe
from zkjepsen.recipes.base import Token
from zkjepsen.recipes.blog import AcquireHung

LOCKS = [
    "kazoo",
    "kazoo-careful",
    "blog",
    "herd",
    "predecessor",
    "paper",
    "exclusive",
    "rwlock",
    "election",
    "queue",
    "curator",
]


@pytest.fixture
def sessions(ensemble3):
    made = []

    def new(timeout: float = 4.0) -> KazooClient:
        zk = KazooClient(hosts=ensemble3.connect_string(), timeout=timeout)
        zk.start(timeout=15)
        made.append(zk)
        return zk

    yield new
    for zk in made:
        zk.stop()
        zk.close()


def _recipe(name, zk, path, ensemble3, who="c"):
    return make_recipe(name, zk, path, hosts=ensemble3.connect_string(), identifier=who, params={})


class Waiter(threading.Thread):
    """acquire() in a thread, so the test can look while it blocks; `release()` makes the same
    thread release (Curator's mutex is owned per thread)."""

    def __init__(self, recipe, timeout: float) -> None:
        super().__init__(daemon=True)
        self.recipe, self.timeout = recipe, timeout
        self.result: Token | None | BaseException = "pending"
        self.held = False
        self._release = threading.Event()
        self._acquired = threading.Event()

    def run(self) -> None:
        try:
            self.result = self.recipe.acquire(self.timeout)
            self.held = self.recipe.holding()
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            self.result = e
        self._acquired.set()
        if isinstance(self.result, Token):
            self._release.wait(60)
            self.recipe.release()

    def wait_acquired(self, timeout: float) -> None:
        self._acquired.wait(timeout)

    def release(self) -> None:
        self._release.set()
        self.join(10)


def test_registry_lists_every_recipe_with_a_flaw():
    assert set(LOCKS) <= set(RECIPES)
    assert all(info.description and info.flaw for info in RECIPES.values())


@pytest.mark.parametrize("name", LOCKS)
def test_recipe_acquires_excludes_releases(name, sessions, ensemble3):
    path = f"/t/{name}-{uuid.uuid4().hex[:6]}"
    a = _recipe(name, sessions(), path, ensemble3, "a")
    b = _recipe(name, sessions(), path, ensemble3, "b")
    ta = a.acquire(5)
    assert isinstance(ta, Token) and isinstance(ta.token, int) and ta.token > 0
    assert a.holding() and not b.holding()
    w = Waiter(b, 10)
    w.start()
    time.sleep(0.7)
    assert w.result == "pending", f"{name}: second session acquired while the first held"
    a.release()
    assert not a.holding()
    w.wait_acquired(10)
    tb = w.result
    assert isinstance(tb, Token), f"{name}: waiter did not get the lock after release: {tb!r}"
    assert tb.token > ta.token and w.held
    w.release()
    if name != "blog":  # the blog lock's own client is closed by release (single use)
        c = _recipe(name, sessions(), path, ensemble3, "c")
        assert isinstance(c.acquire(2), Token), f"{name}: lock not free after release"
        c.release()


@pytest.mark.parametrize("name", [n for n in LOCKS if n != "blog"])
def test_acquire_times_out_while_held(name, sessions, ensemble3):
    path = f"/t/to-{name}-{uuid.uuid4().hex[:6]}"
    a = _recipe(name, sessions(), path, ensemble3)
    assert a.acquire(5) is not None
    zk_b = sessions()
    b = _recipe(name, zk_b, path, ensemble3)
    assert b.acquire(0.5) is None  # timed out, holding nothing
    assert not b.holding()
    # a timed-out contender leaves no node behind to block the lock later
    a.release()
    c = _recipe(name, sessions(), path, ensemble3)
    assert c.acquire(2) is not None
    c.release()


def test_blog_lock_has_no_timeout_and_gives_up_as_hung(sessions, ensemble3):
    path = f"/t/bloghang-{uuid.uuid4().hex[:6]}"
    a = _recipe("blog", sessions(), path, ensemble3)
    a.acquire(5)
    b = _recipe("blog", sessions(), path, ensemble3)
    with pytest.raises(AcquireHung):
        b.acquire(0.5)
    a.release()


@pytest.mark.parametrize("name,hangs", [("blog", True), ("predecessor", False)])
def test_predecessor_vanishing_before_the_watch(name, hangs, sessions, ensemble3):
    """Flaw 2 of the blog lock, made deterministic: the holder releases right after the
    waiter's listing, before its `exists`. The blog lock's watch then sits on a missing node and
    never fires (it gives up as hung although the lock is free); the predecessor lock sees
    `exists` return None and lists again."""
    path = f"/t/vanish-{name}-{uuid.uuid4().hex[:6]}"
    a = _recipe(name, sessions(), path, ensemble3, "a")
    assert a.acquire(5) is not None
    b = _recipe(name, sessions(), path, ensemble3, "b")
    zk_b = b.client if name == "blog" else b.zk
    real = zk_b.get_children

    def listing_then_holder_releases(*args, **kw):
        kids = real(*args, **kw)
        if a.holding():
            a.release()
        return kids

    zk_b.get_children = listing_then_holder_releases
    if hangs:
        with pytest.raises(AcquireHung):
            b.acquire(1.5)
    else:
        tok = b.acquire(1.5)
        assert isinstance(tok, Token)
        b.release()


@pytest.mark.parametrize("name", ["rwlock", "kazoo-rwlock"])
def test_rwlock_readers_share_writer_waits(name, sessions, ensemble3):
    path = f"/t/rw-{uuid.uuid4().hex[:6]}"
    base = _recipe(name, sessions(), path, ensemble3)
    r1, r2 = base.with_mode("read"), _recipe(name, sessions(), path, ensemble3)
    r2 = r2.with_mode("read")
    wr = _recipe(name, sessions(), path, ensemble3).with_mode("write")
    assert r1.acquire(2) is not None
    assert r2.acquire(2) is not None, "a second reader must share"
    w = Waiter(wr, 10)
    w.start()
    time.sleep(0.5)
    assert w.result == "pending", "writer acquired while readers held"
    late_reader = _recipe(name, sessions(), path, ensemble3).with_mode("read")
    assert late_reader.acquire(0.5) is None, "a reader queued behind a writer must wait"
    r1.release()
    time.sleep(0.3)
    assert w.result == "pending"
    r2.release()
    w.wait_acquired(5)
    assert isinstance(w.result, Token)
    w.release()


def test_kazoo_semaphore_admits_its_permits_and_the_lease_waits_for_its_end(sessions, ensemble3):
    """kazoo's Semaphore (2 permits): two holders, a third waits until one releases. kazoo's
    NonBlockingLease (3 s): a second client is refused while the lease runs, even after the
    holder is done with it (a lease has no release), and obtains it once its end has passed."""
    path = f"/t/sem-{uuid.uuid4().hex[:6]}"
    two = {"permits": 2}
    a, b, c = (
        make_recipe("kazoo-semaphore", sessions(), path, identifier=w, params=two) for w in "abc"
    )
    ta, tb = a.acquire(5), b.acquire(5)
    assert isinstance(ta, Token) and isinstance(tb, Token) and a.holding() and b.holding()
    w = Waiter(c, 10)
    w.start()
    time.sleep(0.7)
    assert w.result == "pending", "a third holder of 2 permits"
    a.release()
    w.wait_acquired(10)
    assert isinstance(w.result, Token) and w.result.token > tb.token
    w.release()
    b.release()
    path = f"/t/lease-{uuid.uuid4().hex[:6]}"
    ttl = {"lock_ttl_s": 3.0}
    one = make_recipe("kazoo-lease", sessions(), path, identifier="one", params=ttl)
    other = make_recipe("kazoo-lease", sessions(), path, identifier="other", params=ttl)
    first = one.acquire(2)
    assert isinstance(first, Token) and one.holding()
    one.release()
    assert other.acquire(0.3) is None, "a live lease (stored end >= 2 s ahead) was taken"
    second = other.acquire(10)
    assert isinstance(second, Token) and second.token > first.token and other.holding()


def test_curator_mutex_is_reentrant(sessions, ensemble3):
    path = f"/t/cur-{uuid.uuid4().hex[:6]}"
    zk = sessions()
    m = _recipe("curator", zk, path, ensemble3)
    t1 = m.acquire(2)
    assert m.acquire(2) == t1
    m.release()
    assert m.holding() and zk.exists(t1.node)
    m.release()
    assert not m.holding() and not zk.exists(t1.node)
    assert [c for c in zk.get_children(path)] == []
    assert t1.node.rsplit("/", 1)[1].startswith("_c_")  # protected mode name carries a GUID


def test_queue_is_fifo(sessions, ensemble3):
    from zkjepsen.recipes.queue import FifoQueue

    path = f"/t/q-{uuid.uuid4().hex[:6]}"
    producer, consumer = FifoQueue(sessions(), path), FifoQueue(sessions(), path)
    for v in range(5):
        producer.put(v)
    assert [consumer.get() for _ in range(2)] == [(True, 0), (True, 1)]
    assert consumer.drain() == [2, 3, 4]
    assert consumer.get() == (False, None)


WAITER_SCRIPT = """
import sys, time
from kazoo.client import KazooClient
from zkjepsen.recipes import make_recipe
hosts, name, path = sys.argv[1:4]
zk = KazooClient(hosts=hosts, timeout=2.0); zk.start(timeout=15)
r = make_recipe(name, zk, path, hosts=hosts, identifier="b", params={})
print("ready", flush=True)
r.acquire(None)
print("acquired", flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("name,split", [("blog", True), ("kazoo", False), ("predecessor", False)])
def test_waiter_killed_ahead_of_another(name, split, sessions, ensemble3):
    """A holds; B (a host process) waits on A; C waits on B. SIGKILL B: its node goes when its
    2 s session expires. The blog lock's C takes the watch event as the lock: two holders."""
    path = f"/t/kill-{name}-{uuid.uuid4().hex[:6]}"
    zk_a = sessions()
    a = _recipe(name, zk_a, path, ensemble3, "a")
    assert a.acquire(5) is not None
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    b = subprocess.Popen(
        [sys.executable, "-c", WAITER_SCRIPT, ensemble3.connect_string(), name, path],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert b.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while len(zk_a.get_children(path)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        c = _recipe(name, sessions(), path, ensemble3, "c")
        w = Waiter(c, 15)
        w.start()
        while len(zk_a.get_children(path)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(zk_a.get_children(path)) == 3
        time.sleep(0.3)
        assert w.result == "pending"
        os.kill(b.pid, signal.SIGKILL)
        b.wait(5)
        w.wait_acquired(2.0 + 4.0)  # session timeout, plus the server's expiry tick and slack
        if split:
            assert isinstance(w.result, Token), "blog lock: C should (wrongly) think it holds"
            assert a.holding() and w.held, "split holder: A and C both believe they hold"
            assert zk_a.exists(a.node), "A's node is still there: A really holds"
        else:
            assert w.result == "pending", f"{name}: C acquired while A still held"
            a.release()
            w.wait_acquired(5)
            assert isinstance(w.result, Token)
        w.release()
    finally:
        if b.poll() is None:
            b.kill()
        if a.holding():
            a.release()
