"""Wilson intervals: known values, and the properties a reader relies on."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkjepsen.report.stats import rate_text, wilson


def test_known_values():
    # Reference values (Wilson 1927 score interval, z = 1.96), to 3 decimals.
    assert wilson(0, 5) == pytest.approx((0.0, 0.4345), abs=1e-3)
    assert wilson(5, 5) == pytest.approx((0.5655, 1.0), abs=1e-3)
    assert wilson(19, 20) == pytest.approx((0.7639, 0.9911), abs=1e-3)
    assert wilson(0, 0) == (0.0, 1.0)
    assert rate_text(4, 5) == "4/5 (80 %, 95 % CI 38-96 %)"


@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_interval_contains_the_estimate_and_stays_in_bounds(kn):
    k, n = kn
    lo, hi = wilson(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0


def test_more_runs_narrow_the_interval():
    assert wilson(8, 10)[1] - wilson(8, 10)[0] > wilson(80, 100)[1] - wilson(80, 100)[0]


def test_impossible_counts_are_refused():
    with pytest.raises(ValueError):
        wilson(6, 5)
