"""A killed client believes nothing from the moment the kill went in (checker/lock_observe.py
`_end_beliefs_at_kill`), not only from its start record. etcd_waiter_lease, guided seed 1
(2026-11-29, quiet machine): a 4 s `kill-client` aimed at the next waiter on a release wrote
its start record at 5.973 s, its target (client 4) was granted at 5.976 s and wrote once, the
kill went in at 6.080 s (its end record's `went_in_ns`); client 1 was granted at 8.217 s, when
the dead holder's lease had run out. The hold of client 4 ran to its restart, and the split
was called a defect of the lock. Hand-made histories (hand_history.HandHistory)."""

from __future__ import annotations

from hand_history import LEASE_S, HandHistory
from hypothesis import given, settings
from hypothesis import strategies as st
from landed import with_observation

from zkjepsen.checker.lock import LockChecker
from zkjepsen.history import History

S = 1_000_000_000


class H(HandHistory):
    def grant(self, c, asked, granted, token):
        self.add(asked, c, "invoke", "acquire", "/l", None, c)
        return self.add(granted, c, "ok", "acquire", "/l", {"token": token}, c)

    def release(self, c, at):
        self.add(at, c, "invoke", "release", "/l", None, c)
        return self.add(at + 0.005, c, "ok", "release", "/l", None, c)

    def kill(self, c, t0, t1, went_in):
        start = {"fault_id": 1, "phase": "start", "targets": [f"c{c}"]}
        self.add(t0, "nemesis", "info", "kill-client", None, start)
        end = {**start, "phase": "end", **with_observation("kill-client", [f"c{c}"], None)}
        if went_in is not None:
            end["went_in_ns"] = int(went_in * S)
        return self.add(t1, "nemesis", "info", "kill-client", None, end)

    def overlaps(self):
        history = History(sorted(self.ops, key=lambda o: (o.time, o.index)))
        return LockChecker().with_lease(LEASE_S).check(history).details["belief_overlap_count"]


def waiter_lease_run(went_in=6.08) -> H:
    h = H(clients=(1, 3, 4))
    h.grant(3, 3.0, 3.1, 3).release(3, 5.967)
    h.grant(4, 3.2, 5.976, 4)  # granted 3 ms after the kill's start record
    h.add(5.98, 4, "invoke", "write", "/r", {"token": 4}, 4)
    h.add(5.983, 4, "ok", "write", "/r", {"token": 4}, 4)
    h.kill(4, 5.973, 10.392, went_in)
    h.grant(1, 6.0, 8.217, 5)  # the dead holder's lease ran out at 8.08 s
    h.release(1, 12.227)
    h.add(10.928, 4, "event", "session", None, {"timeout_ms": 2000}, 4)  # restarted
    return h


def test_a_hold_taken_between_a_kills_start_record_and_its_going_in_ends_at_the_kill():
    assert waiter_lease_run().overlaps() == 0
    # an older history, whose end record does not say when the kill went in: as before
    assert waiter_lease_run(went_in=None).overlaps() == 1


@settings(max_examples=60, deadline=None)
@given(
    granted=st.floats(5.974, 7.9),
    went_in=st.floats(5.974, 7.9),
    later=st.floats(8.1, 10.3),
)
def test_a_dead_client_is_a_believer_only_for_a_hold_it_took_after_the_kill_went_in(
    granted, went_in, later
):
    """Property: the dead holder's hold overlaps the later grant exactly when it was taken
    after the kill went in (a restarted client's new hold, never ended by an old kill)."""
    h = H(clients=(1, 4))
    h.grant(4, 3.2, granted, 4)
    h.kill(4, 5.973, 10.392, went_in)
    h.grant(1, 6.0, later, 5)
    h.release(1, 12.0)
    assert h.overlaps() == (0 if granted <= went_in else 1)


def test_the_cut_update_and_liveness_date_a_death_when_the_kill_went_in():
    """The same rule where the other checkers ask when a client died (nature.kills_of): a
    holder granted between a kill's start record and its going in, killed after its first
    step, left a half-done update that a kill cut, not a defect (its hold ends at the kill,
    under it); and liveness counts its hold as ended at its death, not at the start record
    before it was granted (the mutant of `_deaths` fails the last line)."""
    from zkjepsen.checker import compose
    from zkjepsen.checker.atomicity import AtomicityChecker
    from zkjepsen.checker.liveness import _deaths
    from zkjepsen.checker.nature import CUT
    from zkjepsen.run.analysis import with_fault_natures

    h = H(clients=(1, 4))
    h.grant(4, 3.2, 5.976, 4)
    h.add(5.98, 4, "invoke", "write", "/r", {"token": 4, "step": 1, "steps": 2}, 4)
    h.add(5.983, 4, "ok", "write", "/r", {"version": 1}, 4)
    h.kill(4, 5.973, 10.392, 6.08)
    h.grant(1, 6.0, 8.217, 5)
    state = {"step": 1, "steps": 2, "writer": 4, "writer_token": 4}
    h.add(8.218, 1, "invoke", "read", "/r", {"token": 5}, 1)
    h.add(8.219, 1, "ok", "read", "/r", state, 1)
    h.release(1, 9.0)
    history = History(sorted(h.ops, key=lambda o: (o.time, o.index)))
    checkers = {"lock": LockChecker().with_lease(LEASE_S), "atomicity": AtomicityChecker()}
    res = compose(checkers).check(history)
    with_fault_natures(res, history, checkers)
    assert [n["nature"] for n in res.parts["atomicity"].details["natures"]] == [CUT]
    assert _deaths(history.ops, int(11 * S)) == {4: [int(6.08 * S)]}
