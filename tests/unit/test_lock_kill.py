"""A killed client's belief ends at its death (it cannot act on the lock any more)."""

from __future__ import annotations

from zkjepsen.checker.lock import LockChecker
from zkjepsen.history import History, Op

S = 1_000_000_000


def history(with_kill: bool) -> History:
    recs = [(0, 1, "invoke", "acquire", None), (1, 1, "ok", "acquire", {"token": 5})]
    if with_kill:
        recs.append((2, "nemesis", "info", "kill-client",
                     {"fault_id": 1, "phase": "start", "targets": ["c1"]}))
    recs += [(3, 2, "invoke", "acquire", None), (5, 2, "ok", "acquire", {"token": 6}),
             (6, 2, "invoke", "release", None), (6.1, 2, "ok", "release", None)]
    return History([Op.from_dict({"index": i, "time": int(t * S), "process": p, "type": typ,
                                  "f": f, "value": v, "key": "/l",
                                  **({"client": p} if p != "nemesis" else {})})
                    for i, (t, p, typ, f, v) in enumerate(recs)])


def test_a_killed_holder_no_longer_believes():
    assert LockChecker().check(history(with_kill=True)).valid is True


def test_without_the_kill_the_unreleased_hold_overlaps():
    res = LockChecker().check(history(with_kill=False))
    assert res.valid is False and res.details["belief_overlap_count"] == 1
