"""Counter (Jepsen bounds + lost updates) and queue (lost/duplicated/unexpected/FIFO) checkers."""

from __future__ import annotations

import json

from zkjepsen.checker.counter import CounterChecker
from zkjepsen.checker.queue import QueueChecker
from zkjepsen.history import History, Op


def hist(*calls):
    """calls: (process, f, value, start, end, type, out); end None = never completed."""
    evs = []
    for p, f, v, s, e, typ, out in calls:
        evs.append((s, 0, Op(0, s, p, "invoke", f, None, v)))
        if e is not None:
            evs.append((e, 1, Op(0, e, p, typ, f, None, out)))
    evs.sort(key=lambda x: (x[0], x[1]))
    ops = [x[2] for x in evs]
    for i, o in enumerate(ops):
        o.index = i
    return History(ops)


def test_counter_bounds_and_lost_updates():
    ok = hist(
        (0, "add", 1, 0, 2, "ok", 1),
        (1, "add", 1, 1, None, "info", None),
        (2, "read", None, 3, 4, "ok", 2),
        (3, "fail_add", 1, 0, 1, "ok", 1),
    )
    r = CounterChecker().check(ok)
    assert r.valid is True and r.details["lost"] == 0
    # a read may not exceed what was ever invoked, nor fall below what certainly completed
    too_high = hist((0, "add", 1, 0, 2, "ok", 1), (2, "read", None, 3, 4, "ok", 5))
    assert CounterChecker().check(too_high).details["error_count"] == 1
    failed_add = hist((0, "add", 1, 0, 2, "fail", 1), (2, "read", None, 3, 4, "ok", 1))
    assert CounterChecker().check(failed_add).valid is False
    lost = hist(
        (0, "add", 1, 0, 1, "ok", 1),
        (1, "add", 1, 0, 1, "ok", 1),
        (2, "read", None, 1, 3, "ok", 2),
        (2, "read", None, 5, 6, "ok", 1),
    )
    r = CounterChecker().check(lost)
    assert r.valid is False and r.details["lost"] == 1
    assert r.details["final_read"]["value"] == 1
    json.dumps(r.to_json())


def test_counter_concurrent_read_sees_either():
    for seen in (0, 1):
        h = hist((0, "add", 1, 0, 5, "ok", 1), (1, "read", None, 1, 2, "ok", seen))
        assert CounterChecker().check(h).valid is True


def test_queue_lost_duplicated_unexpected():
    h = hist(
        (0, "enqueue", 1, 0, 1, "ok", 1),
        (0, "enqueue", 2, 2, 3, "ok", 2),
        (0, "enqueue", 3, 4, 5, "info", None),
        (1, "dequeue", None, 6, 7, "ok", 1),
        (1, "drain", None, 8, 9, "ok", [2, 3]),
    )
    r = QueueChecker(fifo=True).check(h)
    assert r.valid is True and r.details["recovered"] == 1 and r.details["lost_count"] == 0
    bad = hist(
        (0, "enqueue", 1, 0, 1, "ok", 1),
        (0, "enqueue", 2, 2, 3, "ok", 2),
        (1, "dequeue", None, 6, 7, "ok", 2),
        (1, "dequeue", None, 8, 9, "ok", 2),
        (1, "dequeue", None, 10, 11, "ok", 9),
        (1, "drain", None, 12, 13, "ok", []),
    )
    r = QueueChecker().check(bad)
    assert r.valid is False
    assert r.details["lost"] == [1] and r.details["duplicated"] == [2]
    assert r.details["unexpected"] == [9]
    no_drain = hist(
        (0, "enqueue", 1, 0, 1, "ok", 1),
        (0, "enqueue", 2, 2, 3, "ok", 2),
        (1, "dequeue", None, 4, 5, "ok", 1),
    )
    r = QueueChecker().check(no_drain)
    assert r.valid is True and r.details["lost"] is None


def test_queue_fifo_when_promised():
    h = hist(
        (0, "enqueue", 1, 0, 1, "ok", 1),
        (0, "enqueue", 2, 2, 3, "ok", 2),
        (1, "dequeue", None, 4, 5, "ok", 2),
        (1, "dequeue", None, 6, 7, "ok", 1),
    )
    assert QueueChecker(fifo=False).check(h).valid is True
    r = QueueChecker(fifo=True).check(h)
    assert r.valid is False
    v = r.details["fifo_violations"][0]
    assert (v["first_enqueued"], v["taken_after"]) == (1, 2)
    concurrent = hist(
        (0, "enqueue", 1, 0, 3, "ok", 1),
        (2, "enqueue", 2, 1, 2, "ok", 2),
        (1, "dequeue", None, 4, 5, "ok", 2),
        (1, "dequeue", None, 6, 7, "ok", 1),
    )
    assert QueueChecker(fifo=True).check(concurrent).valid is True
