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

from mhaudit.stats.calibration import stratified_folds

__all__ = ["domain_auc"]


def domain_auc(features_ref: np.ndarray, weights_ref: np.ndarray, features_tgt: np.ndarray, *, n_folds: int = 5,
               seed: int = 0) -> float:
    """Out-of-fold AUC of reference (weighted) vs target rows; the two sides carry equal total weight."""
    x = np.vstack([features_ref, features_tgt])
    is_target = np.r_[np.zeros(len(features_ref), int), np.ones(len(features_tgt), int)]
    w = np.r_[weights_ref * len(features_tgt) / weights_ref.sum(), np.ones(len(features_tgt))]
    folds = stratified_folds(is_target, n_folds, seed)
    out = np.empty(len(x))
    for fold in range(n_folds):
        held = folds == fold
        model = HistGradientBoostingClassifier(max_iter=100, max_leaf_nodes=15, learning_rate=0.1,
                                               early_stopping=False, random_state=seed)
        model.fit(x[~held], is_target[~held], sample_weight=w[~held])
        out[held] = model.predict_proba(x[held])[:, 1]
    return float(roc_auc_score(is_target, out, sample_weight=w))
