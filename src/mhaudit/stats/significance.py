"""Significance tests for the label-source divergence audit (TSS paper, section 5): McNemar on two
classifiers' discordant predictions, and the Benjamini-Hochberg FDR adjustment of a family of p-values."""

from __future__ import annotations

import numpy as np
from scipy.stats import chi2

from mhaudit.stats.binary import check_pred
from mhaudit.stats.delong import check_binary

__all__ = ["mcnemar", "benjamini_hochberg"]


def mcnemar(y, pred_a, pred_b) -> dict:
    """Continuity-corrected McNemar test of two classifiers on the same instances.

    b counts instances a gets right and b wrong, c the reverse; the statistic (|b - c| - 1)^2 / (b + c)
    is referred to chi-square with 1 df. It equals statsmodels' `mcnemar(table, exact=False,
    correction=True)` except when b == c: there the correction would overshoot zero and statsmodels
    reports 1 / (b + c); we report 0 and p = 1, as R's `mcnemar.test` does (no evidence either way).
    With no discordant pair (b + c = 0) the statistic is 0 and p = 1. Returns `statistic, p, b, c, n`.

    >>> r = mcnemar([1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 0, 0], [0, 0, 0, 1, 0, 1])
    >>> r["b"], r["c"], r["statistic"], round(r["p"], 4)
    (4, 0, 2.25, 0.1336)
    """
    y = check_binary(y, "y")
    ok_a = check_pred(pred_a, y.size, "pred_a") == y
    ok_b = check_pred(pred_b, y.size, "pred_b") == y
    b = int(np.count_nonzero(ok_a & ~ok_b))
    c = int(np.count_nonzero(~ok_a & ok_b))
    if b + c == 0:
        stat, p = 0.0, 1.0
    else:
        stat = max(abs(b - c) - 1, 0) ** 2 / (b + c)
        p = float(chi2.sf(stat, 1))
    return {"statistic": float(stat), "p": p, "b": b, "c": c, "n": int(y.size)}


def benjamini_hochberg(pvalues) -> np.ndarray:
    """Benjamini-Hochberg (1995) FDR-adjusted p-values, in the input's shape.

    adjusted p_(i) = min over j >= i of m p_(j) / j (sorted ascending), capped at 1; NaNs are passed
    through and not counted in m (a test that was not run is not a hypothesis of the family).

    >>> benjamini_hochberg([0.01, 0.04, float("nan"), 0.03]).round(4).tolist()
    [0.03, 0.04, nan, 0.04]
    """
    p = np.asarray(pvalues, dtype=float)
    flat = p.ravel()
    ok = ~np.isnan(flat)
    q = flat[ok]
    if q.size and (q.min() < 0 or q.max() > 1):
        raise ValueError("p-values must lie in [0, 1] (or be NaN)")
    m = q.size
    order = np.argsort(q, kind="stable")
    scaled = q[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    back = np.empty(m)
    back[order] = adjusted
    out = np.full(flat.shape, np.nan)
    out[ok] = back
    return out.reshape(p.shape)
