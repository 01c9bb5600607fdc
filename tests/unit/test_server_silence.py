"""A fault on servers that silenced the holder (checker/lease.py `server_silences`), on
hand-made histories: a holder whose session the servers could not keep alive (a paused or killed
leader, a majority down) is in the same position as one cut off, but only where its own records
show it: its session SUSPENDED, LOST or CLOSED, or a request of it unanswered, in the fault's
window or within a lease after it. A fault on servers that never reached the holder leaves a
split between it and the next a defect, as a fault that was only sent, or missed, does."""

from __future__ import annotations

from hand_history import LEASE_S, HandHistory
from landed import with_observation

from zkjepsen.checker.lease import DEFECT, LEASE
from zkjepsen.checker.lock import LockChecker
from zkjepsen.history import History
from zkjepsen.run.finding import finding

S = 1_000_000_000
T = LEASE_S  # every client's lease (hand_history)


class H(HandHistory):
    """Times in seconds; client N is process N; every client's lease T."""

    def hold(self, c, t_ok, t_rel, token):
        self.add(t_ok - 0.1, c, "invoke", "acquire", "/l", None, c)
        self.add(t_ok, c, "ok", "acquire", "/l", {"token": token}, c)
        self.add(t_rel, c, "invoke", "release", "/l", None, c)
        return self.add(t_rel + 0.01, c, "ok", "release", "/l", None, c)

    def write(self, c, t, token, typ="ok"):
        self.add(t, c, "invoke", "write", "/r", {"token": token, "step": 1, "steps": 1}, c)
        value = {"version": int(t * 100)} if typ == "ok" else None
        return self.add(t + 0.5, c, typ, "write", "/r", value, c)

    def fault(self, t0, t1, f="pause-leader", targets=("n1",), landed=True, end=None):
        start = {"fault_id": 1, "phase": "start", "targets": list(targets)}
        self.add(t0, "nemesis", "info", f, None, start)
        end = with_observation(f, targets, end) if landed else {}
        return self.add(t1, "nemesis", "info", f, None, {**start, "phase": "end", **end})

    def check(self):
        return LockChecker().check(History(sorted(self.ops, key=lambda o: o.time)))


def split(r):
    (b,) = r.details["belief_overlaps"]
    return b["nature"], b["nature_why"], b["nature_fault"]


def base(f="pause-leader", targets=("n1",), landed=True, end=None):
    """Client 1 holds 1-12 s (writes at 1.2 s); a fault on servers 1.5-5 s; client 2 is
    granted at 4.0 s (3.1 s after client 1's lease could last have been renewed) and holds to
    11 s."""
    h = H().hold(1, 1.0, 12.0, 10).write(1, 1.2, 10).hold(2, 4.0, 11.0, 20)
    return h.fault(1.5, 5.0, f, targets, landed, end)


def test_a_holder_the_servers_cut_off_is_a_leases_nature():
    r = base().state(1, 2.0, "SUSPENDED").state(1, 5.6, "LOST").check()
    nature, why, fault = split(r)
    assert nature == LEASE and fault["kind"] == "pause-leader" and fault["targets"] == ["n1"]
    assert "client 1 silenced by pause-leader" in why
    assert r.details["beyond_lease_count"] == 0
    assert finding({"lock": r.to_json()})[0] == "close"


def test_a_holder_whose_requests_went_unanswered_under_a_killed_majority_is_too():
    r = base("kill-majority", ("n1", "n2", "n3")).write(1, 2.0, 10, typ="info").check()
    assert split(r)[0] == LEASE


def test_a_holder_the_fault_never_reached_is_a_defect():
    r = base().check()  # no sign at client 1: its session lived through it
    assert split(r)[0] == DEFECT
    assert finding({"lock": r.to_json()})[0] == "found"
    # a sign of another client says nothing of client 1
    assert split(base().state(3, 2.0, "SUSPENDED").check())[0] == DEFECT
    # a sign long after the fault and a lease is another story
    assert split(base().state(1, 7.5, "SUSPENDED").check())[0] == DEFECT


def test_a_fault_that_did_not_land_or_a_servers_clock_never_silences():
    h = base(landed=False).state(1, 2.0, "SUSPENDED")
    assert split(h.check())[0] == DEFECT
    # a clock stepped 0.2 s: too little to run a lease out (its own nature: server-clock)
    seen = {"offset_s": 0.2, "rate": None, "via": "probe", "at_ns": 1, "samples": 3}
    small = {"detail": {"offset_s": 0.2, "clock_seen": {"n1": seen}}}
    h = base("clock-bump", ("n1",), end=small).state(1, 2.0, "SUSPENDED")
    assert split(h.check())[0] == DEFECT


def test_a_holder_whose_session_outlived_the_fault_was_never_let_go():
    """store/h4-gate/gate/zk_no_relist/gate-leader-kill (h4's flag, 12:20): the holder's
    server, the leader, killed; it was SUSPENDED, and CONNECTED again on the same session (no
    LOST) after the next waiter was granted beside it: the servers kept its session, so the
    grant is the lock's (zk_no_relist's waiter that never re-lists), not a lease's."""
    h = base("kill-leader").state(1, 2.0, "SUSPENDED").state(1, 5.6, "CONNECTED")
    assert split(h.check())[0] == DEFECT
    # back soon, at 2.3: its session lived too
    h = base().state(1, 2.0, "SUSPENDED").state(1, 2.3, "RECONNECTED")
    assert split(h.check())[0] == DEFECT
    # its session expired in the fault after all (LOST): silenced to its last sign or the heal
    h = h.state(1, 2.6, "SUSPENDED").state(1, 4.5, "LOST")
    assert split(h.check())[0] == LEASE


def test_the_excuse_still_ends_a_lease_after_the_heal():
    # silenced to the heal at 5.0; a write at 8.0 while client 2 holds: 3 s past it
    r = base().state(1, 2.0, "SUSPENDED").write(1, 8.0, 10).check()
    nature, why, _ = split(r)
    assert nature == DEFECT
    assert "still claimed the lock (a write at 8.00s) 3.00s after its silence ended" in why
