"""The converged elastic-net solver against scikit-learn's saga run to a tight tolerance (an independent
solver of the same objective), and the audit's loose saga for scale."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from mhaudit.audits.divergence.elastic_net import ElasticNetLogistic
from mhaudit.audits.divergence.fitting import ELASTIC_NET_GRID


def problem(n: int, p: int, seed: int, balance: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Rows of norm 1 (as the channels' combined blocks), a sparse true signal, unbalanced classes."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, p))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    w = np.where(rng.random(p) < 0.2, rng.normal(scale=8.0, size=p), 0.0)
    y = (rng.random(n) < 1 / (1 + np.exp(-(x @ w + np.log(balance / (1 - balance)))))).astype(int)
    return x, y


def saga(x, y, C, l1_ratio, tol):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LogisticRegression(C=C, l1_ratio=l1_ratio, solver="saga", class_weight="balanced", tol=tol,
                                  max_iter=200_000, random_state=0).fit(x, y)


@pytest.mark.parametrize("C, l1_ratio", ELASTIC_NET_GRID)
@pytest.mark.parametrize("seed, balance", [(0, 0.5), (1, 0.25)])
def test_optimum_equals_saga_run_to_convergence(C, l1_ratio, seed, balance):
    x, y = problem(400, 20, seed, balance)
    ours = ElasticNetLogistic(C, l1_ratio).fit(x, y)
    reference = saga(x, y, C, l1_ratio, tol=1e-10)
    np.testing.assert_allclose(ours.coef_, reference.coef_, atol=2e-5)
    np.testing.assert_allclose(ours.intercept_, reference.intercept_, atol=2e-5)
    np.testing.assert_allclose(ours.predict_proba(x), reference.predict_proba(x), atol=1e-6)
    # the same zeros: weights the L1 part removes are exactly 0 in both
    np.testing.assert_array_equal(np.abs(ours.coef_) > 1e-6, np.abs(reference.coef_) > 1e-6)


def test_closer_to_the_optimum_than_the_loose_saga_it_replaced():
    x, y = problem(600, 40, seed=2)
    reference = saga(x, y, 10.0, 0.95, tol=1e-10).predict_proba(x)[:, 1]
    loose = saga(x, y, 10.0, 0.95, tol=1e-3).predict_proba(x)[:, 1]
    ours = ElasticNetLogistic(10.0, 0.95).fit(x, y).predict_proba(x)[:, 1]
    assert np.abs(ours - reference).max() < 1e-6 < np.abs(loose - reference).max()


def test_one_class_is_refused():
    x, _ = problem(50, 5, seed=3)
    with pytest.raises(ValueError, match="both classes"):
        ElasticNetLogistic(1.0, 0.5).fit(x, np.ones(50, dtype=int))


def test_a_fit_repeats_exactly():
    """One OpenMP thread: glum's parallel sums otherwise vary in the last bits from fit to fit."""
    x, y = problem(3000, 300, seed=4)
    first = ElasticNetLogistic(10.0, 0.5).fit(x, y)
    for _ in range(2):
        again = ElasticNetLogistic(10.0, 0.5).fit(x, y)
        np.testing.assert_array_equal(again.coef_, first.coef_)
        np.testing.assert_array_equal(again.intercept_, first.intercept_)
