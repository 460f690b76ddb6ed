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

import numpy as np

from mhaudit.stats.f1 import confusion_tallies, macro_f1

__all__ = ["atc_share", "doc_share", "thresholded_estimates", "METHODS"]

METHODS = ("atc", "doc")


def _weighted_mean(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per draw (row of w): the w-weighted mean of the 1-D `values`, NaN where a draw has no weight."""
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (w @ values) / np.where(total > 0, total, 1), np.nan)


def atc_share(conf_ref, hit_ref, w_ref, conf_tgt, w_tgt) -> np.ndarray:
    """ATC per draw: the target's weighted share above the threshold at which the reference's share above
    equals its hit rate (accuracy, or a class's precision when the weights keep that class's rows)."""
    order = np.argsort(-conf_ref, kind="stable")
    sorted_ref, w_sorted = conf_ref[order], w_ref[:, order]
    rate = _weighted_mean(hit_ref, w_ref)
    total = w_sorted.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.cumsum(w_sorted, axis=1) / total  # weighted share of the reference at or above each row
    above = (share <= rate[:, None] + 1e-12).sum(axis=1)  # rows kept above the threshold
    threshold = np.where(above < len(sorted_ref), sorted_ref[np.minimum(above, len(sorted_ref) - 1)], -np.inf)
    t_order = np.argsort(conf_tgt, kind="stable")
    sorted_tgt, cumulative = conf_tgt[t_order], np.cumsum(w_tgt[:, t_order], axis=1)
    at_or_below = np.searchsorted(sorted_tgt, threshold, side="right")
    below_weight = np.where(at_or_below > 0, np.take_along_axis(cumulative, np.maximum(at_or_below - 1, 0)[:, None],
                                                                axis=1)[:, 0], 0.0)
    tgt_total = cumulative[:, -1] if cumulative.shape[1] else np.zeros(len(w_tgt))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (tgt_total - below_weight) / tgt_total
    return np.where(np.isfinite(rate) & (tgt_total > 0), out, np.nan)


def doc_share(conf_ref, hit_ref, w_ref, conf_tgt, w_tgt) -> np.ndarray:
    """DoC per draw: the reference hit rate minus the drop in mean confidence, clipped to [0, 1]."""
    rate = _weighted_mean(hit_ref, w_ref)
    shift = _weighted_mean(conf_ref, w_ref) - _weighted_mean(conf_tgt, w_tgt)
    return np.clip(rate - shift, 0, 1)


def _error_spread(y_ref, pred_ref, w_ref, k: int) -> np.ndarray:
    """(B, k_true, k_pred): the share of each true class among the reference's errors of each predicted class;
    uniform over the other classes where a predicted class has no reference error."""
    cells = (w_ref @ np.eye(k * k)[np.asarray(y_ref) * k + np.asarray(pred_ref)]).reshape(len(w_ref), k, k)
    errors = cells * (1 - np.eye(k))[None]
    total = errors.sum(axis=1, keepdims=True)
    uniform = np.broadcast_to((1 - np.eye(k)) / max(k - 1, 1), errors.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, errors / np.where(total > 0, total, 1), uniform)


def _class_share(share, conf_ref, hit, w_ref, rows_ref, conf_tgt, w_tgt, rows_tgt) -> np.ndarray:
    """`share` on one predicted class's rows only (its precision per draw): the same numbers as zero weights on
    every other row, in one pass over the class's columns instead of all of them; NaN where a side has none."""
    if not rows_ref.any() or not rows_tgt.any():
        return np.full(len(w_ref), np.nan)
    return share(conf_ref[rows_ref], hit[rows_ref], w_ref[:, rows_ref], conf_tgt[rows_tgt], w_tgt[:, rows_tgt])


def thresholded_estimates(method: str, conf_ref, y_ref, pred_ref, w_ref, conf_tgt, pred_tgt, w_tgt,
                          k: int) -> dict[str, np.ndarray]:
    """Accuracy, macro-F1 and the implied target priors per draw, by ATC or DoC (module docstring)."""
    share = {"atc": atc_share, "doc": doc_share}[method]
    # Float counts once (exact for integers): matrix products instead of a temporary per weighted mean.
    w_ref, w_tgt = np.asarray(w_ref, dtype=float), np.asarray(w_tgt, dtype=float)
    hit = (y_ref == pred_ref).astype(float)
    accuracy = share(conf_ref, hit, w_ref, conf_tgt, w_tgt)
    precision = np.stack([_class_share(share, conf_ref, hit, w_ref, pred_ref == i, conf_tgt, w_tgt, pred_tgt == i)
                          for i in range(k)], axis=1)  # (B, k): estimated precision of each predicted class
    n_pred = np.stack([w_tgt[:, pred_tgt == i].sum(axis=1) for i in range(k)], axis=1)
    precision = np.where(n_pred > 0, np.nan_to_num(precision), 0.0)
    spread = _error_spread(y_ref, pred_ref, w_ref, k)
    eye = np.eye(k)[None]
    cm = n_pred[:, None, :] * (eye * precision[:, None, :] + (1 - eye) * (1 - precision[:, None, :]) * spread)
    priors = cm.sum(axis=2) / np.maximum(cm.sum(axis=(1, 2)), 1e-300)[:, None]
    return {"accuracy": accuracy, "macro_f1": macro_f1(confusion_tallies(cm)), "priors": priors}
