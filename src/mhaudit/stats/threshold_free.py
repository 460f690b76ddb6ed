"""Threshold-free and prevalence-aware companions of Macro-F1, on the same bootstrap resamples.

Macro-F1 scores predictions at one threshold, tuned on the training data; a data set whose prevalence or
score scale differs can then lose Macro-F1 without ranking any worse. Beside it, per prediction vector:

* balanced accuracy (mean recall of the two classes; prevalence-free, still at the threshold),
* ROC AUC (threshold-free; `stats.bootstrap.weighted_auc`'s exact weighted Mann-Whitney),
* PR-AUC gain over prevalence, (AP - pi) / (1 - pi): average precision (sklearn's step-wise AP) rescaled
  so that a score with no information is 0 and a perfect one 1 whatever the prevalence pi.

`bootstrap_panel` draws the resamples once (the count blocks of `stats.binary.bootstrap_macro_f1`, so the
Macro-F1 draws equal that function's for the same generator) and scores every statistic on each, so
differences between metrics are paired too.
"""

from __future__ import annotations

import math

import numpy as np

from mhaudit.stats.binary import _block_macro_f1, _check_preds, _count_blocks, _indicators, _warn_if_undefined
from mhaudit.stats.bootstrap import _Sorted
from mhaudit.stats.delong import check_binary, check_scores
from mhaudit.stats.undefined import check_zero_division, divide

__all__ = ["weighted_average_precision", "pr_auc_gain", "bootstrap_panel", "PANEL"]

PANEL = ("macro_f1", "balanced_accuracy", "auc", "pr_auc_gain")


class _Ranked:
    """One score vector prepared once: instances by descending score, and the last of each tied run."""

    def __init__(self, y: np.ndarray, score: np.ndarray):
        self.order = np.argsort(-score, kind="stable")
        ranked = score[self.order]
        self.ends = np.r_[np.flatnonzero(np.diff(ranked)), ranked.size - 1]
        self.hits = y[self.order].astype(np.float64)

    def average_precision(self, counts: np.ndarray) -> np.ndarray:
        w = np.take(counts, self.order, axis=1).astype(np.float64)
        tp = np.cumsum(w * self.hits, axis=1)[:, self.ends]
        seen = np.cumsum(w, axis=1)[:, self.ends]
        step = np.diff(tp, axis=1, prepend=0.0)
        return divide((step * divide(tp, seen, 0.0)).sum(axis=1), tp[:, -1])


def weighted_average_precision(y, score, counts) -> np.ndarray:
    """Average precision of each row of `counts` (how often each instance is drawn): (rows,).

    Row c equals `average_precision_score(y, score, sample_weight=c)` (scikit-learn), i.e. AP on the
    explicitly resampled arrays; NaN for a row without a drawn positive.

    >>> weighted_average_precision([1, 0, 1, 0], [.9, .8, .3, .1], [[1, 1, 1, 1], [2, 0, 0, 1]]).round(4).tolist()
    [0.8333, 1.0]
    """
    y = check_binary(y, "y")
    score = check_scores(score, y.size, "score")
    counts = np.atleast_2d(np.asarray(counts))
    out = _Ranked(y, score).average_precision(counts)
    _warn_if_undefined(out, "average precision", "no positive drawn")
    return out


def pr_auc_gain(ap, prevalence):
    """(AP - pi) / (1 - pi): 0 for an uninformative score, 1 for a perfect one; NaN when pi is 0 or 1."""
    ap, prevalence = np.asarray(ap, dtype=float), np.asarray(prevalence, dtype=float)
    out = _gain(ap, prevalence)[()]
    _warn_if_undefined(out, "PR-AUC gain", "one class only")
    return out


def _gain(ap: np.ndarray, prevalence: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((prevalence > 0) & (prevalence < 1), (ap - prevalence) / (1 - prevalence), np.nan)


def _balanced_accuracy(tallies: np.ndarray) -> np.ndarray:
    tp, fp, fn, tn = (tallies[..., i] for i in range(4))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((tp + fn > 0) & (tn + fp > 0), (tp / (tp + fn) + tn / (tn + fp)) / 2, np.nan)


def bootstrap_panel(
    y,
    preds,
    scores,
    n_boot: int,
    rng=None,
    *,
    n_boot_scores: int | None = None,
    scored=None,
    zero_division: float = math.nan,
) -> dict[str, np.ndarray]:
    """The panel of each prediction vector on the same instance resamples, and on the full data.

    `preds` (k, n) 0/1 and `scores` (k, n) their scores for class 1. Returns `macro_f1` (n_boot, k), equal
    to `bootstrap_macro_f1(y, preds, n_boot, rng, zero_division=...)` for the same generator state, and
    `balanced_accuracy`, `auc`, `pr_auc_gain` (m, s) on the first m = `n_boot_scores` (default n_boot) of
    those resamples for the s vectors listed in `scored` (default all); `point_<name>` (s,) on the full
    data (`point_macro_f1` (k,)). NaN where a resample lacks a class.
    """
    y = check_binary(y, "y")
    preds = _check_preds(preds, y.size)
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    if scores.shape != preds.shape:
        raise ValueError(f"scores must match preds' shape {preds.shape}, got {scores.shape}")
    zero_division = check_zero_division(zero_division)
    m = n_boot if n_boot_scores is None else min(n_boot, n_boot_scores)
    scored = list(range(preds.shape[0])) if scored is None else list(scored)
    rng = np.random.default_rng(rng)
    indicators, chosen = _indicators(y, preds), _indicators(y, preds[scored])
    ranked = [_Ranked(y, check_scores(scores[j], y.size, "score")) for j in scored]
    sorted_ = [_Sorted(y, scores[j]) for j in scored]
    out = {"macro_f1": np.empty((n_boot, preds.shape[0])), **{name: np.empty((m, len(scored))) for name in PANEL[1:]}}
    for start, counts in _count_blocks(y, n_boot, rng, stratified=False):
        out["macro_f1"][start : start + counts.shape[0]] = _block_macro_f1(indicators, counts, zero_division)
        if start < m and scored:
            _score_block(out, counts[: m - start], start, chosen, ranked, sorted_, y)
    ones = np.ones((1, y.size), dtype=np.int32)
    point = {name: np.empty(0) for name in PANEL[1:]}
    if scored:
        _score_block(point, ones, None, chosen, ranked, sorted_, y)
    out |= {f"point_{name}": values for name, values in point.items()}
    out["point_macro_f1"] = _block_macro_f1(indicators, ones, zero_division)[0]
    _warn_if_undefined(out["macro_f1"], "bootstrap macro-F1")
    for name in PANEL[1:]:
        _warn_if_undefined(out[name], f"bootstrap {name.replace('_', ' ')}", "a resample lacks a class")
    return out


def _score_block(out: dict, counts: np.ndarray, start: int | None, indicators, ranked, sorted_, y) -> None:
    """Balanced accuracy, AUC and PR-AUC gain of a block of resamples into `out` at row `start` (None: the
    full data, one row, stored as (k,))."""
    rows = counts.shape[0]
    tallies = (counts.astype(indicators.dtype) @ indicators).reshape(rows, -1, 4).astype(np.float64)
    prevalence = (counts @ y.astype(np.int64)) / counts.sum(axis=1)
    values = {
        "balanced_accuracy": _balanced_accuracy(tallies),
        "auc": np.column_stack([s.auc(counts) for s in sorted_]),
        "pr_auc_gain": _gain(np.column_stack([r.average_precision(counts) for r in ranked]), prevalence[:, None]),
    }
    for name, value in values.items():
        if start is None:
            out[name] = value[0]
        else:
            out[name][start : start + rows] = value
