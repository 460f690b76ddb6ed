"""Prediction equity between two platforms, class by class (CPFE axis 4), with the platform as the group.

A reference platform (the training platform, Kaggle in the CPFE paper) is compared with one target
platform. Predictions are argmax class codes 0..n_classes-1 and every rate is of them:

- rate_g(k) = P(pred = k | platform g)
- disparate impact DI_k = min(rate_ref / rate_tgt, rate_tgt / rate_ref): symmetric, in [0, 1]
- TPR_g(k) = P(pred = k | y = k, g) and FPR_g(k) = P(pred = k | y != k, g)
- equal-opportunity gap |TPR_ref - TPR_tgt|: what the CPFE paper calls "equalized odds difference"
- equalized-odds gap max(|TPR_ref - TPR_tgt|, |FPR_ref - FPR_tgt|): the full criterion (Hardt et al. 2016)

A value that cannot be computed is NaN and the row's `reason` says why; it is never replaced by 0 or
1, which would read as maximal or perfect parity. (One zero rate is not such a case: DI is then 0,
the limit of min(0, inf), a real and maximal disparity.)
"""

from __future__ import annotations

import numpy as np

from mhaudit.stats.label_shift import _priors
from mhaudit.stats.undefined import quiet_undefined, warn_undefined

__all__ = ["prior_adjusted_rates", "di_interval", "equity_by_class", "summarise_classes"]

NAN = float("nan")


def _codes(values, n_classes: int, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of class codes, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty; each platform needs at least one row")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.mod(arr, 1) == 0):
            raise ValueError(f"{name} must hold integer class codes 0..{n_classes - 1}")
        arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= n_classes:
        raise ValueError(
            f"{name} holds class code {arr.min() if arr.min() < 0 else arr.max()}; expected 0..{n_classes - 1}"
        )
    return arr


def _confusion(y, pred, n_classes: int, where: str) -> np.ndarray:
    """Counts m[true, predicted]."""
    y = _codes(y, n_classes, f"y_{where}")
    pred = _codes(pred, n_classes, f"pred_{where}")
    if len(y) != len(pred):
        raise ValueError(f"y_{where} has {len(y)} rows but pred_{where} has {len(pred)}")
    return np.bincount(y * n_classes + pred, minlength=n_classes * n_classes).reshape(n_classes, n_classes)


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den > 0 else NAN


def _symmetric_di(a: float, b: float) -> float:
    if a == 0 and b == 0:
        return NAN
    if a == 0 or b == 0:
        return 0.0
    return min(a / b, b / a)


def _target_weighted_rates(m_tgt: np.ndarray, prior_ref: np.ndarray) -> np.ndarray:
    """sum_j prior_ref[j] * P_tgt(pred = . | y = j); NaN when a reference class is absent on the target."""
    support = m_tgt.sum(axis=1)
    if np.any((prior_ref > 0) & (support == 0)):
        return np.full(len(prior_ref), NAN)
    conditional = np.divide(m_tgt, support[:, None], out=np.zeros(m_tgt.shape), where=support[:, None] > 0)
    return prior_ref @ conditional


def prior_adjusted_rates(y_tgt, pred_tgt, prior_ref, n_classes: int) -> np.ndarray:
    """Predicted-class rates on the target after giving it the reference's class prevalences.

    Each target row i is weighted by w_i = prior_ref[y_i] / prior_tgt[y_i] (prior_tgt: the target's own
    class shares), and rate_k = sum_i w_i [pred_i = k] / sum_i w_i, which equals
    sum_j prior_ref[j] * P_tgt(pred = k | y = j). The rates are NaN (all of them) when a class with
    reference prevalence > 0 has no target rows: its conditional prediction rates are unknown, and
    renormalising over the other classes would silently change the reference mix.

    >>> prior_adjusted_rates([0, 0, 0, 1], [0, 0, 1, 1], [0.5, 0.5], 2).tolist()
    [0.3333333333333333, 0.6666666666666666]
    """
    m = _confusion(y_tgt, pred_tgt, n_classes, "tgt")
    return _target_weighted_rates(m, _priors(prior_ref, n_classes, "prior_ref"))


def _score_z(phi, x1, n1, x2, n2):
    """The score statistic of H0: p1 / p2 = phi (Koopman 1984; Miettinen & Nurminen 1985 without their
    N / (N - 1) factor), with p1, p2 restricted to their maximum-likelihood values under H0."""
    a = phi * (n1 + n2)
    b = -(phi * n1 + x1 + n2 + phi * x2)
    c = x1 + x2
    # the smaller root of a p2^2 + b p2 + c, written 2c / (-b + sqrt(.)) so a huge phi loses no digits
    p2 = 2 * c / (-b + np.sqrt(np.maximum(b * b - 4 * a * c, 0.0)))
    p1 = phi * p2
    var = p1 * (1 - p1) / n1 + phi * phi * p2 * (1 - p2) / n2
    with np.errstate(divide="ignore", invalid="ignore"):
        return (x1 / n1 - phi * x2 / n2) / np.sqrt(var)


def _ratio_bound(x1, n1, x2, n2, z: float, side: float) -> np.ndarray:
    """Where the score statistic crosses side * z (it falls as phi grows): bisection on log phi in
    [-40, 40]; 0 or inf where it never crosses (x1 = 0 or x2 = 0)."""
    lo, hi = np.full(x1.shape, -40.0), np.full(x1.shape, 40.0)
    for _ in range(80):  # 80 halvings of [-40, 40]: below 1e-22 in log phi
        mid = (lo + hi) / 2
        above = _score_z(np.exp(mid), x1, n1, x2, n2) > side * z
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    bound = np.exp((lo + hi) / 2)
    never_below = _score_z(np.exp(40.0), x1, n1, x2, n2) > side * z
    never_above = _score_z(np.exp(-40.0), x1, n1, x2, n2) <= side * z
    return np.where(never_below, np.inf, np.where(never_above, 0.0, bound))


def di_interval(x_ref, n_ref, x_tgt, n_tgt, z: float = 1.959963984540054) -> tuple:
    """95% CI of the symmetric DI from the counts predicted as the class on each platform (arrays broadcast).

    The score interval of the rate ratio R = rate_tgt / rate_ref (Koopman 1984: the R whose score test is
    not rejected; statsmodels' `confint_proportions_2indep(method="score", compare="ratio",
    correction=False)` computes the same), mapped through DI = min(R, 1 / R): [min(R_lo, 1 / R_hi), 1] when
    the interval holds 1, else the interval's image. The score test is 0 at the observed ratio, so the
    interval always holds the point DI, also a DI of 0 from a platform that never predicts the class
    (then R_lo = 0, or R_hi = inf). NaN (with an UndefinedStatisticWarning) when neither platform predicts it.

    >>> [round(float(v), 4) for v in di_interval(30, 300, 40, 300)]
    [0.4816, 1.0]
    """
    x_ref, n_ref, x_tgt, n_tgt = np.broadcast_arrays(
        *(np.asarray(v, dtype=float) for v in (x_ref, n_ref, x_tgt, n_tgt))
    )
    undefined = (x_ref == 0) & (x_tgt == 0)
    if undefined.any():
        warn_undefined("disparate impact interval undefined: neither platform predicts the class; NaN returned")
    r_lo = _ratio_bound(x_tgt, n_tgt, x_ref, n_ref, z, +1.0)
    r_hi = _ratio_bound(x_tgt, n_tgt, x_ref, n_ref, z, -1.0)
    with np.errstate(divide="ignore"):
        low = np.where(r_hi < 1, r_lo, np.where(r_lo > 1, 1 / r_hi, np.minimum(r_lo, 1 / r_hi)))
        high = np.where(r_hi < 1, r_hi, np.where(r_lo > 1, 1 / r_lo, 1.0))
    low, high = np.where(undefined, NAN, low), np.where(undefined, NAN, high)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


def equity_by_class(y_ref, pred_ref, y_tgt, pred_tgt, n_classes: int, *, adjust_priors: bool = False) -> list[dict]:
    """One row per class k comparing the reference and the target platform.

    Fields: class, n_ref, n_tgt, support_ref, support_tgt (rows with y = k), rate_ref, rate_tgt,
    disparate_impact, di_ci_low, di_ci_high (see `di_interval`), tpr_ref, tpr_tgt, fpr_ref, fpr_tgt,
    equal_opportunity_gap, equalized_odds_gap,
    di_below_0_80, di_below_0_50 (False when DI is undefined), reason ('' when everything is defined).

    With `adjust_priors`, also rate_tgt_prior_adjusted (see `prior_adjusted_rates`, with the reference's
    empirical class shares as prior_ref) and disparate_impact_prior_adjusted =
    min(rate_ref / rate_tgt_adj, rate_tgt_adj / rate_ref). Plain DI mixes two things: a difference in
    how often each class occurs on the platforms (label shift) and a difference in how the model treats
    a class. The adjusted DI removes the first, so it is 1 when the per-class confusion rates agree.

    >>> row = equity_by_class([0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1], 2)[0]
    >>> row["rate_ref"], row["rate_tgt"], row["disparate_impact"], row["equal_opportunity_gap"]
    (0.5, 0.25, 0.5, 0.5)
    """
    if int(n_classes) != n_classes or n_classes < 1:
        raise ValueError(f"n_classes must be a positive integer, got {n_classes!r}")
    m_ref = _confusion(y_ref, pred_ref, n_classes, "ref")
    m_tgt = _confusion(y_tgt, pred_tgt, n_classes, "tgt")
    if adjust_priors:
        prior_ref = m_ref.sum(axis=1) / m_ref.sum()
        adjusted = _target_weighted_rates(m_tgt, prior_ref)
        missing = np.flatnonzero((prior_ref > 0) & (m_tgt.sum(axis=1) == 0)).tolist()
    with quiet_undefined():  # the row's reason says it
        di_low, di_high = di_interval(m_ref.sum(axis=0), m_ref.sum(), m_tgt.sum(axis=0), m_tgt.sum())
    rows = []
    for k in range(n_classes):
        row: dict = {"class": k}  # the class's measures and the reasons some are undefined
        reasons = []
        for g, m in (("ref", m_ref), ("tgt", m_tgt)):
            n, support, predicted, tp = m.sum(), m[k].sum(), m[:, k].sum(), m[k, k]
            row[f"n_{g}"], row[f"support_{g}"] = int(n), int(support)
            row[f"rate_{g}"] = float(predicted / n)
            row[f"tpr_{g}"] = _ratio(tp, support)
            row[f"fpr_{g}"] = _ratio(predicted - tp, n - support)
            where = "reference" if g == "ref" else "target"
            if support == 0:
                reasons.append(f"class absent on {where}: TPR undefined")
            if support == n:
                reasons.append(f"only this class on {where}: FPR undefined")
        row["disparate_impact"] = _symmetric_di(row["rate_ref"], row["rate_tgt"])
        row["di_ci_low"], row["di_ci_high"] = float(di_low[k]), float(di_high[k])
        if np.isnan(row["disparate_impact"]):
            reasons.append("no rows predicted as class on either platform: DI undefined")
        d_tpr = abs(row["tpr_ref"] - row["tpr_tgt"])
        d_fpr = abs(row["fpr_ref"] - row["fpr_tgt"])
        row["equal_opportunity_gap"] = d_tpr
        # Either gap being unknown leaves the maximum unknown: never fall back to the other one.
        row["equalized_odds_gap"] = NAN if np.isnan(d_tpr) or np.isnan(d_fpr) else max(d_tpr, d_fpr)
        row["di_below_0_80"] = bool(row["disparate_impact"] < 0.80)
        row["di_below_0_50"] = bool(row["disparate_impact"] < 0.50)
        if adjust_priors:
            row["rate_tgt_prior_adjusted"] = float(adjusted[k])
            if missing:
                row["disparate_impact_prior_adjusted"] = NAN
                reasons.append(
                    f"class(es) {', '.join(map(str, missing))} present on reference but absent on "
                    "target: prior-adjusted DI undefined"
                )
            else:
                row["disparate_impact_prior_adjusted"] = _symmetric_di(row["rate_ref"], float(adjusted[k]))
                if np.isnan(row["disparate_impact_prior_adjusted"]):
                    reasons.append(
                        "no rows predicted as class on reference or reweighted target: prior-adjusted DI undefined"
                    )
        row["reason"] = "; ".join(reasons)
        rows.append(row)
    return rows


_SUMMARY = (  # (output name, row field, worst is the max?)
    ("max_equal_opportunity_gap", "equal_opportunity_gap", True),
    ("max_equalized_odds_gap", "equalized_odds_gap", True),
    ("min_disparate_impact", "disparate_impact", False),
    ("min_disparate_impact_prior_adjusted", "disparate_impact_prior_adjusted", False),
)


def summarise_classes(rows: list[dict]) -> dict:
    """The worst class of each measure: max equal-opportunity gap, max equalized-odds gap, min DI (and min
    prior-adjusted DI when the rows carry it), each with its class (`<name>_class`; the first class on a tie).

    Undefined classes are ignored and listed in `note`; a measure undefined for every class is NaN, its
    class None, and `reason` says so.
    """
    out: dict = {}
    reasons, notes = [], []
    for name, field, worst_is_max in _SUMMARY:
        if field == "disparate_impact_prior_adjusted" and not (rows and field in rows[0]):
            continue
        values = np.array([r[field] for r in rows], dtype=float)
        classes = [r["class"] for r in rows]
        defined = ~np.isnan(values)
        if not defined.any():
            out[name], out[f"{name}_class"] = NAN, None
            reasons.append(f"{field.replace('_', ' ')} undefined for every class")
            continue
        idx = np.flatnonzero(defined)
        best = idx[np.argmax(values[idx]) if worst_is_max else np.argmin(values[idx])]
        out[name], out[f"{name}_class"] = float(values[best]), classes[best]
        if not defined.all():
            notes.append(
                f"{field.replace('_', ' ')} undefined for class(es) "
                f"{', '.join(str(c) for c, d in zip(classes, defined) if not d)} (ignored)"
            )
    out["reason"] = "; ".join(reasons)
    out["note"] = "; ".join(notes)
    return out
