"""The semaphore checker on hand-written histories: at most `permits` holders at once, counted
by distinct clients; maybe holds only make an excess possible; nothing held is unknown. And a
property: on random histories, an excess is reported exactly when a brute-force count over
every moment finds more than `permits` holders."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkjepsen.checker.semaphore import SemaphoreChecker, excesses
from zkjepsen.history import History, Op


def history(holds, maybe=()):
    """holds: (client, start, end or None); maybe: (client, invoke) of info acquires."""
    ops = []

    def add(t, c, typ, f, value=None):
        ops.append(Op(len(ops), t, c, typ, f, "/s", value, c))

    for c, start, end in holds:
        add(start - 0.5, c, "invoke", "acquire")
        add(start, c, "ok", "acquire", {"token": None, "seq": None, "node": "/s/x"})
        if end is not None:
            add(end, c, "invoke", "release")
            add(end + 0.1, c, "ok", "release")
    for c, t in maybe:
        add(t, c, "invoke", "acquire")
        add(t + 0.2, c, "info", "acquire")
    ops.sort(key=lambda o: o.time)
    return History(
        [Op(i, o.time, o.process, o.type, o.f, o.key, o.value, o.client) for i, o in enumerate(ops)]
    )


def test_two_permits_two_holders_valid_three_invalid():
    two = history([(1, 1, 5), (2, 2, 6), (3, 7, 8)])
    assert SemaphoreChecker(2).check(two).valid is True
    three = history([(1, 1, 5), (2, 2, 6), (3, 3, 8)])
    r = SemaphoreChecker(2).check(three)
    assert r.valid is False
    (v,) = r.violations
    assert v.kind == "excess" and set(v.clients) == {1, 2, 3}
    assert (v.start, v.end) == (3, 5)  # from the third grant until the first release
    assert r.details["most_at_once"] == 3


def test_an_end_and_a_start_at_the_same_moment_do_not_overlap():
    assert SemaphoreChecker(1).check(history([(1, 1, 4), (2, 4, 6)])).valid is True


def test_a_maybe_hold_makes_an_excess_only_possible():
    r = SemaphoreChecker(1).check(history([(1, 1, 5)], maybe=[(2, 2)]))
    assert r.valid is True and r.details["possible_excess_count"] == 1


def test_a_hold_never_released_lasts_to_the_end():
    r = SemaphoreChecker(1).check(history([(1, 1, None), (2, 9, 10)]))
    assert r.valid is False and r.violations[0].end == 10


def test_nothing_held_is_unknown_and_permits_must_be_positive():
    assert SemaphoreChecker(2).check(history([], maybe=[(1, 1)])).valid == "unknown"
    with pytest.raises(ValueError):
        SemaphoreChecker(0)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 4), st.integers(0, 20), st.integers(1, 6)),
        min_size=0,
        max_size=10,
    ),
    st.integers(1, 3),
)
def test_an_excess_is_found_exactly_when_some_moment_has_too_many(raw, permits):
    # one hold per client at a time: a client's holds in time order, each after the last ends
    free: dict[int, int] = {}
    holds = []
    for c, start, length in raw:
        s = max(start, free.get(c, 0)) * 2 + 1  # odd: ends (even) never meet starts
        e = s + 2 * length
        free[c] = e // 2 + 1
        holds.append((c, s, e))
    h = history(holds)
    moments = sorted({s for _, s, _ in holds} | {e for _, _, e in holds})
    too_many = any(len({c for c, s, e in holds if s <= t < e}) > permits for t in moments)
    assert bool(excesses([x for x in _holds(h)], permits)) == too_many
    assert (SemaphoreChecker(permits).check(h).valid is False) == too_many


def _holds(h):
    from zkjepsen.checker.lock_observe import observe

    return observe(h).holds
