"""The label-free estimate's batched solvers against independent references: BCTS refits and EM priors per
resample by plain per-draw fits on the resampled rows, the domain classifier's bin edges by scikit-learn's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_softmax
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.ensemble._hist_gradient_boosting.binning import _find_binning_thresholds
from sklearn.metrics import roc_auc_score
from threadpoolctl import threadpool_info

from mhaudit.core.threads import thread_budget
from mhaudit.stats.bcts import fit_bcts, fit_bcts_resampled
from mhaudit.stats.calibration import stratified_folds
from mhaudit.stats.cbpe_interval import MAX_CHUNK_BYTES, draws_per_chunk
from mhaudit.stats.domain_shift import bin_thresholds, domain_auc
from mhaudit.stats.label_shift import em_batch, em_priors


def _scores(rng, n, priors, k=4, separation=1.6):
    y = rng.choice(k, size=n, p=priors)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += separation
    return y, z


def test_bcts_refits_equal_a_fit_on_each_resample():
    rng = np.random.default_rng(0)
    y, z = _scores(rng, 400, [0.4, 0.3, 0.2, 0.1])
    counts = rng.multinomial(400, np.full(400, 1 / 400), size=6)
    slopes, biases = fit_bcts_resampled(z, y, counts, fit_bcts(z, y))
    for b, c in enumerate(counts):
        zb, yb = np.repeat(z, c, axis=0), np.repeat(y, c)  # the resampled rows themselves

        def nll(params):
            return -np.mean(log_softmax(params[0] * zb + np.r_[0.0, params[1:]], axis=1)[np.arange(len(yb)), yb])

        reference = minimize(nll, np.r_[1.0, np.zeros(3)], method="BFGS", options={"gtol": 1e-10}).x
        assert slopes[b] == pytest.approx(reference[0], abs=1e-6)
        np.testing.assert_allclose(biases[b], np.r_[0.0, reference[1:]], atol=1e-6)


def test_em_batch_equals_plain_em_on_each_resample():
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(3), size=300)
    pi = np.array([0.5, 0.3, 0.2])
    counts = rng.multinomial(300, np.full(300, 1 / 300), size=5).astype(float)
    shared = em_batch(np.ascontiguousarray(p.T)[None], pi[None], counts, np.tile(pi, (5, 1)), 1e-13, 100_000)
    per_draw = em_batch(np.broadcast_to(p.T, (5, 3, 300)), np.tile(pi, (5, 1)), counts, np.tile(pi, (5, 1)),
                        1e-13, 100_000)
    for b, c in enumerate(counts.astype(int)):
        reference = em_priors(np.repeat(p, c, axis=0), pi, tol=1e-13, max_iter=100_000).priors
        np.testing.assert_allclose(shared[b], reference, atol=1e-9)
        np.testing.assert_allclose(per_draw[b], reference, atol=1e-9)


@pytest.mark.parametrize("decimals", [1, 2, 8])
def test_bin_edges_are_scikit_learns(decimals):
    rng = np.random.default_rng(decimals)
    x = np.round(rng.normal(size=3000), decimals)  # ties, and few distinct values at one decimal
    x[:100] = -27.6  # a clipped log-probability, many times
    w = rng.choice([0.0, 0.5, 1.0, 2.3], size=3000)
    np.testing.assert_array_equal(bin_thresholds(x, w), _find_binning_thresholds(x, 255, w))


def test_domain_auc_equals_the_classifier_on_raw_features():
    rng = np.random.default_rng(2)
    ref, tgt = rng.normal(size=(900, 3)), rng.normal(size=(500, 3)) + [0.3, 0.0, 0.0]
    w_ref = rng.choice([0.5, 1.0, 2.0], size=900)
    x, is_target = np.vstack([ref, tgt]), np.r_[np.zeros(900, int), np.ones(500, int)]
    w = np.r_[w_ref * 500 / w_ref.sum(), np.ones(500)]
    folds, out = stratified_folds(is_target, 5, 0), np.empty(1400)
    for fold in range(5):
        held = folds == fold
        model = HistGradientBoostingClassifier(max_iter=100, max_leaf_nodes=15, learning_rate=0.1,
                                               early_stopping=False, random_state=0)
        out[held] = model.fit(x[~held], is_target[~held], sample_weight=w[~held]).predict_proba(x[held])[:, 1]
    assert domain_auc(ref, w_ref, tgt, seed=0) == pytest.approx(roc_auc_score(is_target, out, sample_weight=w),
                                                                abs=1e-12)


def test_thread_budget_limits_and_restores():
    before = {p["internal_api"]: p["num_threads"] for p in threadpool_info()}
    with thread_budget(1):
        assert all(p["num_threads"] == 1 for p in threadpool_info())
    assert {p["internal_api"]: p["num_threads"] for p in threadpool_info()} == before


def test_draw_chunks_stay_within_the_byte_budget():
    assert draws_per_chunk(4 * 9_000) == 50  # the usual sizes keep 50 draws a chunk (and their random stream)
    step = draws_per_chunk(4 * 1_000_000)
    assert 1 <= step < 50 and step * 8 * 4 * 1_000_000 <= MAX_CHUNK_BYTES
    assert draws_per_chunk(10 ** 12) == 1
