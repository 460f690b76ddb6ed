"""Accuracy from confidence alone: average thresholded confidence (ATC) and difference of confidences (DoC).

- ATC: Garg, Balakrishnan, Lipton, Neyshabur & Sedghi (2022), "Leveraging unlabeled data to predict
  out-of-distribution performance", ICLR. Pick t on the labelled reference so that the share of rows with
  confidence above t equals the reference accuracy; the target's share above t estimates its accuracy.
- DoC: Guillory, Shankar, Ebrahimi, Darrell & Schmidt (2021), "Predicting with confidence on unseen
  distributions", ICCV: target accuracy = reference accuracy - (reference - target mean confidence).

Both define accuracy. For macro-F1 each is applied per predicted class (its precision), and a predicted
class's estimated errors are spread over the true classes as the reference's errors for that predicted
class are (exact for two classes); this is our extension, documented in docs/estimate.md. Neither method
ranks, so neither estimates AUC.

Every function takes bootstrap draw counts: `w_ref` (B, n_ref) and `w_tgt` (B, n_tgt), all ones for the
point estimate, so B resamples are computed at once.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from mhaudit.stats.f1 import confusion_tallies, macro_f1
from mhaudit.stats.undefined import divide

__all__ = [
    "atc_share",
    "doc_share",
    "atc_threshold",
    "share_above",
    "ReferenceSide",
    "reference_side",
    "target_side",
    "thresholded_estimates",
    "METHODS",
]

METHODS = ("atc", "doc")


def _weighted_mean(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per draw (row of w): the w-weighted mean of the 1-D `values`, NaN where a draw has no weight."""
    return divide(w @ values, w.sum(axis=1))


def _in_order(conf: np.ndarray, w: np.ndarray, descending: bool) -> tuple[np.ndarray, np.ndarray]:
    """conf sorted (stable) and w's columns in that order; no copy of w where the rows are in order already."""
    if (conf[:-1] >= conf[1:]).all() if descending else (conf[:-1] <= conf[1:]).all():
        return conf, w  # in order already (the estimate's draws sort their rows once): a stable sort moves nothing
    order = np.argsort(-conf if descending else conf, kind="stable")
    return conf[order], w[:, order]


def atc_threshold(conf_ref, hit_ref, w_ref) -> np.ndarray:
    """Per draw, the confidence t above which the reference's weighted share equals its hit rate (accuracy, or a
    class's precision on that class's rows); -inf where every row is kept, NaN where a draw has no weight."""
    if not len(conf_ref):
        return np.full(len(w_ref), np.nan)
    sorted_ref, w_sorted = _in_order(conf_ref, w_ref, descending=True)
    rate = _weighted_mean(hit_ref, w_ref)
    # rows kept above the threshold: those whose weight at or above them is at most the hit rate's share
    limit = (np.nan_to_num(rate, nan=-1.0) + 1e-12) * w_sorted.sum(axis=1)
    above = (np.cumsum(w_sorted, axis=1) <= limit[:, None]).sum(axis=1)
    threshold = np.where(above < len(sorted_ref), sorted_ref[np.minimum(above, len(sorted_ref) - 1)], -np.inf)
    return np.where(np.isfinite(rate), threshold, np.nan)


def share_above(conf_tgt, w_tgt, threshold) -> np.ndarray:
    """Per draw, the target's weighted share with confidence above that draw's threshold (NaN: no weight, or no
    threshold)."""
    if not len(conf_tgt):
        return np.full(len(w_tgt), np.nan)
    sorted_tgt, w_sorted = _in_order(conf_tgt, w_tgt, descending=False)
    cumulative = np.cumsum(w_sorted, axis=1)
    at_or_below = np.searchsorted(sorted_tgt, np.nan_to_num(threshold, nan=-np.inf), side="right")
    below_weight = np.where(
        at_or_below > 0, np.take_along_axis(cumulative, np.maximum(at_or_below - 1, 0)[:, None], axis=1)[:, 0], 0.0
    )
    total = cumulative[:, -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (total - below_weight) / total
    return np.where(~np.isnan(threshold) & (total > 0), out, np.nan)


def atc_share(conf_ref, hit_ref, w_ref, conf_tgt, w_tgt) -> np.ndarray:
    """ATC per draw: the target's weighted share above the threshold at which the reference's share above
    equals its hit rate (accuracy, or a class's precision when the weights keep that class's rows)."""
    return share_above(conf_tgt, w_tgt, atc_threshold(conf_ref, hit_ref, w_ref))


def doc_share(conf_ref, hit_ref, w_ref, conf_tgt, w_tgt) -> np.ndarray:
    """DoC per draw: the reference hit rate minus the drop in mean confidence, clipped to [0, 1]."""
    rate = _weighted_mean(hit_ref, w_ref)
    shift = _weighted_mean(conf_ref, w_ref) - _weighted_mean(conf_tgt, w_tgt)
    return np.clip(rate - shift, 0, 1)


def _error_spread(cells: np.ndarray) -> np.ndarray:
    """(B, k_true, k_pred): the share of each true class among the reference's errors of each predicted class, from
    the weighted (true, predicted) tallies `cells`; uniform over the other classes where a predicted class has no
    reference error."""
    k = cells.shape[1]
    errors = cells * (1 - np.eye(k))[None]
    total = errors.sum(axis=1, keepdims=True)
    uniform = np.broadcast_to((1 - np.eye(k)) / max(k - 1, 1), errors.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, errors / np.where(total > 0, total, 1), uniform)


class ReferenceSide(NamedTuple):
    """The reference's part of ATC and DoC per draw, for all rows (column 0: accuracy) and each predicted class's
    rows (column 1 + i: its precision); computed once per reference and shared by every target."""

    rate: np.ndarray  # (B, 1 + k) hit rates
    confidence: np.ndarray  # (B, 1 + k) mean confidences
    threshold: np.ndarray  # (B, 1 + k) ATC thresholds
    spread: np.ndarray  # (B, k, k) the error spread (_error_spread)


def _subsets(pred: np.ndarray, k: int) -> list[np.ndarray]:
    return [np.ones(len(pred), bool)] + [pred == i for i in range(k)]


def reference_side(conf_ref, y_ref, pred_ref, w_ref, k: int, cells: np.ndarray | None = None) -> ReferenceSide:
    """ATC's thresholds and DoC's rates and confidences of the reference per draw (weights w_ref (B, n_ref)); `cells`:
    the draws' (true, predicted) tallies (B, k, k), where the caller has them (any positive scale per draw)."""
    w_ref = np.asarray(w_ref, dtype=float)  # float counts once (exact for integers): matrix products
    if cells is None:
        cells = (w_ref @ np.eye(k * k)[np.asarray(y_ref) * k + np.asarray(pred_ref)]).reshape(len(w_ref), k, k)
    hit = (y_ref == pred_ref).astype(float)
    parts = []
    for rows in _subsets(pred_ref, k):  # a class's own columns only: one pass over them, not over all rows
        w = w_ref[:, rows] if not rows.all() else w_ref
        parts.append(
            (
                _weighted_mean(hit[rows], w),
                _weighted_mean(conf_ref[rows], w),
                atc_threshold(conf_ref[rows], hit[rows], w),
            )
        )
    rate, confidence, threshold = (np.stack(column, axis=1) for column in zip(*parts))
    return ReferenceSide(rate, confidence, threshold, _error_spread(cells))


def target_side(method: str, reference: ReferenceSide, conf_tgt, pred_tgt, w_tgt, k: int) -> dict[str, np.ndarray]:
    """Accuracy, macro-F1 and the implied target priors per draw by ATC or DoC, from the reference's side and the
    target's weights w_tgt (B, n_tgt)."""
    w_tgt = np.asarray(w_tgt, dtype=float)
    shares, totals = [], []
    for s, rows in enumerate(_subsets(pred_tgt, k)):
        w = w_tgt[:, rows] if not rows.all() else w_tgt
        totals.append(w.sum(axis=1))  # a predicted class's rows: its weight in each draw
        if method == "atc":
            shares.append(share_above(conf_tgt[rows], w, reference.threshold[:, s]))
        else:
            with np.errstate(invalid="ignore"):
                shift = reference.confidence[:, s] - _weighted_mean(conf_tgt[rows], w)
            shares.append(np.clip(reference.rate[:, s] - shift, 0, 1))
    accuracy, precision = shares[0], np.stack(shares[1:], axis=1)  # (B, k): estimated precision of each class
    n_pred = np.stack(totals[1:], axis=1)
    precision = np.where(n_pred > 0, np.nan_to_num(precision), 0.0)
    eye = np.eye(k)[None]
    cm = n_pred[:, None, :] * (eye * precision[:, None, :] + (1 - eye) * (1 - precision[:, None, :]) * reference.spread)
    priors = cm.sum(axis=2) / np.maximum(cm.sum(axis=(1, 2)), 1e-300)[:, None]
    return {"accuracy": accuracy, "macro_f1": macro_f1(confusion_tallies(cm)), "priors": priors}


def thresholded_estimates(
    method: str, conf_ref, y_ref, pred_ref, w_ref, conf_tgt, pred_tgt, w_tgt, k: int
) -> dict[str, np.ndarray]:
    """Accuracy, macro-F1 and the implied target priors per draw, by ATC or DoC (module docstring)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    return target_side(method, reference_side(conf_ref, y_ref, pred_ref, w_ref, k), conf_tgt, pred_tgt, w_tgt, k)
