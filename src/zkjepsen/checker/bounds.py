"""One-sided upper bounds on a rate seen k times in n trials: how high the per-fault violation
rate of a lock can still be after k of n landed faults were followed by a violation.

Exact (Clopper-Pearson) is the default: it never claims more than the data allow, at any n.
Wilson's score bound is the narrower approximation report/stats.py uses for its two-sided
intervals; both are offered so a reader can compare.
"""

from __future__ import annotations

import math
from statistics import NormalDist


def upper_bound(violated: int, n: int, confidence: float = 0.95, method: str = "exact") -> float:
    """One-sided upper bound on a rate seen `violated` times in `n` trials: exact
    (Clopper-Pearson: the p at which P(X <= violated) = 1 - confidence) or Wilson's score
    bound. 1.0 with no trial. upper_bound(0, 27) = 1 - 0.05 ** (1 / 27) = 0.1050."""
    if not 0 <= violated <= n:
        raise ValueError(f"{violated} violations out of {n} opportunities")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence} is not between 0 and 1")
    if n == 0 or violated == n:
        return 1.0
    alpha = 1 - confidence
    if method == "wilson":
        z = NormalDist().inv_cdf(confidence)
        p = violated / n
        centre = p + z * z / (2 * n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        return min(1.0, (centre + half) / (1 + z * z / n))
    if method != "exact":
        raise ValueError(f"unknown bound {method!r}; exact or wilson")
    if violated == 0:
        return 1 - alpha ** (1 / n)
    lo, hi = violated / n, 1.0  # the CDF falls from > alpha to 0 across [k/n, 1]
    for _ in range(100):
        mid = (lo + hi) / 2
        if _binom_cdf(violated, n, mid) > alpha:
            lo = mid
        else:
            hi = mid
    return hi


def _binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in log space (no overflow for large n)."""
    lp, lq = math.log(p), math.log1p(-p)
    lg = math.lgamma
    return sum(
        math.exp(lg(n + 1) - lg(i + 1) - lg(n - i + 1) + i * lp + (n - i) * lq)
        for i in range(k + 1)
    )
