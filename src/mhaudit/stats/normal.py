"""The standard normal's two-sided tail and quantile from the standard library, for the AUC tests and CIs.

scipy.special's ndtr and ndtri give the same numbers to a few units in the last place (tests/stats/test_normal.py:
1e-14 relative for |z| <= 6, 1e-13 out to |z| = 37, p ~ 1e-300; quantiles 2e-15), but importing scipy.special
costs ~0.1 s, a tenth of the whole `mhaudit audit cpfe` process.
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["two_sided_p", "quantile"]

_SQRT1_2 = 0.7071067811865476  # 1 / sqrt(2), as cephes' ndtr scales


def two_sided_p(z: float) -> float:
    """2 P(Z > |z|) = 2 ndtr(-|z|); NaN for NaN. Cephes' branches: erf near 0 (where erfc(x) = 1 - erf(x)
    is exact enough), erfc in the tail (where 1 + erf(x) would round the p-value to 0)."""
    x = abs(z) * _SQRT1_2
    return 1.0 - math.erf(x) if x < _SQRT1_2 else math.erfc(x)


def quantile(p: float) -> float:
    """The standard normal quantile Phi^-1(p) for 0 < p < 1 (Wichura's AS241, as statistics.NormalDist has it)."""
    return NormalDist().inv_cdf(p)
