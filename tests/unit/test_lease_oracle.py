"""The oracle that tells a split leases allow from a defect of the lock (checker/lease.py), on
hand-made histories: a holder frozen or cut off past its lease when the next was granted is
`lease`; any other split (a shorter silence, a grant long after the thaw, no fault, a fault on
someone else, a fault never seen to land) is `defect` (the faults' other natures:
test_fault_natures.py). The lock part's line says both counts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from landed import with_observation

from zkjepsen.checker.lease import DEFECT, LEASE, UNJUDGED
from zkjepsen.checker.lock import LockChecker
from zkjepsen.history import History, Op
from zkjepsen.report.summary import summarise

S = 1_000_000_000


class H:
    """Times in seconds; client N is process N."""

    def __init__(self):
        self.ops: list[Op] = []

    def add(self, t, process, typ, f, key=None, value=None, client=None):
        self.ops.append(Op(len(self.ops), int(t * S), process, typ, f, key, value, client))
        return self

    def hold(self, c, t_ok, t_rel, token=None):
        """Client c acquires (invoke 0.1 s before the ok) and releases at t_rel."""
        self.add(t_ok - 0.1, c, "invoke", "acquire", "/l", None, c)
        self.add(t_ok, c, "ok", "acquire", "/l", {"token": token or int(t_ok * 10)}, c)
        self.add(t_rel, c, "invoke", "release", "/l", None, c)
        return self.add(t_rel + 0.05, c, "ok", "release", "/l", None, c)

    def session(self, c, t, timeout_s):
        return self.add(t, c, "event", "session", None, {"timeout_ms": int(timeout_s * 1000)}, c)

    def fault(self, t0, t1, f="pause-client", targets=("c1",), fid=1, seen=True, detail=None):
        start = {"fault_id": fid, "phase": "start", "targets": list(targets)}
        if detail:
            start["detail"] = detail
        end = with_observation(f, targets, None) if seen else {}
        self.add(t0, "nemesis", "info", f, None, start)
        return self.add(t1, "nemesis", "info", f, None, {**start, "phase": "end", **end})

    def check(self, lease_s=None):
        checker = LockChecker()
        if lease_s is not None:
            checker.with_lease(lease_s)
        return checker.check(History(sorted(self.ops, key=lambda o: o.time)))


def natures(r):
    return [b["nature"] for b in r.details["belief_overlaps"]]


def split(pause=None, grant=4.5, ttl=2.0, **fault):
    """Client 1 holds from 1 s to 9 s (its session: `ttl`); client 2 is granted at `grant`;
    `pause`: (start, end) of a fault on client 1."""
    h = H().session(1, 0.5, ttl).session(2, 0.5, ttl).hold(1, 1, 9).hold(2, grant, grant + 0.5)
    if pause is not None:
        h.fault(*pause, **fault)
    return h


def test_a_holder_frozen_past_its_lease_when_the_next_is_granted_is_a_lease_split():
    r = split(pause=(2, 6)).check()
    assert r.valid is False  # the verdict judged by belief is unchanged: a split is a split
    assert natures(r) == [LEASE]
    assert r.details["beyond_lease_count"] == 0
    assert r.details["lease_split_count"] == 1
    assert "client 1 silenced by pause-client" in r.details["belief_overlaps"][0]["nature_why"]
    line = summarise(r)
    assert line.startswith("1 belief overlaps; first: clients [1, 2]")
    assert line.endswith("; 0 of the 1 belief overlaps beyond a lease's or a fault's nature")


def test_a_pause_shorter_than_the_lease_is_a_defect():
    r = split(pause=(2, 3.5)).check()  # 1.5 s frozen, lease 2 s: the service had no cause
    assert natures(r) == [DEFECT]
    line = summarise(r)
    assert line.endswith("; 1 of the 1 belief overlaps beyond a lease's or a fault's nature")


def test_a_grant_before_the_lease_could_have_run_out_is_a_defect():
    # frozen 2-6 s (past the lease) but client 2 was granted 1 s into it
    assert natures(split(pause=(2, 6), grant=3).check()) == [DEFECT]


def test_no_fault_is_a_defect():
    assert natures(split().check()) == [DEFECT]


def test_a_fault_never_seen_to_land_is_no_excuse():
    assert natures(split(pause=(2, 6), seen=False).check()) == [DEFECT]


def test_a_fault_on_the_later_holder_is_no_excuse():
    assert natures(split(pause=(2, 6), targets=("c2",)).check()) == [DEFECT]


def test_a_fault_that_does_not_silence_is_no_excuse():
    # a leader killed: not a silence of the holder (power rule), whatever its length
    assert natures(split(pause=(2, 6), f="kill-leader", targets=("n1",)).check()) == [DEFECT]


def test_a_cut_off_holder_is_a_lease_split_too():
    assert natures(split(pause=(2, 6), f="isolate-client").check()) == [LEASE]


def test_a_grant_within_a_lease_after_the_thaw_is_a_lease_split():
    # frozen 2-4.5 s (2.5 s, past 2 s); granted 1 s after the thaw: the holder had not heard yet
    assert natures(split(pause=(2, 4.5), grant=5.5).check()) == [LEASE]


def test_a_lease_runs_from_its_last_renewal_not_from_the_recorded_ok():
    """A Redis key set with a TTL and never refreshed (a gate run on a loaded machine): the
    acquire was asked at 1.0 s, its ok recorded 0.17 s later, the pause began 0.01 s after
    that, and the next client was granted 1.87 s into the pause: 2.04 s after the SET could
    have gone out. The service had cause: a lease split."""
    h = H().session(1, 0.5, 2.0).session(2, 0.5, 2.0).hold(1, 1.17, 9).hold(2, 3.05, 3.5)
    h.ops[2] = Op(2, int(1.0 * S), 1, "invoke", "acquire", "/l", None, 1)  # asked at 1.0 s
    assert natures(h.fault(1.18, 4.0).check()) == [LEASE]


def test_a_holder_pinging_until_its_pause_cannot_lose_its_lease_at_once():
    # held since 1 s, paused at 6 s, the next granted at 6.5 s: at most 0.5 + 2/3 s since its
    # last renewal, under its 2 s lease
    h = split(pause=(6, 9), grant=6.5)
    assert natures(h.check()) == [DEFECT]


def test_a_grant_long_after_the_thaw_is_a_defect():
    # the holder thawed at 4.5 s and still believed at 7.5 s: it should have heard by 6.5 s
    assert natures(split(pause=(2, 4.5), grant=7.5).check()) == [DEFECT]


def test_the_lease_is_the_negotiated_one_else_the_faults_else_the_runs():
    h = H().hold(1, 1, 9).hold(2, 4.5, 5).fault(2, 6)  # 4 s frozen, no session event
    assert natures(h.check()) == [UNJUDGED]  # no lease known: neither class is claimed
    assert "unjudged (lease length unknown)" in summarise(h.check())
    assert natures(h.check(lease_s=2.0)) == [LEASE]
    assert natures(h.check(lease_s=5.0)) == [DEFECT]
    h2 = H().hold(1, 1, 9).hold(2, 4.5, 5).fault(2, 6, detail={"session_timeout_s": 2})
    assert natures(h2.check(lease_s=5.0)) == [LEASE]  # the fault's own record wins
    h3 = H().session(1, 0.5, 5.0).hold(1, 1, 9).hold(2, 4.5, 5).fault(2, 6)
    assert natures(h3.check(lease_s=2.0)) == [DEFECT]  # the negotiated 5 s wins


def test_a_valid_verdict_judged_by_effect_still_says_the_natures():
    r = LockChecker(fail_on=("effect",))
    res = r.check(History(sorted(split(pause=(2, 3.5)).ops, key=lambda o: o.time)))
    assert res.valid is True
    line = summarise(res)
    assert line.startswith("1 belief overlaps, judged as near misses")
    assert line.endswith("; 1 of the 1 belief overlaps beyond a lease's or a fault's nature")


@settings(max_examples=200, deadline=None)
@given(
    holds=st.lists(
        st.tuples(st.integers(1, 4), st.integers(0, 40), st.integers(1, 30)), min_size=2, max_size=6
    ),
    faults=st.lists(
        st.tuples(st.integers(1, 4), st.integers(0, 40), st.integers(1, 40), st.booleans()),
        max_size=3,
    ),
    ttl=st.integers(1, 20),
)
def test_every_split_gets_one_nature_and_only_a_silenced_earlier_holder_is_excused(
    holds, faults, ttl
):
    """Random holds (client, grant, length in 0.1 s) and pauses (client, start, length, seen):
    the natures add up to the overlaps, and a split whose earlier holder had no landed pause
    that began before the later grant, lasting at least the lease or still on at the grant, is
    a defect."""
    h = H()
    for c in range(1, 5):
        h.session(c, 0, ttl / 10)
    for c, t0, n in holds:
        h.hold(c, 1 + t0 / 10, 1 + (t0 + n) / 10)
    for i, (c, t0, n, seen) in enumerate(faults):
        h.fault(1 + t0 / 10, 1 + (t0 + n) / 10, targets=(f"c{c}",), fid=i, seen=seen)
    r = h.check()
    d = r.details
    counts = d["beyond_lease_count"] + d["lease_split_count"] + d["unjudged_lease_count"]
    assert counts == d["belief_overlap_count"]
    for b in d["belief_overlaps"]:
        earlier, later = sorted(b["holds"], key=lambda x: x.start)
        excusing = [
            (t0, n)
            for c, t0, n, seen in faults
            if seen
            and c == earlier.client
            and 1 + t0 / 10 <= later.start / S
            and (n >= ttl or later.start / S <= 1 + (t0 + n) / 10)  # past its lease, or at it
        ]
        if not excusing:
            assert b["nature"] == DEFECT, b


@settings(max_examples=120, deadline=None)
@given(
    pause=st.floats(2.5, 6.0),  # past the 2 s lease
    told_after=st.floats(0.0, 0.3),  # its LOST, that long after the thaw
    grant_after=st.floats(2.1, 5.0),  # the next grant, more than a lease after the thaw
    claim=st.sampled_from([None, "after-told", "before-told"]),
    reports=st.booleans(),  # does its session say LOST at all
)
def test_a_holder_told_its_session_was_lost_that_never_claimed_again_is_no_defect(
    pause, told_after, grant_after, claim, reports
):
    """A holder frozen past its lease, told LOST as it thawed, asleep in its hold (a hold that
    outlasts the silence) when the next was granted more than a lease after the thaw, giving
    up at its first look (zk_orphan_create's guided hunt, 2026-11-30, seed 5: told at 17.33 s,
    the next granted at 19.70 s, its abandon at 19.71 s). Its recorded hold outlasted its
    belief; it never acted on it: a lease's nature, its why saying so. A claim after the LOST,
    or no LOST said at all, leaves it a defect (`lease_nature`'s late grant)."""
    thaw = 2.0 + pause
    grant = thaw + grant_after
    told_at = thaw + told_after
    h = H().session(1, 0.5, 2.0).session(2, 0.5, 2.0).hold(1, 1, grant + 1.0)
    h.hold(2, grant, grant + 0.5).fault(2.0, thaw)
    if reports:
        h.add(told_at, 1, "event", "session-state", None, "LOST", 1)
    if claim == "after-told":
        h.add((told_at + grant) / 2, 1, "invoke", "write", "/r", {"token": 1}, 1)
    if claim == "before-told" and told_after > 0.05:
        h.add(thaw + 0.01, 1, "invoke", "write", "/r", {"token": 1}, 1)
    (b,) = h.check().details["belief_overlaps"]
    excused = reports and claim != "after-told"
    assert b["nature"] == (LEASE if excused else DEFECT), b
    if excused:
        assert "was told its session was lost" in b["nature_why"]
        assert "made no claim after it" in b["nature_why"]
