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
from mhaudit.stats.bcts import BCTS, EXACT_MAX_ROWS, bcts_expansion, fit_bcts, fit_bcts_resampled, newton_refits
from mhaudit.stats.calibration import stratified_folds
from mhaudit.stats.cbpe_interval import MAX_CHUNK_BYTES, draws_per_chunk
from mhaudit.stats.domain_shift import bin_thresholds, domain_auc
from mhaudit.stats.label_shift import em_batch, em_chord, em_priors


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


def test_bcts_expansion_refits_are_close_to_exact_refits_above_the_exact_limit():
    """Above EXACT_MAX_ROWS the refits are the expansion's alone: against Newton run to convergence on each
    resample's rows, within a small share of the bootstrap spread (the error shrinks as n^-1/2 relative to it)."""
    rng = np.random.default_rng(5)
    y, z = _scores(rng, 3000, [0.4, 0.3, 0.2, 0.1])
    fit = fit_bcts(z, y)
    counts = rng.multinomial(3000, np.full(3000, 1 / 3000), size=300)
    assert 3000 > EXACT_MAX_ROWS
    slopes, biases = fit_bcts_resampled(z, y, counts, fit)
    exact_slopes, exact_biases = newton_refits(z, y, counts, np.full(300, fit.slope), np.tile(fit.bias, (300, 1)))
    spread = np.c_[exact_slopes, exact_biases[:, 1:]].std(axis=0)
    error = np.abs(np.c_[slopes - exact_slopes, biases[:, 1:] - exact_biases[:, 1:]]) / spread
    assert error.max() < 0.1 and error.mean() < 0.01
    quantiles = [
        np.quantile(a, [0.025, 0.975], axis=0)
        for a in (np.c_[slopes, biases[:, 1:]], np.c_[exact_slopes, exact_biases[:, 1:]])
    ]
    assert (np.abs(quantiles[0] - quantiles[1]) / spread).max() < 0.03


def test_bcts_expansion_derivatives_by_finite_differences():
    """The per-row gradients average to the NLL's gradient (0 at the fit, scipy's log_softmax off it), their
    Hessians to the gradient's differences, and `third` is the Hessian's differences."""
    rng = np.random.default_rng(6)
    y, z = _scores(rng, 500, [0.5, 0.3, 0.2], k=3)
    fit = fit_bcts(z, y)

    def at(theta):
        return bcts_expansion(z, y, BCTS(theta[0], np.r_[0.0, theta[1:]]))

    def nll(theta):
        return -np.mean(log_softmax(theta[0] * z + np.r_[0.0, theta[1:]], axis=1)[np.arange(500), y])

    theta, h = np.r_[fit.slope * 1.1, fit.bias[1:] + 0.2], 1e-5
    mean = at(theta).rows.mean(axis=0)
    steps = h * np.eye(3)
    numeric_gradient = [(nll(theta + e) - nll(theta - e)) / (2 * h) for e in steps]
    np.testing.assert_allclose(mean[:3], numeric_gradient, atol=1e-8)
    numeric_hessian = np.stack(
        [(at(theta + e).rows.mean(0)[:3] - at(theta - e).rows.mean(0)[:3]) / (2 * h) for e in steps], axis=1
    )
    np.testing.assert_allclose(mean[3:].reshape(3, 3), numeric_hessian, atol=1e-7)
    numeric_third = np.stack(
        [(at(theta + e).rows.mean(0)[3:] - at(theta - e).rows.mean(0)[3:]).reshape(3, 3) / (2 * h) for e in steps],
        axis=2,
    )
    np.testing.assert_allclose(at(theta).third, numeric_third, atol=1e-7)
    assert np.abs(at(np.r_[fit.slope, fit.bias[1:]]).rows.mean(axis=0)[:3]).max() < 1e-6  # the fit is the optimum


def test_em_chord_is_the_jacobian_and_its_steps_reach_the_em_fixed_point():
    rng = np.random.default_rng(2)
    _, z = _scores(rng, 400, [0.2, 0.3, 0.5], k=3)  # a target whose priors moved from pi
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    pi = np.array([0.5, 0.3, 0.2])
    q = em_priors(p, pi, tol=1e-14, max_iter=100_000).priors
    ones = np.ones((1, 400))

    def step(prior):  # one plain EM step from `prior`
        return em_batch(np.ascontiguousarray(p.T)[None], pi[None], ones, prior[None], max_iter=1)[0]

    h = 1e-6
    jacobian = np.stack([(step(q + h * e) - step(q - h * e)) / (2 * h) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(np.linalg.inv(em_chord(p, pi, q)), np.eye(3) - jacobian, atol=1e-6)
    counts = rng.multinomial(400, np.full(400, 1 / 400), size=8).astype(float)
    per_draw = np.broadcast_to(p.T, (8, 3, 400))
    plain = em_batch(per_draw, np.tile(pi, (8, 1)), counts, np.tile(q, (8, 1)), 1e-14, 100_000)
    chord = em_batch(per_draw, np.tile(pi, (8, 1)), counts, np.tile(q, (8, 1)), 1e-14, 10_000, chord=em_chord(p, pi, q))
    np.testing.assert_allclose(chord, plain, atol=1e-10)  # one draw's prior is 0.001: both slow there


def test_em_chord_steps_near_a_vanishing_class_fall_back_to_em():
    """A target class with prior ~0.01: the held Jacobian no longer fits some resamples (their chord step would
    leave the simplex or grow), which then take plain EM steps. Both stop on the same rule (no prior moves by
    1e-6), so both end within EM's own slack of the converged priors; chord steps clipped at 0 ended 0.018 off."""
    rng = np.random.default_rng(2)
    pi, q_true = np.array([0.3, 0.3, 0.4]), np.array([0.01, 0.3, 0.69])
    y = rng.choice(3, size=3000, p=q_true)
    x = rng.normal(size=(3000, 3)) + np.eye(3)[y]
    p = np.exp(-0.5 * ((x[:, None, :] - np.eye(3)[None]) ** 2).sum(-1)) * pi  # calibrated under the source priors
    p /= p.sum(axis=1, keepdims=True)
    q = em_priors(p, pi, tol=1e-12, max_iter=100_000).priors
    counts = rng.multinomial(3000, np.full(3000, 1 / 3000), size=60).astype(float)
    per_draw, priors, start = np.broadcast_to(p.T, (60, 3, 3000)), np.tile(pi, (60, 1)), np.tile(q, (60, 1))
    converged = em_batch(per_draw, priors, counts, start, 1e-14, 200_000)
    plain = em_batch(per_draw, priors, counts, start)
    chord = em_batch(per_draw, priors, counts, start, chord=em_chord(p, pi, q))
    slack = np.abs(plain - converged).max()
    assert slack < 2e-3 and np.abs(chord - converged).max() < 2 * slack
    assert (chord > 0).all() and np.allclose(chord.sum(axis=1), 1)


def test_em_batch_equals_plain_em_on_each_resample():
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(3), size=300)
    pi = np.array([0.5, 0.3, 0.2])
    counts = rng.multinomial(300, np.full(300, 1 / 300), size=5).astype(float)
    shared = em_batch(np.ascontiguousarray(p.T)[None], pi[None], counts, np.tile(pi, (5, 1)), 1e-13, 100_000)
    per_draw = em_batch(
        np.broadcast_to(p.T, (5, 3, 300)), np.tile(pi, (5, 1)), counts, np.tile(pi, (5, 1)), 1e-13, 100_000
    )
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
        model = HistGradientBoostingClassifier(
            max_iter=100, max_leaf_nodes=15, learning_rate=0.1, early_stopping=False, random_state=0
        )
        out[held] = model.fit(x[~held], is_target[~held], sample_weight=w[~held]).predict_proba(x[held])[:, 1]
    assert domain_auc(ref, w_ref, tgt, seed=0) == pytest.approx(
        roc_auc_score(is_target, out, sample_weight=w), abs=1e-12
    )


def test_thread_budget_limits_and_restores():
    before = {p["internal_api"]: p["num_threads"] for p in threadpool_info()}
    with thread_budget(1):
        assert all(p["num_threads"] == 1 for p in threadpool_info())
    assert {p["internal_api"]: p["num_threads"] for p in threadpool_info()} == before


def test_draw_chunks_stay_within_the_byte_budget():
    assert draws_per_chunk(4 * 9_000) == 50  # the usual sizes keep 50 draws a chunk (and their random stream)
    step = draws_per_chunk(4 * 1_000_000)
    assert 1 <= step < 50 and step * 8 * 4 * 1_000_000 <= MAX_CHUNK_BYTES
    assert draws_per_chunk(10**12) == 1
