"""A binary weak labeler against reference labels: the metrics, why each is undefined, and their CIs.

Definitions (docs/validation.md): observed agreement, Cohen's kappa, positive-class precision, recall,
F1, the negative class's F1, macro-F1 (mean of the two F1s), specificity and both positive rates, each
NaN with a reason where its denominator is zero.

Every metric depends on a resample only through the 2 x 2 confusion table, so the item bootstrap draws
the tables directly (`mhaudit.stats.agreement.draw_tables`). Where items carry design weights (a
stratified validation sample), the resamples are stratified count matrices and the weighted tables one
matrix product.

This module imports nothing from the rest of mhaudit but `mhaudit.stats`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.stats.agreement import draw_tables
from mhaudit.stats.bootstrap import resample_clusters, resampled_sums, summarise
from mhaudit.stats.f1 import binary_tallies, class_scores_unchecked, macro_f1_unchecked
from mhaudit.stats.undefined import divide, quiet_undefined, warn_undefined

__all__ = ["BINARY_METRICS", "binary_metrics", "binary_reasons", "weak_vs_reference"]

BINARY_METRICS = (
    "observed_agreement",
    "kappa",
    "precision",
    "recall",
    "f1",
    "f1_negative",
    "macro_f1",
    "specificity",
    "weak_positive_rate",
    "reference_positive_rate",
)


def binary_metrics(tp, fp, fn, tn) -> dict[str, np.ndarray]:
    """The weak-vs-reference metrics from confusion tallies (positive = 1); arrays broadcast.

    Tallies are counts or weighted sums. Each metric is NaN where its denominator is zero:
    precision without weak positives, recall without reference positives, kappa with chance
    agreement 1, F1 of a class absent from both labelings, macro-F1 when either F1 is (one
    UndefinedStatisticWarning per call; `binary_reasons` says why).

    >>> m = binary_metrics(36, 2, 29, 209)  # the Bluesky paper's SI table
    >>> {k: round(float(m[k]), 3) for k in ("kappa", "precision", "recall", "weak_positive_rate")}
    {'kappa': 0.636, 'precision': 0.947, 'recall': 0.554, 'weak_positive_rate': 0.138}
    """
    tp, fp, fn, tn = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (tp, fp, fn, tn)))
    if any(v.size and v.min() < 0 for v in (tp, fp, fn, tn)):
        raise ValueError("confusion tallies must be non-negative")
    n = tp + fp + fn + tn
    ref_pos, weak_pos = tp + fn, tp + fp
    chance = ref_pos * weak_pos + (n - ref_pos) * (n - weak_pos)
    tallies = binary_tallies(tp, fp, fn, tn)  # precision, recall and F1 as everywhere: mhaudit.stats.f1
    per_class = class_scores_unchecked(tallies)
    kappa_den = np.maximum(n * n - chance, 0)  # >= 0; rounding below 0 counts as 0: undefined
    out = {
        "observed_agreement": divide(tp + tn, n),
        "kappa": divide(n * (tp + tn) - chance, kappa_den),
        "precision": per_class["precision"][..., 1],
        "recall": per_class["recall"][..., 1],
        "f1": per_class["f1"][..., 1],
        "f1_negative": per_class["f1"][..., 0],
        "macro_f1": macro_f1_unchecked(tallies),
        "specificity": divide(tn, fp + tn),
        "weak_positive_rate": divide(weak_pos, n),
        "reference_positive_rate": divide(ref_pos, n),
    }
    undefined = [key for key, value in out.items() if np.isnan(value).any()]
    if undefined:
        warn_undefined(
            f"{', '.join(undefined)} undefined for some tallies (a zero denominator; binary_reasons "
            "says which); NaN returned"
        )
    return {key: value[()] for key, value in out.items()}


def binary_reasons(tp, fp, fn, tn) -> dict[str, str | None]:
    """Why each metric of `binary_metrics` is undefined for these tallies (None where defined)."""
    n = tp + fp + fn + tn
    none = "undefined: no items" if n <= 0 else None
    reasons: dict[str, str | None] = dict.fromkeys(BINARY_METRICS, none)
    if none:
        return reasons
    if tp + fp == 0:
        reasons["precision"] = "undefined: the weak labeler gave no positive label"
    if tp + fn == 0:
        reasons["recall"] = "undefined: the reference has no positive item"
    if fp + tn == 0:
        reasons["specificity"] = "undefined: the reference has no negative item"
    if 2 * tp + fp + fn == 0:
        reasons["f1"] = "undefined: no positive in either labeling"
    if 2 * tn + fp + fn == 0:
        reasons["f1_negative"] = "undefined: no negative in either labeling"
    if either := reasons["f1"] or reasons["f1_negative"]:
        reasons["macro_f1"] = "undefined: " + either.removeprefix("undefined: ")
    ref_pos, weak_pos = tp + fn, tp + fp
    if n * n - (ref_pos * weak_pos + (n - ref_pos) * (n - weak_pos)) <= 0:
        cls = "positive" if ref_pos else "negative"
        reasons["kappa"] = f"undefined: chance agreement is 1 (every item is {cls} in both labelings)"
    return reasons


def weak_vs_reference(
    reference, weak, *, n_boot: int = 2000, alpha: float = 0.05, rng=None, weights=None, strata=None, clusters=None
) -> tuple[pd.DataFrame, np.ndarray]:
    """A binary weak labeler against reference labels (both 0/1, positive = 1): metrics with CIs.

    Returns (metrics, confusion): `metrics` has one row per metric in `BINARY_METRICS` with
    `metric, estimate, ci_low, ci_high, se, n, n_boot, n_failed, reason`; `confusion` is the 2 x 2
    table of item counts, rows reference 0/1, columns weak 0/1.

    With `weights` (design weights, e.g. stratum pool size / stratum sample size) the estimates come from the
    weighted table and the bootstrap resamples items within `strata` (default: one stratum), so the stratum
    sizes stay fixed. With `clusters` (one label per item, e.g. its author) the bootstrap draws whole clusters
    (within strata when weighted): `resample_clusters`.

    >>> metrics, table = weak_vs_reference([1, 1, 0, 0, 0, 1], [1, 0, 0, 1, 0, 1], n_boot=200, rng=0)
    >>> table.tolist()
    [[2, 1], [1, 2]]
    >>> metrics.set_index("metric").loc[["precision", "recall", "kappa"], "estimate"].round(4).tolist()
    [0.6667, 0.6667, 0.3333]
    """
    ref = np.asarray(reference)
    wk = np.asarray(weak)
    if ref.shape != wk.shape or ref.ndim != 1:
        raise ValueError(f"reference and weak must be 1-D and of one length, got {ref.shape} and {wk.shape}")
    for name, arr in (("reference", ref), ("weak", wk)):
        if arr.size and not np.isin(arr, (0, 1)).all():
            raise ValueError(f"{name} labels must be 0 or 1")
    ref, wk = ref.astype(int), wk.astype(int)
    cell = ref * 2 + wk  # 0 tn, 1 fp, 2 fn, 3 tp
    table = np.bincount(cell, minlength=4).reshape(2, 2)
    rng = np.random.default_rng(rng)
    if weights is None and clusters is None:
        tallies = table.ravel().astype(float)
        boot = draw_tables(table, n_boot, rng).reshape(n_boot, 4).astype(float) if n_boot else np.empty((0, 4))
    else:
        w = np.ones(ref.size) if weights is None else np.asarray(weights, dtype=float)
        if w.shape != ref.shape or (w.size and (not np.isfinite(w).all() or w.min() <= 0)):
            raise ValueError("weights must be positive and finite, one per item")
        onehot = np.zeros((ref.size, 4))
        onehot[np.arange(ref.size), cell] = w
        tallies = onehot.sum(axis=0)
        groups = np.zeros(ref.size, dtype=int) if strata is None else pd.factorize(np.asarray(strata))[0]
    if clusters is not None:
        boot = resample_clusters(onehot, clusters, n_boot, rng, strata=groups)
    elif weights is not None:
        boot = resampled_sums(groups, onehot, n_boot, rng)
    with quiet_undefined():  # rows carry `reason` and `n_failed`
        point = binary_metrics(tallies[3], tallies[1], tallies[2], tallies[0])
        draws = binary_metrics(boot[:, 3], boot[:, 1], boot[:, 2], boot[:, 0])
    reasons = binary_reasons(*(int(v) for v in (table[1, 1], table[0, 1], table[1, 0], table[0, 0])))
    rows = []
    for metric in BINARY_METRICS:
        s = summarise(draws[metric], alpha)  # of no draws: NaN, with n_boot 0
        rows.append(
            {
                "metric": metric,
                "estimate": float(point[metric]),
                "ci_low": s["ci_low"],
                "ci_high": s["ci_high"],
                "se": s["se"],
                "n": int(ref.size),
                "n_boot": s["n_boot"],
                "n_failed": s["n_failed"],
                "reason": reasons[metric],
            }
        )
    return pd.DataFrame(rows), table
