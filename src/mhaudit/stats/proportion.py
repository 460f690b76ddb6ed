"""A proportion's confidence interval: the Wilson score interval (tested against statsmodels'
proportion_confint(method="wilson"))."""

from __future__ import annotations

import math

from mhaudit.stats.normal import quantile
from mhaudit.stats.undefined import warn_undefined

__all__ = ["wilson_interval"]


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of k successes in n trials; (NaN, NaN) with an UndefinedStatisticWarning when n is 0
    (a share of nothing)."""
    if n == 0:
        warn_undefined("Wilson interval undefined: no trials (n = 0); NaN returned")
        return math.nan, math.nan
    z = quantile(1 - (1 - level) / 2)  # norm.isf((1 - level) / 2), without scipy.stats' import (~0.5 s)
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)
