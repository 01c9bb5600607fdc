"""Rates with honest error bars: k of n runs showed a violation, and what that says about p.

The Wilson score interval (not the normal approximation, which collapses to [1, 1] at 5/5 and
goes below 0 at 0/5): with few runs per cell it still says how little is known.
"""

from __future__ import annotations

import math

Z95 = 1.959963984540054  # two-sided 95 %


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The 95 % Wilson interval for a proportion k/n; (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= k <= n:
        raise ValueError(f"{k} successes out of {n} trials")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At k = 0 (k = n) the bound is exactly 0 (1); rounding must not move the estimate outside.
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


def rate_text(k: int, n: int) -> str:
    """'4/5 (80 %, 95 % CI 38-96 %)'."""
    lo, hi = wilson(k, n)
    pct = f"{100 * k / n:.0f} %" if n else "-"
    return f"{k}/{n} ({pct}, 95 % CI {100 * lo:.0f}-{100 * hi:.0f} %)"
