"""The boundary estimate (report/boundary.py) on hand-made point sets: each says what its points
conclude and what they cannot."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkjepsen.report.boundary import Point, estimate, interval_text, next_probe, snap


def pts(*triples: tuple[float, int, int]) -> list[Point]:
    return [Point(m, k, n) for m, k, n in triples]


def test_monotone_bounds_the_boundary_between_last_safe_and_first_broken():
    b = estimate(pts((0, 0, 10), (2, 0, 10), (4, 0, 10), (6, 7, 10), (8, 10, 10)), 0.5, " s")
    assert (b.above, b.at_most, b.width) == (4, 6, 2)
    assert b.non_monotone == ()
    assert "broken at 6 s (7/10 runs)" in b.said
    assert any("above 4 s" in s and "at or below 6 s" in s for s in b.said)


def test_one_violation_is_enough_to_call_a_point_broken():
    b = estimate(pts((0, 0, 5), (1, 1, 5), (2, 5, 5)), 0.5)
    assert (b.above, b.at_most) == (0, 1)


def test_noisy_points_above_the_first_broken_are_reported_not_smoothed():
    b = estimate(pts((0, 0, 5), (2, 1, 5), (4, 0, 5), (6, 5, 5), (8, 0, 5)), 0.5)
    assert (b.above, b.at_most) == (0, 2)
    assert b.non_monotone == (4, 8)
    assert any(s.startswith("non-monotone") and "4, 8" in s for s in b.said)


def test_never_broken_says_only_that_the_boundary_lies_above():
    b = estimate(pts((0, 0, 10), (2, 0, 10), (4, 0, 10)), 0.5, "x")
    assert b.at_most is None and b.above == 4 and b.width is None
    assert any("no violation at any magnitude up to 4x" in s for s in b.said)
    assert any("lies above it" in s for s in b.said)  # never "it cannot break"
    assert next_probe(b, 0.5, 0.001) == (None, "no point is broken: there is no boundary to narrow")


def test_always_broken_says_the_boundary_lies_at_or_below_the_smallest():
    b = estimate(pts((1, 2, 5), (2, 5, 5), (3, 5, 5)), 0.5)
    assert b.above is None and b.at_most == 1
    assert any("sweep lower" in s for s in b.said)
    assert next_probe(b, 0.5, 0.001)[0] is None


def test_too_few_runs_are_undecided_never_safe():
    # 0/2 has a Wilson upper end of 66 %: not below a 50 % target
    b = estimate(pts((0, 0, 2), (1, 0, 2), (2, 2, 2)), 0.5)
    assert b.above is None and b.at_most == 2
    assert any("no point below 2 is safe" in s for s in b.said)
    b = estimate(pts((0, 0, 0), (1, 0, 0)), 0.5)  # nothing judged at all
    assert b.above is None and b.at_most is None
    assert any("too few judged runs" in s for s in b.said)


def test_undecided_points_inside_the_interval_are_named():
    b = estimate(pts((0, 0, 10), (1, 0, 2), (2, 3, 10)), 0.5)
    assert (b.above, b.at_most) == (0, 2)
    assert any("undecided between them" in s and "1" in s for s in b.said)


def test_no_points_concludes_nothing():
    assert estimate([], 0.5).said == ("no point was run: nothing can be concluded",)


def test_bad_target_and_duplicate_points_are_refused():
    with pytest.raises(ValueError):
        estimate(pts((0, 0, 1)), 0)
    with pytest.raises(ValueError):
        estimate(pts((0, 0, 1), (0, 1, 1)), 0.5)


def test_bisection_halves_on_the_grain_and_stops_when_narrow_enough():
    b = estimate(pts((0, 0, 5), (4, 0, 5), (8, 5, 5)), 0.5)
    assert next_probe(b, 1.0, 1.0) == (6, "bisecting (4, 8]")
    b = estimate(pts((4, 0, 5), (5, 3, 5)), 0.5)
    probe, why = next_probe(b, 2.0, 1.0)
    assert probe is None and "narrower than 2" in why
    probe, why = next_probe(b, 0.5, 1.0)  # whole seconds: nothing lies between 4 and 5
    assert probe is None and "grain" in why
    assert next_probe(b, 0.5, 0.25)[0] == 4.5


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 12), st.integers(0, 12)),
        min_size=1,
        max_size=12,
        unique_by=lambda t: t[0],
    ),
    st.sampled_from([0.2, 0.5, 1.0]),
)
def test_the_interval_always_brackets_what_the_points_show(raw, target):
    """Whatever the points: the first broken point is the smallest with a violation, the lower
    end is a safe point below it, no point between them is broken, and a bisection's probe lies
    strictly inside the interval."""
    points = [Point(m, min(k, n), n) for m, k, n in raw]
    b = estimate(points, target)
    broken = sorted(p.magnitude for p in points if p.violated > 0)
    assert b.at_most == (broken[0] if broken else None)
    if b.above is not None:
        at = {p.magnitude: p for p in points}[b.above]
        assert at.safe(target) and at.violated == 0
        if b.at_most is not None:
            assert b.above < b.at_most
            assert not [m for m in broken if b.above < m < b.at_most]
    probe, _ = next_probe(b, 0.01, 0.5)
    if probe is not None:
        assert b.above is not None and b.at_most is not None
        assert b.above < probe < b.at_most


def test_a_falling_axis_is_read_the_other_way():
    """A slow clock breaks more as its rate falls: the boundary lies at or above the first broken
    rate (the largest), below the last safe one above it, and is said in those words."""
    b = estimate(pts((0.25, 5, 5), (0.5, 2, 5), (0.75, 0, 10), (1.0, 0, 10)), 0.5, falling=True)
    assert (b.above, b.at_most, b.width, b.falling) == (0.75, 0.5, 0.25, True)
    assert "broken at 0.5 (2/5 runs)" in b.said
    assert any("lies below 0.75" in s and "at or above 0.5" in s for s in b.said)
    assert interval_text(b) == "[0.5, 0.75)"
    assert next_probe(b, 0.1, 0.001) == (0.625, "bisecting [0.5, 0.75)")
    # the same points read as rising would call the smallest broken and everything else odd
    rising = estimate(pts((0.25, 5, 5), (0.5, 2, 5), (0.75, 0, 10), (1.0, 0, 10)), 0.5)
    assert rising.at_most == 0.25 and rising.non_monotone == (0.75, 1.0)


def test_a_falling_axis_names_its_limits_in_its_direction():
    b = estimate(pts((0.5, 3, 5), (0.75, 5, 5)), 0.5, falling=True)  # broken at the least fault
    assert b.above is None and b.at_most == 0.75
    assert any("largest magnitude swept" in s and "sweep higher" in s for s in b.said)
    b = estimate(pts((0.25, 0, 5), (0.5, 0, 10), (0.75, 0, 10)), 0.5, falling=True)
    assert b.at_most is None and b.above == 0.25  # safe down to the slowest
    assert any("no violation at any magnitude down to 0.25" in s for s in b.said)
    b = estimate(pts((0.25, 4, 5), (0.5, 0, 10), (0.75, 2, 5)), 0.5, falling=True)
    assert b.at_most == 0.75 and b.non_monotone == (0.5,)
    assert any("non-monotone" in s and "below the first broken 0.75" in s for s in b.said)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 12), st.integers(0, 12)),
        min_size=1,
        max_size=12,
        unique_by=lambda t: t[0],
    ),
    st.sampled_from([0.2, 0.5, 1.0]),
)
def test_a_falling_axis_is_the_mirror_of_a_rising_one(raw, target):
    """The falling estimate of the points is the rising estimate of their mirror image."""
    points = [Point(m, min(k, n), n) for m, k, n in raw]
    mirror = [Point(-p.magnitude + 0.0, p.violated, p.judged) for p in points]
    down, up = estimate(points, target, falling=True), estimate(mirror, target)

    def neg(x):
        return None if x is None else -x + 0.0

    assert (down.above, down.at_most) == (neg(up.above), neg(up.at_most))
    assert down.non_monotone == tuple(-x + 0.0 for x in up.non_monotone)
    assert down.width == up.width
    probe, _ = next_probe(down, 0.01, 0.5)
    if probe is not None:
        assert down.at_most < probe < down.above


def test_snap_leaves_no_float_dust():
    assert snap(0.1 + 0.2, 0.001) == 0.3
    assert snap(5.6, 1.0) == 6
