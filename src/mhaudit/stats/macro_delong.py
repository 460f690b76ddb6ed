"""The macro one-vs-rest AUC's variance from DeLong's placement values: O(k n log n), no resampling.

Each one-vs-rest AUC_c is a two-sample U-statistic; to first order its error is a sum over rows of the
row's placement count (for a positive of c, the negatives it outscores; for a negative, the positives
above it; ties a half: `stats.delong.placements`) divided by n_pos_c x n_neg_c, centred (DeLong et al.
1988). Summing the k classes' terms of a row gives its part in the macro-AUC, and the k AUCs' covariance
(1/k^2 1'S1 for the macro mean) comes for free because all k AUCs are computed on the same rows.

The rows are taken as drawn within their label (class sizes fixed), the design of the label-stratified
bootstrap this replaces at large n (audits/cpfe), so the variance is the sum over labels of n_l times the
sample variance (ddof = 1, as DeLong's) of the rows' terms within label l. With two classes this is
DeLong's variance of the one AUC exactly. Two scores on the same rows (two models): the variance of the
difference of their terms, which is exactly 0 when the orderings agree. Independent samples (two
platforms): the variances add.
"""

from __future__ import annotations

import math

import numpy as np

from mhaudit.stats.auc import _macro_absent, _z
from mhaudit.stats.delong import check_codes, placements

__all__ = ["macro_auc_delong", "paired_macro_auc_delong", "macro_row_terms", "stratified_variance"]

NAN = float("nan")


def macro_terms(y: np.ndarray, probs: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """The k one-vs-rest AUCs and each row's term of each (an (n, k) matrix), for validated inputs where every
    class has positives and negatives. AUC_c - E[AUC_c] is, to first order, the centred sum of column c."""
    n = y.size
    aucs, terms = np.empty(n_classes), np.empty((n, n_classes))
    for c in range(n_classes):
        pos = y == c
        m = int(pos.sum())
        v10, v01 = placements(pos, probs[:, c])
        pairs = float(m) * float(n - m)
        terms[pos, c], terms[~pos, c] = v10 / pairs, v01 / pairs
        aucs[c] = v10.sum() / pairs
    return aucs, terms


def stratified_covariance(y: np.ndarray, terms: np.ndarray, n_classes: int) -> np.ndarray:
    """sum over labels l of n_l x the sample covariance (ddof = 1) of the rows' terms within l; NaN where a
    label has fewer than two rows (no sample variance)."""
    cols = terms.shape[1]
    cov = np.zeros((cols, cols))
    for label in range(n_classes):
        within = terms[y == label]
        if within.shape[0] < 2:
            return np.full((cols, cols), NAN)
        centred = within - within.mean(axis=0)
        cov += centred.T @ centred * (within.shape[0] / (within.shape[0] - 1))
    return cov


def macro_auc_delong(y_codes, probs, n_classes: int, alpha: float = 0.05) -> dict:
    """The macro one-vs-rest AUC with its DeLong SE and a normal (1 - alpha) CI, clipped to [0, 1].

    Returns `macro_auc, se, ci_low, ci_high, aucs (per class), cov (k x k covariance of the AUCs), reason`.
    The macro-AUC equals `stats.auc.macro_auc`; se = sqrt(1'cov 1) / k. With a class lacking positives or
    negatives everything is NaN with the reason; with a label of a single row the SE is NaN (no variance).

    >>> r = macro_auc_delong([0, 0, 1, 1, 2, 2], [[.6, .3, .1], [.5, .2, .3], [.2, .5, .3], [.3, .3, .4],
    ...                                           [.1, .2, .7], [.3, .4, .3]], 3)
    >>> round(r["macro_auc"], 4), round(r["se"], 4), [round(a, 4) for a in r["aucs"]]
    (0.8542, 0.1502, [1.0, 0.8125, 0.75])
    """
    y, probs = check_codes(y_codes, probs, n_classes, "probs")
    z = _z(alpha)
    out = {
        "macro_auc": NAN,
        "se": NAN,
        "ci_low": NAN,
        "ci_high": NAN,
        "aucs": [NAN] * n_classes,
        "cov": np.full((n_classes, n_classes), NAN),
        "reason": _macro_absent(y, n_classes),
    }
    if out["reason"]:
        return out
    aucs, terms = macro_terms(y, probs, n_classes)
    cov = stratified_covariance(y, terms, n_classes)
    point = float(aucs.mean())
    se = math.sqrt(cov.sum()) / n_classes if np.isfinite(cov).all() else NAN
    out.update(
        macro_auc=point,
        se=se,
        aucs=aucs.tolist(),
        cov=cov,
        ci_low=max(0.0, point - z * se),
        ci_high=min(1.0, point + z * se),
        reason="" if se == se else "a label has a single row: no variance estimate",
    )
    return out


def paired_macro_auc_delong(y_codes, probs_a, probs_b, n_classes: int) -> dict:
    """Two scorings of the same rows (two models): macro-AUC of each, difference a - b and its DeLong SE.

    >>> y = [0, 0, 1, 1, 2, 2]
    >>> a = [[.6, .3, .1], [.5, .2, .3], [.2, .5, .3], [.3, .3, .4], [.1, .2, .7], [.3, .4, .3]]
    >>> paired_macro_auc_delong(y, a, a, 3)["se"]  # the same orderings: no variance at all
    0.0
    """
    y, probs_a = check_codes(y_codes, probs_a, n_classes, "probs_a")
    _, probs_b = check_codes(y, probs_b, n_classes, "probs_b")
    reason = _macro_absent(y, n_classes)
    if reason:
        return {"auc_a": NAN, "auc_b": NAN, "diff": NAN, "se": NAN, "reason": reason}
    auc_a, terms_a = macro_row_terms(y, probs_a, n_classes)
    auc_b, terms_b = macro_row_terms(y, probs_b, n_classes)
    var = stratified_variance(y, terms_a - terms_b, n_classes)
    return {
        "auc_a": auc_a,
        "auc_b": auc_b,
        "diff": auc_a - auc_b,
        "se": math.sqrt(var) if var == var else NAN,
        "reason": "" if var == var else "a label has a single row: no variance estimate",
    }


def macro_row_terms(y: np.ndarray, probs: np.ndarray, n_classes: int) -> tuple[float, np.ndarray]:
    """The macro-AUC and each row's term of it (the mean of its k class terms), for validated inputs with
    every class present both ways."""
    aucs, terms = macro_terms(y, probs, n_classes)
    return float(aucs.mean()), terms.mean(axis=1)


def stratified_variance(y: np.ndarray, row_terms: np.ndarray, n_classes: int) -> float:
    """The DeLong variance of a mean of row terms (`macro_row_terms`, or a difference of two), within labels."""
    return float(stratified_covariance(y, row_terms[:, None], n_classes)[0, 0])
