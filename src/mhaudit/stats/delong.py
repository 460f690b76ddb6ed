"""The fast DeLong algorithm (Sun & Xu 2014): AUCs and their DeLong (1988) covariance in O(n log n).

DeLong's structural components are the placement values of each example: for a positive, the share
of negatives it outscores; for a negative, the share of positives that outscore it (ties count a
half). Sun & Xu get them from midranks instead of the n_pos x n_neg comparison matrix:

    positive i:  (midrank of x_i among all) - (midrank of x_i among positives) = negatives below x_i
    negative j:  n_pos - [(midrank of y_j among all) - (midrank of y_j among negatives)]

We keep the placements as counts (half-integers, exact in floating point) and divide by the class
sizes only at the end, so a constant difference of placements has exactly zero variance and the
paired test can tell "no variance" from "tiny variance".
"""

from __future__ import annotations

import numpy as np

from mhaudit.stats.undefined import warn_undefined

__all__ = [
    "check_binary",
    "check_scores",
    "check_codes_only",
    "check_codes",
    "placements",
    "delong",
    "auc_and_variance",
    "paired",
    "auc_only",
]


def _midranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share the mean of the ranks they span."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return (ends - (counts - 1) / 2.0)[inverse.reshape(-1)]


def check_binary(y, name: str = "y") -> np.ndarray:
    """`y` as a 1-D bool array; ValueError unless it holds only 0/1 (or bools)."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {y.shape}")
    if y.dtype != bool:
        if y.size and not np.isin(y, (0, 1)).all():
            raise ValueError(f"{name} must be binary (0/1 or bool); found values {np.unique(y)[:5].tolist()}")
        y = y == 1
    return y


def check_scores(score, n: int, name: str = "score") -> np.ndarray:
    """`score` as n finite floats; ValueError otherwise (a NaN would silently change every rank)."""
    score = np.asarray(score, dtype=float)
    if score.shape != (n,):
        raise ValueError(f"{name} must be 1-D with one value per example ({n}), got shape {score.shape}")
    if not np.isfinite(score).all():
        raise ValueError(f"{name} has {int((~np.isfinite(score)).sum())} non-finite values")
    return score


def check_codes_only(codes, n_classes: int, name: str = "y_codes") -> np.ndarray:
    """`codes` as 1-D ints in [0, n_classes); ValueError otherwise."""
    y = np.asarray(codes)
    if y.ndim != 1 or not (np.issubdtype(y.dtype, np.integer) or y.size == 0):
        raise ValueError(f"{name} must be a 1-D integer array, got dtype {y.dtype} and shape {y.shape}")
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(f"{name} must lie in [0, {n_classes}); found {int(y.min())}..{int(y.max())}")
    return y


def check_codes(y_codes, scores, n_classes: int, name: str = "scores") -> tuple[np.ndarray, np.ndarray]:
    """`y_codes` as 1-D ints in [0, n_classes) and `scores` as a finite (n, n_classes) float matrix."""
    y = check_codes_only(y_codes, n_classes)
    scores = np.asarray(scores, dtype=float)
    if scores.shape != (y.size, n_classes):
        raise ValueError(f"{name} must have shape (n, n_classes) = ({y.size}, {n_classes}), got {scores.shape}")
    return y, check_scores(scores.ravel(), scores.size, name).reshape(scores.shape)


def placements(y: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unscaled placement counts (v10 for positives, v01 for negatives); `y` bool, both classes present."""
    m = int(y.sum())
    tz = _midranks(score)
    v10 = tz[y] - _midranks(score[y])  # negatives below each positive, ties a half
    v01 = m - (tz[~y] - _midranks(score[~y]))  # positives above each negative, ties a half
    return v10, v01


def _var(counts: np.ndarray) -> float:
    """Sample variance (ddof=1); NaN with fewer than two values (DeLong's S is then undefined)."""
    return float(np.var(counts, ddof=1)) if counts.size >= 2 else float("nan")


def delong(y, score) -> tuple[float, float]:
    """AUC of `score` for binary `y` and its DeLong variance, by the fast algorithm of Sun & Xu (2014).

    Ties between a positive and a negative count a half, as in sklearn's `roc_auc_score`. The
    variance is S10/n_pos + S01/n_neg (sample variances of the placement values); it is NaN when a
    class has a single example. When `y` has one class only both are NaN, with an
    UndefinedStatisticWarning.

    >>> auc, var = delong([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> auc, var
    (0.75, 0.125)
    """
    y = check_binary(y)
    score = check_scores(score, y.size)
    m, n = int(y.sum()), int((~y).sum())
    if m == 0 or n == 0:
        warn_undefined(f"AUC undefined: y has {'no positives' if m == 0 else 'no negatives'}; NaN returned")
        return float("nan"), float("nan")
    return auc_and_variance(y, score)


def auc_and_variance(y: np.ndarray, score: np.ndarray) -> tuple[float, float]:
    """AUC and its DeLong variance (`delong`) for validated inputs with both classes present: no checks."""
    m, n = int(y.sum()), int((~y).sum())
    v10, v01 = placements(y, score)
    auc = float(v10.sum() / (m * n))
    return auc, _var(v10) / (n * n * m) + _var(v01) / (m * m * n)


def paired(y: np.ndarray, score_a: np.ndarray, score_b: np.ndarray) -> tuple[float, float, float]:
    """AUC of a, AUC of b and the DeLong variance of AUC_a - AUC_b (same examples; validated inputs)."""
    m, n = int(y.sum()), int((~y).sum())
    a10, a01 = placements(y, score_a)
    b10, b01 = placements(y, score_b)
    # Var(a - b) = [S10_aa + S10_bb - 2 S10_ab]/m + [...]/n, computed as the variance of the
    # differences so that identical orderings give exactly zero.
    var = _var(a10 - b10) / (n * n * m) + _var(a01 - b01) / (m * m * n)
    return float(a10.sum() / (m * n)), float(b10.sum() / (m * n)), var


def auc_only(y: np.ndarray, score: np.ndarray) -> float:
    """AUC from the rank sum alone (Mann-Whitney), for validated inputs with both classes."""
    m, n = int(y.sum()), int((~y).sum())
    return float((_midranks(score)[y].sum() - m * (m + 1) / 2) / (m * n))
