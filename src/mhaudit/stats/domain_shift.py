"""The shift diagnostic behind the trust verdict: can a classifier tell the target's scores from the
reference's once the reference is reweighted to the estimated target priors?

Under label shift alone (p(x | y) unchanged, what every estimator here assumes) the reference's score
distribution, each row weighted by q_y / pi_y, is the target's, so no classifier beats AUC 0.5 on it.
A cross-validated gradient-boosted classifier on the calibrated log-probabilities measures how far from
that the pair is. Concept shift that leaves p(x) unchanged is invisible to it, and to any label-free
estimate (docs/estimate.md).
"""

from __future__ import annotations

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score

from mhaudit.core.threads import thread_budget
from mhaudit.stats.calibration import stratified_folds

__all__ = ["domain_auc", "bin_thresholds"]

MAX_BINS = 255  # HistGradientBoostingClassifier's default max_bins
_PERCENTILES = np.linspace(0, 100, num=MAX_BINS + 1)[1:-1]


def bin_thresholds(column: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The bin edges HistGradientBoostingClassifier finds for one feature with sample weights (scikit-learn 1.9's
    `_find_binning_thresholds`: weighted "averaged inverted CDF" percentiles), all 254 in one pass; scikit-learn
    takes them one Python-level call each, which was most of the domain classifier's time."""
    keep = weights != 0
    order = np.argsort(column[keep])
    values, w = column[keep][order], weights[keep][order]
    distinct = np.unique(values)
    if len(distinct) == 1:
        return np.empty(0)
    if len(distinct) <= MAX_BINS:
        return (distinct[:-1] + distinct[1:]) / 2
    resorted = np.argsort(values[:, None], axis=0)[:, 0]  # scikit-learn sorts again; ties keep its order
    cdf = np.cumsum(w[resorted])
    rank = _PERCENTILES / 100 * cdf[-1]
    at = np.clip(np.searchsorted(cdf, rank), 0, len(cdf) - 1)
    above = np.clip(at + 1, 0, len(cdf) - 1)
    low, high = values[resorted[at]], values[resorted[above]]
    edges = np.where(cdf[at] - rank > np.finfo(float).eps, low, (low + high) / 2)
    return np.clip(np.unique(edges), None, np.finfo(np.float64).max)


def _binned(x_fit: np.ndarray, w_fit: np.ndarray, x: np.ndarray) -> np.ndarray:
    """x as bin codes of the edges found on (x_fit, w_fit): the classifier then finds one bin per code and grows
    the trees it would on the raw features (up to bins no fitting row falls in)."""
    return np.stack(
        [np.searchsorted(bin_thresholds(x_fit[:, j], w_fit), x[:, j]) for j in range(x.shape[1])], axis=1
    ).astype(float)


def domain_auc(
    features_ref: np.ndarray, weights_ref: np.ndarray, features_tgt: np.ndarray, *, n_folds: int = 5, seed: int = 0
) -> float:
    """Out-of-fold AUC of reference (weighted) vs target rows; the two sides carry equal total weight."""
    x = np.vstack([features_ref, features_tgt])
    is_target = np.r_[np.zeros(len(features_ref), int), np.ones(len(features_tgt), int)]
    w = np.r_[weights_ref * len(features_tgt) / weights_ref.sum(), np.ones(len(features_tgt))]
    folds = stratified_folds(is_target, n_folds, seed)
    out = np.empty(len(x))
    with thread_budget(1):  # a few thousand rows per tree: threads cost more than they save
        for fold in range(n_folds):
            held = folds == fold
            codes = _binned(x[~held], w[~held], x)
            model = HistGradientBoostingClassifier(
                max_iter=100, max_leaf_nodes=15, learning_rate=0.1, early_stopping=False, random_state=seed
            )
            model.fit(codes[~held], is_target[~held], sample_weight=w[~held])
            out[held] = model.predict_proba(codes[held])[:, 1]
    return float(roc_auc_score(is_target, out, sample_weight=w))
