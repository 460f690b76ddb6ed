"""stats.normal: the normal tail and quantile from the standard library, against scipy.special's ndtr and
ndtri (the independent reference; the audits no longer import scipy)."""

import math

import numpy as np
from scipy.special import ndtr, ndtri

from mhaudit.stats.normal import quantile, two_sided_p


def test_two_sided_p_is_scipys_to_the_last_digits():
    for z in np.concatenate([np.linspace(-6, 6, 24001), [0.0, 1.0, -1.0, 1.96, 0.7071067811865476]]):
        want = 2 * ndtr(-abs(z))
        assert math.isclose(two_sided_p(float(z)), want, rel_tol=1e-14), z  # libm's erf(c) vs cephes': ulps


def test_two_sided_p_in_the_far_tail():
    """erfc, not 1 - erf, in the tail: a p-value of 1e-200 is not rounded to 0."""
    for z in np.linspace(6, 37, 3101):
        want = 2 * ndtr(-z)
        assert math.isclose(two_sided_p(float(z)), want, rel_tol=1e-13), z
    assert two_sided_p(30.0) > 0 and two_sided_p(40.0) == 0.0 == 2 * ndtr(-40.0)
    assert math.isnan(two_sided_p(float("nan")))
    assert math.isclose(two_sided_p(1.959963984540054), 0.05, rel_tol=1e-15)


def test_quantile_is_scipys_to_the_last_digit():
    for p in np.concatenate([np.linspace(1e-9, 1 - 1e-9, 20001), [0.975, 0.995, 0.95, 0.5, 1e-300]]):
        assert math.isclose(quantile(float(p)), ndtri(p), rel_tol=2e-15, abs_tol=1e-300), p
    assert abs(quantile(0.975) - ndtri(0.975)) <= 4.5e-16  # 1.9599639845400536 vs ...54: one unit in the last place
