"""How long a fault's nature excuses a split (checker/nature.py `past_excuse`), on hand-made
histories: a holder frozen or cut off past its lease keeps its excuse while it is silenced and
for one lease after the heal, and never after its own history says it was told LOST; a claim
of the lock (a write invoked after `holding()` said yes) past that, while the later holder
holds, makes the split a defect. The two zoo programs the old rule let through
(benchmarks/zoo/zk_suspended_held.py: SUSPENDED and LOST change nothing;
etcd_keepalive_ignored.py: a failed keepalive changes nothing) leave exactly that pattern; a
correct holder, whose last claim is within the excuse, never is a defect (property tests)."""

from __future__ import annotations

from hand_history import LEASE_S, HandHistory
from hypothesis import given, settings
from hypothesis import strategies as st
from landed import with_observation

from zkjepsen.checker.lease import DEFECT, LEASE
from zkjepsen.checker.lock import LockChecker
from zkjepsen.checker.nature import STATE
from zkjepsen.history import History
from zkjepsen.run.finding import finding

S = 1_000_000_000
T = LEASE_S  # every client's lease (hand_history)


class H(HandHistory):
    """Times in seconds; client N is process N; every client's lease T."""

    def hold(self, c, t_ok, t_rel, token, lock="/l"):
        self.add(t_ok - 0.1, c, "invoke", "acquire", lock, None, c)
        self.add(t_ok, c, "ok", "acquire", lock, {"token": token}, c)
        self.add(t_rel, c, "invoke", "release", lock, None, c)
        return self.add(t_rel + 0.05, c, "ok", "release", lock, None, c)

    def write(self, c, t, token, typ="ok", f="write"):
        self.add(t, c, "invoke", f, "/r", {"token": token, "step": 1, "steps": 1}, c)
        value = {"version": 1} if typ == "ok" else None
        return self.add(t + 0.05, c, typ, f, "/r", value, c)

    def fault(self, t0, t1, f="isolate-client", targets=("c1",), fid=1):
        start = {"fault_id": fid, "phase": "start", "targets": list(targets)}
        self.add(t0, "nemesis", "info", f, None, start)
        end = with_observation(f, targets, None)
        return self.add(t1, "nemesis", "info", f, None, {**start, "phase": "end", **end})

    def check(self, **kw):
        return LockChecker(**kw).check(History(sorted(self.ops, key=lambda o: o.time)))


def nature(r):
    (b,) = r.details["belief_overlaps"]
    return b["nature"]


def cut(write_at, grant=3.0, heal=5.0, release=12.0, later_release=11.0, f="isolate-client"):
    """Client 1 holds 1-`release` s, cut off (or frozen) 1.5-`heal` s (past its 2 s lease);
    client 2 is granted at `grant` and holds to `later_release`; client 1 writes at each of
    `write_at`."""
    h = H().hold(1, 1.0, release, 10).hold(2, grant, later_release, 20).fault(1.5, heal, f)
    for t in write_at:
        h.write(1, t, 10)
    return h


# -- the two zoo programs' pattern ---------------------------------------------------------


def test_a_holder_that_writes_past_the_heal_and_a_lease_is_a_defect():
    # etcd_keepalive_ignored: its refreshes failed, it works on: a write 3 s after the heal
    r = cut([1.2, 8.0]).check()
    assert nature(r) == DEFECT
    why = r.details["belief_overlaps"][0]["nature_why"]
    assert "client 1 silenced by isolate-client" in why
    assert "still claimed the lock (a write at 8.00s) 3.00s after its silence ended" in why
    assert r.details["beyond_lease_count"] == 1 and r.details["lease_split_count"] == 0


def test_a_holder_that_writes_after_it_was_told_lost_is_a_defect_within_the_lease_too():
    # zk_suspended_held: it reconnects, is told its session expired, and writes on at once
    r = cut([1.2, 5.6]).state(1, 2.8, "SUSPENDED").state(1, 5.3, "LOST").check()
    assert nature(r) == DEFECT
    why = r.details["belief_overlaps"][0]["nature_why"]
    assert "0.30s after its own session-state said it was lost" in why


def test_the_first_write_after_a_lost_may_have_been_asked_before_it_by_a_frozen_holder():
    """A holder frozen between its `holding()` and its write is told LOST as it thaws and
    writes a millisecond later: that write says nothing of a belief after the LOST; the next
    one, asked after the first returned, does. Not frozen, it asked right before it wrote."""
    h = cut([1.2, 5.301], f="pause-client").state(1, 5.3, "LOST")
    assert nature(h.check()) == LEASE
    assert nature(h.write(1, 5.8, 10).check()) == DEFECT
    h = cut([1.2, 5.301]).state(1, 2.8, "SUSPENDED").state(1, 5.3, "LOST")  # cut off
    assert nature(h.check()) == DEFECT
    # frozen before its write before: that one was asked for after the thaw
    h = cut([4.9, 5.301], f="pause-client", heal=4.8).state(1, 5.3, "LOST")
    assert nature(h.check()) == DEFECT


def test_a_write_refused_by_a_fence_still_says_the_holder_believed():
    # through a fence the data is safe, but the lock's belief went on: still a defect
    r = cut([1.2]).write(1, 8.0, 10, typ="fail").check()
    assert nature(r) == DEFECT


def test_the_hunt_finds_it_where_the_old_rule_called_it_close():
    results = {"lock": cut([1.2, 8.0]).check().to_json()}
    assert finding(results)[0] == "found"


# -- what stays a lease's nature ------------------------------------------------------------


def test_a_write_within_a_lease_after_the_heal_is_a_lease_split():
    # thawed at 5 s, it had not heard yet: a lease allows it (only a fence saves the data)
    assert nature(cut([1.2, 6.9]).check()) == LEASE


def test_a_holder_that_writes_only_while_cut_off_is_a_lease_split():
    assert nature(cut([1.2, 2.5, 4.9]).check()) == LEASE


def test_a_holder_that_stops_believing_is_a_lease_split_whatever_its_release_time():
    # a careful holder sleeps out its hold after it stopped believing (no write, an abandon):
    # its recorded belief runs to 12 s, past the excuse, but it claimed nothing there
    h = cut([1.2]).state(1, 2.8, "SUSPENDED").state(1, 5.3, "LOST")
    h.add(11.9, 1, "event", "abandon", None, {"token": 10, "after_writes": 1}, 1)
    assert nature(h.check()) == LEASE


def test_a_write_after_the_later_holder_released_is_no_split_of_theirs():
    # past the excuse, but client 2 had released by then: no overlap to blame
    assert nature(cut([1.2, 9.0], later_release=8.5).check()) == LEASE


def test_a_lost_before_its_grant_is_another_session_and_says_nothing():
    h = cut([1.2, 6.0]).state(1, 0.5, "LOST")
    assert nature(h.check()) == LEASE


def test_a_second_silence_within_the_lease_after_the_heal_carries_the_excuse_on():
    # cut 1.5-5 s, then frozen 6-7 s: excused to 9 s; a write at 8.5 s is a lease's nature
    h = cut([1.2, 8.5]).fault(6.0, 7.0, "pause-client", fid=2)
    assert nature(h.check()) == LEASE
    # a silence that begins after the excuse ended carries nothing on
    h = cut([1.2, 8.5]).fault(7.5, 8.0, "pause-client", fid=2)
    assert nature(h.check()) == DEFECT


def test_a_frozen_holder_that_writes_at_its_thaw_is_a_lease_split():
    # the GC pause: its sleep ended while it was frozen; it writes the moment it thaws
    assert nature(cut([1.2, 5.01], f="pause-client").check()) == LEASE


def test_a_counters_add_is_a_claim_too():
    h = H().hold(1, 1.0, 12.0, 10).hold(2, 3.0, 11.0, 20).fault(1.5, 5.0)
    h.add(8.0, 1, "invoke", "add", "/c", 1, 1).add(8.2, 1, "ok", "add", "/c", 1, 1)
    assert nature(h.check(fail_on=("belief",))) == DEFECT


def test_a_holder_told_lost_after_another_faults_nature_is_a_defect_too():
    # a server that lost its state (the tokens went back) began the split; the holder was told
    # its session was lost and wrote on: past that fault's nature as well
    def run(lost):
        h = H().hold(1, 1.0, 9.0, 10).hold(2, 4.0, 8.0, 5)
        h.fault(2.0, 2.5, "kill-one", targets=("n1",))
        h.write(1, 5.5, 10).write(1, 6.0, 10)
        if lost:
            h.state(1, 5.0, "LOST")
        return nature(h.check())

    assert run(lost=False) == STATE
    assert run(lost=True) == DEFECT


# -- property tests --------------------------------------------------------------------------

times = st.floats(min_value=0.0, max_value=1.0)


@settings(max_examples=300, deadline=None)
@given(
    freeze=st.floats(min_value=T, max_value=3 * T),
    kind=st.sampled_from(["isolate-client", "pause-client"]),
    grant_at=times,
    told=st.booleans(),
    learn=times,
    late=st.floats(min_value=0.01, max_value=3 * T),
    before=st.lists(times, max_size=3),
)
def test_the_zoo_pattern_is_always_a_defect(freeze, kind, grant_at, told, learn, late, before):
    """A holder silenced past its lease (the later holder granted while it was, or within a
    lease after), that claims the lock past the excuse while the later one holds: after the
    heal and a lease, or after its own LOST (twice: the first claim after a LOST may have
    been asked before it). Both zoo programs leave this; the old rule called every one a
    lease's nature."""
    a, b = 1.5, 1.5 + freeze
    grant = a + T + 0.1 + grant_at * (b + T - a - T - 0.2)  # its lease could have run out
    if told:
        lost = b + learn * T  # it reconnects and is told, within the lease after the heal
        act = max(lost, grant) + late
    else:
        lost, act = None, b + T + late
    end = act + 1.0
    h = H().hold(1, 1.0, end, 10).hold(2, grant, end + 0.5, 20).fault(a, b, kind)
    for x in before:  # claims while it was excused change nothing
        h.write(1, 1.0 + x * (a - 1.0), 10)
    if lost is not None:
        h.state(1, a + 0.7, "SUSPENDED").state(1, lost, "LOST")
        h.write(1, act - 0.005, 10)  # the claim it may have asked for before its LOST
    h.write(1, act, 10)
    assert nature(h.check()) == DEFECT


@settings(max_examples=300, deadline=None)
@given(
    freeze=st.floats(min_value=T, max_value=3 * T),
    kind=st.sampled_from(["isolate-client", "pause-client"]),
    grant_at=times,
    learn=times,
    writes=st.lists(times, max_size=4),
    told=st.booleans(),
    stays=st.floats(min_value=0.0, max_value=10.0),
)
def test_a_correct_holder_is_never_a_defect(freeze, kind, grant_at, learn, writes, told, stays):
    """A holder that stops claiming the lock once it learns, within a lease after the heal
    (or at its LOST, if told first), is a lease's nature however long its recorded belief lasts
    (it may sleep out its hold before it next asks `holding()`)."""
    a, b = 1.5, 1.5 + freeze
    grant = a + T + 0.1 + grant_at * (b + T - a - T - 0.2)
    learned = b + learn * T  # when it learned its lease was gone
    end = max(learned, grant) + 0.2 + stays  # its recorded belief: to its release
    h = H().hold(1, 1.0, end, 10).hold(2, grant, end + 1, 20)
    h.fault(a, b, kind)
    if told:
        h.state(1, learned, "LOST")
    for x in writes:  # every claim before it learned
        h.write(1, 1.0 + x * (learned - 1.0 - 0.001), 10)
    assert nature(h.check()) == LEASE
