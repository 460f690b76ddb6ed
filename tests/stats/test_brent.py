"""stats.brent: scipy's bounded Brent search reimplemented, held to scipy's own answer bit for bit (scipy is the
independent reference here; the audits no longer import it)."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from mhaudit.stats.brent import bounded_minimum
from mhaudit.stats.calibration import fit_temperature
from mhaudit.stats.temperature import _nll_of_temperature


def _scipy(f, lo, hi, xatol=1e-10, maxiter=500):
    res = minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": xatol, "maxiter": maxiter})
    return float(res.x), float(res.fun), res.nfev


def _counted(f):
    calls = []

    def g(x):
        calls.append(x)
        return f(x)

    return g, calls


@pytest.mark.parametrize(
    "f, lo, hi",
    [
        (lambda x: (x - 0.3) ** 2, -5.0, 5.0),
        (lambda x: math.cosh(x - 2.0) + 0.1 * x, -5.0, 5.0),
        (lambda x: abs(x - 1.0), -3.0, 4.0),  # a kink: golden-section steps
        (lambda x: x, -2.0, 2.0),  # the minimum at the lower bound
        (lambda x: -x, -2.0, 2.0),  # ... at the upper bound
        (lambda x: 1.0, 0.0, 1.0),  # flat
        (lambda x: (x - 4.999) ** 4, -5.0, 5.0),  # near a bound: the step kept off it
    ],
)
def test_the_same_points_and_floats_as_scipy(f, lo, hi):
    ours_f, ours_calls = _counted(f)
    theirs_f, theirs_calls = _counted(f)
    x, fx = bounded_minimum(ours_f, lo, hi, xatol=1e-10, maxiter=500)
    sx, sfx, _ = _scipy(theirs_f, lo, hi)
    assert (x, fx) == (sx, sfx)
    assert ours_calls == theirs_calls  # every point evaluated, in order


def test_maxiter_stops_where_scipy_stops():
    f = lambda x: (x - 0.123456789) ** 2  # noqa: E731
    for maxiter in (1, 2, 5, 9):
        x, fx = bounded_minimum(f, -5.0, 5.0, xatol=1e-12, maxiter=maxiter)
        assert (x, fx) == _scipy(f, -5.0, 5.0, xatol=1e-12, maxiter=maxiter)[:2]


def test_temperature_nll_gives_scipy_temperature_exactly():
    """The temperature fit on real-sized logits: the same T as scipy's minimize_scalar gave (the golden demo's
    temperatures therefore do not move)."""
    rng = np.random.default_rng(5)
    for n, c, scale in ((500, 2, 0.5), (3000, 4, 2.5), (200, 12, 1.0)):
        y = rng.integers(0, c, n)
        z = rng.normal(size=(n, c)) * scale
        z[np.arange(n), y] += 1.5
        nll_at = _nll_of_temperature(z, y)
        log_t = _scipy(lambda u: nll_at(np.exp(u)), -5.0, 5.0)[0]
        assert fit_temperature(z, y) == float(np.exp(log_t))
