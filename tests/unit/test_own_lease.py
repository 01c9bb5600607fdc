"""A holder whose own lease clock ended its belief (checker/nature.py `own_lease`), on
hand-made histories: a lock without renewal (Redlock) held past its TTL by the workload, with no
fault at all, is told by its own clock that its lease is over (`holding()` says no after the
validity its acquire's record gives, `valid_ms`); the next client granted after the keys ran out
is no split of the lock. But a holder that still writes while the next one holds was not told:
a defect (redis-set-px's `holding()` never asks its clock). Where the record gives no validity,
its own `holding()`'s no (an `abandon`) says it, once a lease from its asking has passed."""

from __future__ import annotations

import pytest

from zkjepsen.checker.lease import DEFECT, LEASE
from zkjepsen.checker.lock import LockChecker
from zkjepsen.client.lockclient import WireLockClient, acquired_record
from zkjepsen.client.protocol import Reply
from zkjepsen.history import History, Op
from zkjepsen.recipes.base import Token
from zkjepsen.recipes.redlock import Redlock
from zkjepsen.run.finding import finding

S = 1_000_000_000
T = 2.0  # every client's lease (the TTL)


class H:
    """Times in seconds; client N is process N; every client's lease T."""

    def __init__(self, session: bool = True):
        self.ops: list[Op] = []
        for c in (1, 2) if session else ():
            self.add(0.1, c, "event", "session", None, {"timeout_ms": int(T * 1000)}, c)

    def add(self, t, process, typ, f, key=None, value=None, client=None):
        self.ops.append(Op(len(self.ops), int(t * S), process, typ, f, key, value, client))
        return self

    def hold(self, c, t_ok, t_rel, token, valid_ms=None, asked=None):
        value = {"token": token, "seq": token, "node": f"/l/n{token}"}
        if valid_ms is not None:
            value["valid_ms"] = valid_ms
        self.add(t_ok - 0.1 if asked is None else asked, c, "invoke", "acquire", "/l", None, c)
        self.add(t_ok, c, "ok", "acquire", "/l", value, c)
        self.add(t_rel, c, "invoke", "release", "/l", None, c)
        return self.add(t_rel + 0.01, c, "ok", "release", "/l", None, c)

    def write(self, c, t, token):
        self.add(t, c, "invoke", "write", "/r", {"token": token, "step": 1, "steps": 1}, c)
        return self.add(t + 0.01, c, "ok", "write", "/r", {"version": int(t * 100)}, c)

    def abandon(self, c, t, token):
        return self.add(t, c, "event", "abandon", None, {"token": token, "after_writes": 0}, c)

    def check(self, lease_s=None):
        checker = LockChecker()
        if lease_s is not None:
            checker.with_lease(lease_s)
        return checker.check(History(sorted(self.ops, key=lambda o: o.time)))


def split(r):
    (b,) = r.details["belief_overlaps"]
    return b["nature"], b["nature_why"]


def redlock(first_writes=(1.2,), grant=3.05, valid_ms=2000):
    """The hunt's pattern (docs/findings/2026-11-29-hunt-redlock.md, store/h3/hunt1): Redlock,
    TTL 2 s, a hold of 3 s, no fault. Client 1 asks at 0.9 and is granted at 1.0, its validity
    ending 2.0 s after it asked (at 2.9 s; the keys run out on the masters a little later); it
    writes at
    `first_writes`, its `holding()` says no at 4.0 (its next check: `abandon`) and it releases.
    Client 2, retrying, is granted at `grant` once the keys ran out, and holds to 6.0."""
    h = H().hold(1, 1.0, 4.0, 10, valid_ms=valid_ms).abandon(1, 4.0, 10)
    h.hold(2, grant, 6.0, 11).write(2, 5.9, 11)
    for t in first_writes:
        h.write(1, t, 10)
    return h


def test_a_redlock_holder_past_its_validity_with_no_fault_is_a_leases_nature():
    r = redlock().check()
    nature, why = split(r)
    assert nature == LEASE
    assert "client 1 held past its own lease with no fault on it" in why
    assert "its acquire's validity ran out at 2.90s" in why
    assert r.details["beyond_lease_count"] == 0 and r.details["lease_split_count"] == 1
    # the hunt calls it close (a lease's nature), no longer found
    assert finding({"lock": r.to_json()})[0] == "close"


def test_the_validity_is_counted_from_the_asking_not_from_a_late_record_of_the_grant():
    """store/h1-redlock-own-lease: under load the grant's `ok` was recorded 70 ms and more after
    the recipe returned; counted from it, the validity ended 39 ms after the next grant (a
    correct Redlock called a defect). Counted from the invoke, recorded before the call, it
    ends no later than it did."""
    h = H().hold(1, 1.2, 4.0, 10, valid_ms=2000, asked=0.9).abandon(1, 4.0, 10)
    h.hold(2, 3.0, 6.0, 11)
    nature, why = split(h.check())
    assert nature == LEASE and "validity ran out at 2.90s" in why


def test_a_write_after_its_validity_while_the_next_holds_is_a_defect():
    # its lock let it write at 3.5 s, 0.6 s past the validity, while client 2 held: it was
    # not told (a Redlock whose holding() forgot its clock)
    r = redlock(first_writes=(1.2, 3.5)).check()
    assert split(r)[0] == DEFECT
    assert r.details["beyond_lease_count"] == 1
    assert finding({"lock": r.to_json()})[0] == "found"


def test_a_write_after_its_validity_but_before_the_next_grant_is_no_evidence_of_a_split():
    # written at 2.95 s, past the validity but before client 2 was granted: not while it held
    assert split(redlock(first_writes=(1.2, 2.95)).check())[0] == LEASE


def test_a_grant_while_the_holders_validity_lived_is_a_defect():
    # granted at 2.5 s: the masters gave the lock away while the holder's validity ran (no
    # fault, no restart): the lock is wrong, whatever the holder then did
    assert split(redlock(grant=2.5).check())[0] == DEFECT


def test_without_a_recorded_validity_its_own_holdings_no_says_it_after_a_lease_from_asking():
    # an outsider's TTL lock that records no validity: its holding() said no (abandon at 4.0)
    # and client 2 was granted 2.15 s after client 1 asked (at 0.9 s): a lease could have run out
    h = H().hold(1, 1.0, 4.0, 10).abandon(1, 4.0, 10).write(1, 1.2, 10).hold(2, 3.05, 6.0, 11)
    assert split(h.check())[0] == LEASE
    # the run's lease, when no session said one
    h2 = H(session=False).hold(1, 1.0, 4.0, 10).abandon(1, 4.0, 10).hold(2, 3.05, 6.0, 11)
    assert split(h2.check(lease_s=T))[0] == LEASE
    assert split(h2.check())[0] == DEFECT  # no lease known: nothing says it had run out


def test_without_a_recorded_validity_nothing_else_ends_the_belief():
    # no abandon: a holder that never asked (no writes) or whose holding() never said no
    h = H().hold(1, 1.0, 4.0, 10).hold(2, 3.05, 6.0, 11)
    assert split(h.check())[0] == DEFECT
    # granted before a lease from its asking had passed: the lock gave a live lease away
    h = H().hold(1, 1.0, 4.0, 10).abandon(1, 4.0, 10).hold(2, 2.5, 6.0, 11)
    assert split(h.check())[0] == DEFECT
    # redis-set-px: its holding() never asks its clock: it writes on while client 2 holds
    h = H().hold(1, 1.0, 4.0, 10).write(1, 3.8, 10).hold(2, 3.05, 6.0, 11)
    assert split(h.check())[0] == DEFECT
    # an abandon after a write while client 2 held says nothing of the write before it
    h = H().hold(1, 1.0, 4.0, 10).write(1, 3.5, 10).abandon(1, 4.0, 10).hold(2, 3.05, 6.0, 11)
    assert split(h.check())[0] == DEFECT


def test_a_no_that_came_of_session_trouble_says_nothing_of_its_lease_clock():
    """store/h4-gate/gate/zk_no_relist/gate-leader-kill (h4's flag, 12:20): a ZooKeeper waiter
    queued 4.4 s (longer than its lease) before its grant, SUSPENDED by its leader's kill,
    abandoned; its session lived on. Its lease counted from its asking had "run out" before its
    hold began: a lock that renews keeps it. Its no came of the SUSPENDED, not its clock."""
    h = (
        H()
        .hold(1, 3.0, 4.6, 10, asked=0.5)
        .add(3.5, 1, "event", "session-state", None, "SUSPENDED", 1)
    )
    h.abandon(1, 4.5, 10).hold(2, 4.0, 6.0, 11)
    assert split(h.check())[0] == DEFECT
    # an unanswered request is such a sign too
    h = H().hold(1, 3.0, 4.6, 10, asked=0.5).abandon(1, 4.5, 10).hold(2, 4.0, 6.0, 11)
    assert split(h.check())[0] == LEASE
    h.add(3.3, 1, "invoke", "write", "/r", {"token": 10, "step": 1, "steps": 1}, 1)
    h.add(3.8, 1, "info", "write", "/r", None, 1)
    assert split(h.check())[0] == DEFECT


def test_the_abandon_of_another_hold_says_nothing_of_this_one():
    h = H().hold(1, 1.0, 4.0, 10).abandon(1, 0.95, 9).hold(2, 3.05, 6.0, 11)
    assert split(h.check())[0] == DEFECT


# ---- the record: what the recipe and a program answer -------------------------------------------


class _Master:
    def set(self, *a, **k):
        return True

    def eval(self, *a):
        return None


class _Session:
    addrs = [(f"10.0.0.{i}", 6379) for i in range(1, 6)]
    timeout = 4.0

    def lock_key(self, path):
        return "zkjepsen:lock" + path

    def next_token(self, path):
        return 7


def test_redlock_records_when_its_validity_ends_after_the_call(monkeypatch):
    import zkjepsen.recipes.redlock as redlock_module

    ticks = iter(range(100))  # a clock that moves 10 ms at each reading: no real time read

    class Clock:
        @staticmethod
        def monotonic():
            return next(ticks) / 100

        sleep = staticmethod(lambda s: None)

    monkeypatch.setattr(redlock_module, "time", Clock)
    r = Redlock(_Session(), "/zkjepsen/lock", identifier="client-3")
    r.masters = [_Master() for _ in range(5)]
    tok = r.acquire(1.0)  # called at 0.00, the SETs from 0.01 to 0.02
    # validity: TTL 4 s less the SETs' 10 ms and the drift (42 ms), from 0.01: ends 3.958 s
    # after the call, whatever the answer's way to the record took
    assert tok is not None and tok.valid_ms in (3957, 3958)
    assert r.holding()  # read at 0.03
    value, _ = acquired_record(tok.to_value())
    assert value["valid_ms"] == tok.valid_ms
    assert "valid_ms" not in Token(1, 1, "/l/x").to_value()  # a recipe that knows none


class _Program:
    def __init__(self, value):
        self.value, self.faulted, self.request_timeout_s = value, None, 1.0

    def call(self, op, timeout_s=None, **fields):
        return Reply(1, "ok", self.value)

    def fault(self, sentence):
        self.faulted = sentence
        return RuntimeError(sentence)


def test_a_program_answers_valid_ms_or_is_told_it_broke_the_protocol():
    node = "/zkjepsen/lock/redis-5"
    a = WireLockClient(_Program({"token": 5, "node": node, "valid_ms": 1500})).acquire(1.0)
    assert a.value["valid_ms"] == 1500
    assert "valid_ms" not in WireLockClient(_Program({"token": 5, "node": node})).acquire(1).value
    for bad in ("1500", -1, True):
        p = _Program({"token": 5, "node": node, "valid_ms": bad})
        with pytest.raises(RuntimeError):
            WireLockClient(p).acquire(1.0)
        assert "valid_ms" in p.faulted


# ---- an update that outlasted its own lease --------------------------------------------------


def _judged(valid_ms=None, abandon_at=2.95, lease_s=T, session=True):
    """store/h1-redlock-own-lease2's atomicity find: client 1 (asked 0.9, granted 1.0) writes
    step 1 of 2, its `holding()` says no before step 2 (abandon at `abandon_at`: its validity,
    2.0 s from the asking, ran out at 2.9 s) and it releases; client 2, granted after, reads
    the half-done state. No fault, no split: only its own lease ended the update."""
    from zkjepsen.checker import compose
    from zkjepsen.checker.atomicity import AtomicityChecker
    from zkjepsen.run.analysis import with_fault_natures

    h = H(session).hold(1, 1.0, abandon_at + 0.01, 10, valid_ms=valid_ms)
    h.add(1.2, 1, "invoke", "write", "/r", {"token": 10, "step": 1, "steps": 2}, 1)
    h.add(1.21, 1, "ok", "write", "/r", {"version": 1}, 1)
    h.abandon(1, abandon_at, 10).hold(2, 3.05, 6.0, 11)
    h.add(3.1, 2, "invoke", "read", "/r", {"token": 11}, 2)
    state = {"state": "half", "step": 1, "steps": 2, "writer": 1, "writer_token": 10}
    h.add(3.11, 2, "ok", "read", "/r", {**state, "version": 1}, 2)
    checkers = {"lock": LockChecker().with_lease(lease_s), "atomicity": AtomicityChecker()}
    history = History(sorted(h.ops, key=lambda o: (o.time, o.index)))
    res = compose(checkers).check(history)
    with_fault_natures(res, history, checkers)
    (n,) = res.parts["atomicity"].details["natures"]
    return n["nature"], n["nature_why"]


def test_an_update_given_up_as_its_own_lease_ran_out_is_a_leases_nature():
    nature, why = _judged(valid_ms=2000)
    assert nature == LEASE and "gave its update up as its own lease was over" in why


def test_an_update_given_up_while_its_own_lease_lived_is_still_a_defect():
    # its validity ran to 3.4 s: at 2.95 s it gave up for another reason, no fault: a defect
    assert _judged(valid_ms=2500)[0] == DEFECT
    # no record of a validity: a holder that let go with no fault near did so on its own, as
    # a lock that renews may (test_fault_natures.py, noticed_late), whatever its lease
    assert _judged()[0] == DEFECT
    assert _judged(lease_s=T, session=False)[0] == DEFECT
