"""Every word of a split's classification true (checker/lease.py `lease_nature`): a holder
frozen past its lease whose silence ended more than a lease before the later grant is a
defect by the rule, and the why says it was frozen, not that it was not (zk_suspended_held,
guided seed 1, 2026-11-29: client 3 paused 7.60-10.62 s on a 2 s lease, client 2 granted at
13.15 s, said to be "not frozen or cut off past its lease")."""

from __future__ import annotations

from hand_history import LEASE_S, HandHistory
from landed import with_observation

from zkjepsen.checker.lock import LockChecker
from zkjepsen.history import History

S = 1_000_000_000


def split_why(granted: float) -> tuple[str, str]:
    h = HandHistory(clients=(1, 2))
    h.add(1.0, 1, "invoke", "acquire", "/l", None, 1)
    h.add(1.1, 1, "ok", "acquire", "/l", {"token": 1}, 1)
    start = {"fault_id": 1, "phase": "start", "targets": ["c1"]}
    h.add(2.0, "nemesis", "info", "pause-client", None, start)
    end = {**start, "phase": "end", **with_observation("pause-client", ["c1"], None)}
    h.add(5.0, "nemesis", "info", "pause-client", None, {**end, "went_in_ns": int(2.0 * S)})
    h.add(1.5, 2, "invoke", "acquire", "/l", None, 2)
    h.add(granted, 2, "ok", "acquire", "/l", {"token": 2}, 2)
    h.add(granted + 0.5, 2, "invoke", "release", "/l", None, 2)
    h.add(9.0, 1, "invoke", "release", "/l", None, 1)
    history = History(sorted(h.ops, key=lambda o: (o.time, o.index)))
    (b,) = LockChecker().with_lease(LEASE_S).check(history).details["belief_overlaps"]
    return b["nature"], b["nature_why"]


def test_a_split_after_the_excuse_says_the_holder_was_frozen_past_its_lease():
    assert split_why(6.0)[0] == "lease"  # within a lease of the thaw: the pause explains it
    nature, why = split_why(7.5)
    assert nature == "defect"
    assert why == (
        "client 1 was silenced past its lease by pause-client (3.00s), but its silence ended "
        "2.50s before client 2 was granted, more than a lease (2s) before"
    )
    assert "not frozen" not in why
