"""Brent's bounded minimisation of a function of one variable (golden sections and parabolic steps; Brent 1973,
ch. 5; Forsythe, Malcolm & Moler 1977, `fmin`), for the temperature scaling's one-dimensional fit.

Step for step the search of scipy.optimize.minimize_scalar(method='bounded') (scipy 1.17's
`_minimize_scalar_bounded`), so it returns the same floats (tests/stats/test_brent.py holds it to scipy's
answer exactly), without scipy.optimize's import (~0.2 s of every `mhaudit audit cpfe`).
"""

from __future__ import annotations

import math

__all__ = ["bounded_minimum"]

_SQRT_EPS = math.sqrt(2.2e-16)
_GOLDEN = 0.5 * (3.0 - math.sqrt(5.0))


def _sign(v: float) -> float:
    """np.sign(v) + (v == 0): +1 for zero, as the search steps."""
    return -1.0 if v < 0 else 1.0


def bounded_minimum(f, lo: float, hi: float, xatol: float = 1e-5, maxiter: int = 500) -> tuple[float, float]:
    """(x, f(x)) at the least value Brent's search finds in [lo, hi] (f unimodal there: the minimum; the end
    points themselves are never evaluated). Stops when x is known within about 2 (sqrt(eps) |x| + xatol / 3),
    or after `maxiter` evaluations of f."""
    a, b = lo, hi
    v = w = x = a + _GOLDEN * (b - a)  # v, w: the two previous best points (for the parabola)
    fv = fw = fx = f(x)
    d = e = 0.0  # the last step, and the one before it
    calls = 1
    mid = 0.5 * (a + b)
    tol1 = _SQRT_EPS * abs(x) + xatol / 3.0
    tol2 = 2.0 * tol1
    while abs(x - mid) > tol2 - 0.5 * (b - a):
        golden = True
        if abs(e) > tol1:  # try the parabola through x, v and w
            golden = False
            r = (x - w) * (fx - fv)
            q = (x - v) * (fx - fw)
            p = (x - v) * q - (x - w) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            r, e = e, d
            if abs(p) < abs(0.5 * q * r) and p > q * (a - x) and p < q * (b - x):
                d = (p + 0.0) / q
                u = x + d
                if (u - a) < tol2 or (b - u) < tol2:  # not too close to a bound
                    d = tol1 * _sign(mid - x)
            else:
                golden = True
        if golden:
            e = (a - x) if x >= mid else (b - x)
            d = _GOLDEN * e
        u = x + _sign(d) * max(abs(d), tol1)
        fu = f(u)
        calls += 1
        if fu <= fx:
            if u >= x:
                a = x
            else:
                b = x
            v, fv, w, fw, x, fx = w, fw, x, fx, u, fu
        else:
            if u < x:
                a = u
            else:
                b = u
            if fu <= fw or w == x:
                v, fv, w, fw = w, fw, u, fu
            elif fu <= fv or v == x or v == w:
                v, fv = u, fu
        mid = 0.5 * (a + b)
        tol1 = _SQRT_EPS * abs(x) + xatol / 3.0
        tol2 = 2.0 * tol1
        if calls >= maxiter:
            break
    return x, fx
