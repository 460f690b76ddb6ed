"""Elastic-net logistic regression with balanced class weights, solved to convergence.

The objective is scikit-learn's `LogisticRegression(C, l1_ratio, class_weight="balanced")`:
    C * sum_i s_i * logloss_i + l1_ratio * ||w||_1 + (1 - l1_ratio) / 2 * ||w||^2,   s_i = n / (2 n_{y_i}),
intercept unpenalised. scikit-learn offers only saga for it, which at a tolerance it can afford stops short
of the optimum (on Dreaddit's BC fits, probabilities up to 0.008 away from it) and took half of the audit's
fitting time. glum's IRLS with coordinate descent (glum.GeneralizedLinearRegressor, binomial family) solves
the same problem to a gradient tolerance of 1e-8: the same objective divided by C * sum(s), so its alpha is
1 / (C * sum(s)). tests/audits/test_divergence_elastic_net.py checks it against saga run to 1e-10.
glum's OpenMP threads sum in an order that varies from run to run (coefficients differed by 6e-14 between
two fits of the same data, enough to move a PR-AUC by 7e-7); one thread makes every fit repeat exactly, and
on these small problems it is faster too.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from threadpoolctl import ThreadpoolController

__all__ = ["ElasticNetLogistic"]

_threads: ThreadpoolController | None = None


def _openmp_threads() -> ThreadpoolController:
    """The thread pools loaded once glum is (its OpenMP runtime among them), found once."""
    global _threads
    if _threads is None:
        import glum  # noqa: F401

        _threads = ThreadpoolController()
    return _threads


class ElasticNetLogistic:
    """Binary elastic-net logistic regression; `coef_`, `intercept_` and `predict_proba` as scikit-learn's."""

    def __init__(self, C: float, l1_ratio: float, *, tol: float = 1e-8, max_iter: int = 1000):
        self.C, self.l1_ratio, self.tol, self.max_iter = C, l1_ratio, tol, max_iter

    def fit(self, x: np.ndarray, y: np.ndarray) -> ElasticNetLogistic:
        from glum import GeneralizedLinearRegressor

        y = (np.asarray(y) == 1).astype(np.float64)
        n, positives = y.size, y.sum()
        if positives in (0, n):
            raise ValueError("elastic-net logistic regression needs both classes among the training labels")
        weights = np.where(y == 1, n / (2 * positives), n / (2 * (n - positives)))
        model = GeneralizedLinearRegressor(
            family="binomial",
            alpha=1.0 / (self.C * weights.sum()),
            l1_ratio=self.l1_ratio,
            gradient_tol=self.tol,
            max_iter=self.max_iter,
        )
        with _openmp_threads().limit(limits=1, user_api="openmp"):
            model.fit(np.ascontiguousarray(x, dtype=np.float64), y, sample_weight=weights)
        self.coef_ = np.asarray(model.coef_, dtype=np.float64)[None, :]
        self.intercept_ = np.array([float(model.intercept_)])
        self.n_iter_ = int(model.n_iter_)
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        p = expit(np.asarray(x, dtype=np.float64) @ self.coef_[0] + self.intercept_[0])
        return np.column_stack([1.0 - p, p])
