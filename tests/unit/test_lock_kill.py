"""A killed client's belief ends at its death (it cannot act on the lock any more)."""

from __future__ import annotations

from zkjepsen.checker.lock import LockChecker
from zkjepsen.history import History, Op

S = 1_000_000_000


def history(with_kill: bool, client_error: bool = False) -> History:
    recs = [(0, 1, "invoke", "acquire", None), (1, 1, "ok", "acquire", {"token": 5})]
    if with_kill:
        recs.append(
            (
                2,
                "nemesis",
                "info",
                "kill-client",
                {"fault_id": 1, "phase": "start", "targets": ["c1"]},
            )
        )
    if client_error:  # the recorder killed its program (client wire protocol)
        recs.append((2, 1, "event", "client-error", "the program hung: no answer to write"))
    recs += [
        (3, 2, "invoke", "acquire", None),
        (5, 2, "ok", "acquire", {"token": 6}),
        (6, 2, "invoke", "release", None),
        (6.1, 2, "ok", "release", None),
    ]
    return History(
        [
            Op.from_dict(
                {
                    "index": i,
                    "time": int(t * S),
                    "process": p,
                    "type": typ,
                    "f": f,
                    "value": v,
                    "key": "/l",
                    **({"client": p} if p != "nemesis" else {}),
                }
            )
            for i, (t, p, typ, f, v) in enumerate(recs)
        ]
    )


def test_a_killed_holder_no_longer_believes():
    assert LockChecker().check(history(with_kill=True)).valid is True


def test_a_program_killed_by_its_recorder_no_longer_believes():
    assert LockChecker().check(history(with_kill=False, client_error=True)).valid is True


def test_without_the_kill_the_unreleased_hold_overlaps():
    res = LockChecker().check(history(with_kill=False))
    assert res.valid is False and res.details["belief_overlap_count"] == 1


def writes_history(versions: tuple) -> History:
    """Holder 1 (token 5) writes in flight while holder 2 (token 6) writes; the resource's
    versions say which it accepted first."""
    recs = [
        (0, 1, "invoke", "write", {"token": 5}),
        (1, 2, "invoke", "write", {"token": 6}),
        (2, 2, "ok", "write", {"token": 6, "version": versions[1]}),
        (6, 1, "ok", "write", {"token": 5, "version": versions[0]}),
    ]
    return History(
        [
            Op.from_dict(
                {
                    "index": i,
                    "time": int(t * S),
                    "process": p,
                    "type": typ,
                    "f": f,
                    "value": v,
                    "key": "/r",
                    "client": p,
                }
            )
            for i, (t, p, typ, f, v) in enumerate(recs)
        ]
    )


def test_resource_versions_order_writes_in_flight_exactly():
    # Accepted token 5 before token 6: lock order held, though the writes overlapped in time.
    assert LockChecker().check(writes_history((3, 4))).details["effect_overlap_count"] == 0
    # Accepted token 5 after token 6: the stale holder's write went in out of order.
    res = LockChecker().check(writes_history((4, 3)))
    assert res.details["effect_overlaps"][0]["kind"] == "stale-after-newer"
    from zkjepsen.checker.fencing import FencingChecker

    assert FencingChecker().check(writes_history((4, 3))).details["backwards_count"] == 1
    assert FencingChecker().check(writes_history((3, 4))).details["backwards_count"] == 0
