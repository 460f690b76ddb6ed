"""AUCs with DeLong uncertainty: one score, two correlated scores, one-vs-rest per class, macro.

An AUC with one class absent is undefined: the public functions report it as NaN with a reason,
never as 0.5 (docs/statistics.md). Point estimates equal sklearn's `roc_auc_score` (ties count a half); variances follow
DeLong, DeLong & Clarke-Pearson (1988), computed by the O(n log n) algorithm of Sun & Xu (2014).
"""

from __future__ import annotations

import math

import numpy as np

from mhaudit.stats.delong import auc_and_variance, auc_only, check_binary, check_codes, check_scores, delong, paired
from mhaudit.stats.normal import quantile, two_sided_p
from mhaudit.stats.undefined import warn_undefined

__all__ = [
    "delong",
    "auc_ci",
    "paired_delong",
    "per_class_auc",
    "macro_auc",
    "paired_delong_unchecked",
    "per_class_auc_unchecked",
    "macro_auc_unchecked",
]

NAN = float("nan")


def _absent(y: np.ndarray) -> str:
    """Why the AUC is undefined ('' when both classes are present)."""
    return "no positives" if not y.any() else "no negatives" if y.all() else ""


def _macro_absent(y: np.ndarray, n_classes: int) -> str:
    """Why the macro-AUC is undefined ('' when every class has positives and negatives)."""
    missing = [k for k in range(n_classes) if not 0 < (y == k).sum() < y.size]
    return f"class(es) {missing} lack positives or negatives: macro-AUC undefined" if missing else ""


def _z(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    return quantile(1 - alpha / 2)  # norm.ppf without scipy's import (stats.normal)


def auc_ci(y, score, alpha: float = 0.05) -> dict:
    """AUC with its DeLong standard error and a normal (1 - alpha) CI clipped to [0, 1].

    Returns `auc, se, ci_low, ci_high, n_pos, n_neg, reason`. With one class absent, `auc`, `se` and
    the CI are NaN and `reason` is 'no positives' or 'no negatives'; with a single example in a class
    the AUC is defined but its variance is not (`se` and CI NaN, the reason says so). Otherwise
    `reason` is ''.

    >>> r = auc_ci([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> round(r["auc"], 4), round(r["se"], 4), round(r["ci_low"], 4), r["ci_high"]
    (0.75, 0.3536, 0.057, 1.0)
    >>> auc_ci([1, 1, 1], [0.2, 0.5, 0.9])["reason"]
    'no negatives'
    """
    return _auc_ci(check_binary(y), check_scores(score, np.size(y)), _z(alpha))


def _auc_ci(y: np.ndarray, score: np.ndarray, z: float) -> dict:
    """`auc_ci` for a validated bool vector and finite scores, with the normal quantile z: no checks."""
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    out: dict = {
        "auc": NAN,
        "se": NAN,
        "ci_low": NAN,
        "ci_high": NAN,
        "n_pos": n_pos,
        "n_neg": n_neg,
        "reason": _absent(y),
    }
    if out["reason"]:
        return out
    out["auc"], var = auc_and_variance(y, score)  # both classes present: no check again
    if math.isnan(var):  # a single positive (or negative): its placement values have no sample variance
        out["reason"] = f"one {'positive' if n_pos == 1 else 'negative'}: no variance estimate"
        return out
    se = math.sqrt(var)
    out.update(se=se, ci_low=max(0.0, out["auc"] - z * se), ci_high=min(1.0, out["auc"] + z * se))
    return out


def paired_delong(y, score_a, score_b) -> dict:
    """DeLong's test of two correlated AUCs (two scores on the same examples), two-sided.

    Returns `auc_a, auc_b, diff (a - b), se, z, p, reason`. `z` and `p` are NaN (with a reason)
    when the difference has zero variance or a class has fewer than two examples; all numbers are
    NaN when a class is absent.

    >>> r = paired_delong([0, 0, 0, 1, 1, 1], [0.1, 0.2, 0.7, 0.6, 0.8, 0.9], [0.3, 0.1, 0.2, 0.8, 0.4, 0.5])
    >>> round(r["auc_a"], 4), r["auc_b"], round(r["diff"], 4), round(r["z"], 3), round(r["p"], 3)
    (0.8889, 1.0, -0.1111, -0.707, 0.48)
    """
    y = check_binary(y)
    return paired_delong_unchecked(
        y, check_scores(score_a, y.size, "score_a"), check_scores(score_b, y.size, "score_b")
    )


def paired_delong_unchecked(y: np.ndarray, score_a: np.ndarray, score_b: np.ndarray) -> dict:
    """DeLong's test of two correlated AUCs (`paired_delong`) for a validated bool vector and finite scores:
    no checks."""
    out = {"auc_a": NAN, "auc_b": NAN, "diff": NAN, "se": NAN, "z": NAN, "p": NAN, "reason": _absent(y)}
    if out["reason"]:
        return out
    auc_a, auc_b, var = paired(y, score_a, score_b)
    out.update(auc_a=auc_a, auc_b=auc_b, diff=auc_a - auc_b)
    if var != var:
        out["reason"] = "a class has a single example: no variance estimate"
    elif var == 0:
        out.update(se=0.0, reason="the AUC difference has zero variance: the test is undefined")
    else:
        se = math.sqrt(var)
        z = (auc_a - auc_b) / se
        out.update(se=se, z=z, p=two_sided_p(z))  # p = 2 norm.sf(|z|)
    return out


def per_class_auc(y_codes, scores, n_classes: int, alpha: float = 0.05) -> list[dict]:
    """One-vs-rest AUC with DeLong CI for each class k (class k positive, scored by `scores[:, k]`).

    Each row is `auc_ci`'s dict plus `class_index`; an absent class gets NaN with its reason.

    >>> rows = per_class_auc([0, 1, 2, 2], [[.8, .1, .1], [.2, .7, .1], [.1, .2, .7], [.3, .3, .4]], 3)
    >>> [(r["class_index"], r["auc"], r["n_pos"]) for r in rows]
    [(0, 1.0, 1), (1, 1.0, 1), (2, 1.0, 2)]
    """
    y, scores = check_codes(y_codes, scores, n_classes)
    return per_class_auc_unchecked(y, scores, n_classes, alpha)


def per_class_auc_unchecked(y: np.ndarray, scores: np.ndarray, n_classes: int, alpha: float = 0.05) -> list[dict]:
    """One-vs-rest AUC with DeLong CI per class (`per_class_auc`) for inputs validated at the door (codes in
    range, finite scores): no checks."""
    z = _z(alpha)
    return [{"class_index": k, **_auc_ci(y == k, scores[:, k], z)} for k in range(n_classes)]


def macro_auc(y_codes, probs, n_classes: int) -> float:
    """Mean one-vs-rest AUC over all `n_classes` classes; equals sklearn's
    `roc_auc_score(y, probs, multi_class='ovr', average='macro')`.

    NaN (with an UndefinedStatisticWarning) when a class has no positive or no negative: its AUC is
    undefined, and a mean over the other classes would change what is averaged (docs/statistics.md).
    `per_class_auc` gives the AUC of each class that has one.

    >>> macro_auc([0, 1, 2, 2], [[.6, .3, .1], [.2, .3, .5], [.1, .2, .7], [.5, .1, .4]], 3)  # (1 + 5/6 + 3/4) / 3
    0.8611111111111112
    """
    y, probs = check_codes(y_codes, probs, n_classes, "probs")
    reason = _macro_absent(y, n_classes)
    if reason:
        warn_undefined(f"{reason}; NaN returned")
    return macro_auc_unchecked(y, probs, n_classes)


def macro_auc_unchecked(y: np.ndarray, probs: np.ndarray, n_classes: int) -> float:
    """The macro one-vs-rest AUC (`macro_auc`) for inputs validated at the door (codes in range, finite scores):
    no checks and no warning, for hot paths whose caller records the reason (NaN when a class lacks positives or
    negatives)."""
    if _macro_absent(y, n_classes):
        return NAN
    return float(np.mean([auc_only(y == k, probs[:, k]) for k in range(n_classes)]))
