"""A checker with nothing to check says `unknown` with the reason, never "valid"; a release
recorded without its lock key ends the client's only hold; the time limit is honoured."""

from __future__ import annotations

import pytest

from zkjepsen.checker.counter import CounterChecker
from zkjepsen.checker.fencing import FencingChecker
from zkjepsen.checker.linear import Linearizable, make_model
from zkjepsen.checker.lock import LockChecker
from zkjepsen.checker.queue import QueueChecker
from zkjepsen.errors import BadInput
from zkjepsen.history import History, Op


def calls(*cs):
    """(process, f, key, value, start, end, type, out, client) -> History in time order."""
    ops = []
    for p, f, key, value, start, end, typ, out, client in cs:
        ops.append(Op(0, start, p, "invoke", f, key, value, client))
        ops.append(Op(0, end, p, typ, f, key, out, client))
    ops.sort(key=lambda o: o.time)
    for i, o in enumerate(ops):
        o.index = i
    return History(ops)


KV_ONLY = calls(
    (0, "put", "k", "x", 0, 1, "ok", "x", None), (1, "get", "k", None, 2, 3, "ok", "x", None)
)


@pytest.mark.parametrize(
    "checker", [LockChecker(), FencingChecker(), QueueChecker(), CounterChecker()]
)
@pytest.mark.parametrize("history", [History([]), KV_ONLY], ids=["empty", "no-match"])
def test_nothing_to_check_is_unknown(checker, history):
    r = checker.check(history)
    assert r.valid == "unknown"
    assert "not tested" in r.details["reason"] or "nothing" in r.details["reason"]


def test_an_empty_history_is_unknown_for_every_model():
    r = Linearizable(make_model("cas-register")).check(History([]))
    assert r.valid == "unknown" and "nothing was tested" in r.details["reason"]


def test_something_to_check_still_gets_a_verdict():
    h = calls(
        (0, "acquire", "/l", None, 0, 1, "ok", {"token": 1}, 0),
        (0, "release", "/l", None, 2, 3, "ok", None, 0),
    )
    assert LockChecker().check(h).valid is True
    fenced = calls(
        (0, "acquire", "/l", None, 0, 1, "ok", {"token": 1}, 0),
        (0, "write", "/r", {"token": 1}, 1, 2, "ok", None, 0),
        (0, "release", "/l", None, 2, 3, "ok", None, 0),
    )
    assert FencingChecker().check(fenced).valid is True
    q = calls(
        (0, "enqueue", None, 1, 0, 1, "ok", None, None),
        (1, "dequeue", None, None, 2, 3, "ok", 1, None),
    )
    assert QueueChecker().check(q).valid is True
    c = calls(
        (0, "add", None, 1, 0, 1, "ok", None, None), (1, "read", None, None, 2, 3, "ok", 1, None)
    )
    assert CounterChecker().check(c).valid is True


def test_fencing_with_acquires_but_no_accepted_write_is_unknown():
    # Issue 23: acquires and releases, no write: fencing judged nothing, yet said "valid".
    h = calls(
        (0, "acquire", "/l", None, 0, 1, "ok", {"token": 1}, 0),
        (0, "release", "/l", None, 2, 3, "ok", None, 0),
        (1, "acquire", "/l", None, 4, 5, "ok", {"token": 2}, 1),
        (1, "write", "/r", {"token": 2}, 5, 6, "fail", None, 1),
        (1, "release", "/l", None, 7, 8, "ok", None, 1),
    )
    r = FencingChecker().check(h)
    assert r.valid == "unknown"
    assert r.details["reason"] == (
        "no write was accepted (2 acquire(s) succeeded, 1 write(s) rejected, 0 unknown): "
        "fencing was not tested"
    )


def test_a_lock_run_without_writes_has_no_fencing_checker():
    from zkjepsen.workloads import get_workload

    assert "fencing" in get_workload("lock").checkers({})
    assert "fencing" not in get_workload("lock").checkers({"writes": 0})
    assert "fencing" not in get_workload("rwlock").checkers({"read_frac": 1.0})


def test_a_keyless_release_ends_the_clients_only_hold():
    # client 0 holds /l, releases without naming it; client 1 takes /l afterwards
    h = calls(
        (0, "acquire", "/l", None, 0, 1, "ok", {"token": 1}, 0),
        (0, "release", None, None, 2, 3, "ok", None, 0),
        (1, "acquire", "/l", None, 4, 5, "ok", {"token": 2}, 1),
    )
    r = LockChecker().check(h)
    assert r.valid is True and r.details["belief_overlap_count"] == 0


def test_a_keyless_release_of_one_of_several_locks_is_a_bad_line():
    h = calls(
        (0, "acquire", "/a", None, 0, 1, "ok", {"token": 1}, 0),
        (1, "acquire", "/b", None, 0, 1, "ok", {"token": 2}, 0),
        (2, "release", None, None, 2, 3, "ok", None, 0),
    )
    with pytest.raises(BadInput, match="names no lock"):
        LockChecker().check(h)


def test_an_exponential_search_ends_refuted_or_at_the_time_limit():
    # 30 concurrent crashed writes and reads nobody can satisfy: an exponential search, unless
    # a fast path refutes it first (read-from does: no write wrote -1). Either way a verdict or
    # the time limit's unknown, with its reason (how soon: benchmarks/checker.py).
    cs = [(p, "write", None, p, 0, 1, "info", None, None) for p in range(30)]
    cs += [(100 + p, "read", None, None, 2 + p, 3 + p, "ok", -1 - p % 2, None) for p in range(5)]
    r = Linearizable(make_model("register"), time_limit=0.5).check(calls(*cs))
    assert r.valid is False or (
        r.valid == "unknown" and "time limit of 0.5 s" in r.details["reason"]
    ), r.details
