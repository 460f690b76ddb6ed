"""ATC and DoC against a direct implementation, and their vectorised bootstrap against one resample at a time."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

from mhaudit.stats.atc import atc_share, doc_share, thresholded_estimates
from mhaudit.stats.bcts import fit_bcts
from mhaudit.stats.label_shift import bbse_priors, bbse_priors_resampled, em_priors, em_priors_resampled


def _data(seed, n, k=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k)) + 1.4 * np.eye(k)[y]
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    return y, z, p


def test_atc_by_its_definition():
    y, _, p = _data(0, 500)
    conf, hit = p.max(1), (p.argmax(1) == y)
    _, _, pt = _data(1, 700)
    ct = pt.max(1)
    # Garg et al.: t with mean(conf > t) = accuracy on the source; target accuracy = mean(conf_t > t)
    t = np.sort(conf)[::-1][int(round(hit.mean() * len(conf)))]
    got = atc_share(conf, hit.astype(float), np.ones((1, 500)), ct, np.ones((1, 700)))[0]
    assert (conf > t).mean() == pytest.approx(hit.mean(), abs=1 / 500)
    assert got == pytest.approx((ct > t).mean(), abs=1e-12)


def test_doc_by_its_definition():
    y, _, p = _data(2, 400)
    _, _, pt = _data(3, 300)
    hit = (p.argmax(1) == y).astype(float)
    got = doc_share(p.max(1), hit, np.ones((1, 400)), pt.max(1), np.ones((1, 300)))[0]
    assert got == pytest.approx(hit.mean() - (p.max(1).mean() - pt.max(1).mean()))


@pytest.mark.parametrize("method", ["atc", "doc"])
def test_on_the_reference_itself_both_recover_its_metrics(method):
    y, z, p = _data(4, 800)
    pred, ones = z.argmax(1), np.ones((1, 800))
    r = thresholded_estimates(method, p.max(1), y, pred, ones, p.max(1), pred, ones, 3)
    assert r["accuracy"][0] == pytest.approx((pred == y).mean(), abs=2e-3)
    assert r["macro_f1"][0] == pytest.approx(f1_score(y, pred, average="macro"), abs=5e-3)
    assert r["priors"][0] == pytest.approx(np.bincount(y) / 800, abs=5e-3)


@pytest.mark.parametrize("method", ["atc", "doc"])
def test_vectorised_bootstrap_equals_one_resample_at_a_time(method):
    y, z, p = _data(5, 300)
    yt, zt, pt = _data(6, 200)
    rng = np.random.default_rng(7)
    wr, wt = rng.multinomial(300, np.full(300, 1 / 300), 5), rng.multinomial(200, np.full(200, 1 / 200), 5)
    pred, predt = z.argmax(1), zt.argmax(1)
    together = thresholded_estimates(method, p.max(1), y, pred, wr, pt.max(1), predt, wt, 3)
    for b in range(5):
        r, t = np.repeat(np.arange(300), wr[b]), np.repeat(np.arange(200), wt[b])
        alone = thresholded_estimates(
            method, p.max(1)[r], y[r], pred[r], np.ones((1, len(r))), pt.max(1)[t], predt[t], np.ones((1, len(t))), 3
        )
        for key in ("accuracy", "macro_f1"):
            assert together[key][b] == pytest.approx(alone[key][0], abs=1e-9)


def test_resampled_prior_estimators_equal_the_single_ones_on_resampled_rows():
    y, z, p = _data(8, 400)
    _, zt, pt = _data(9, 300)
    model = fit_bcts(z, y)
    pi = np.bincount(y, minlength=3) / 400
    rng = np.random.default_rng(10)
    wr, wt = rng.multinomial(400, np.full(400, 1 / 400), 4), rng.multinomial(300, np.full(300, 1 / 300), 4)
    em = em_priors_resampled(model.probs(zt), pi, wt, tol=1e-10)
    bbse = bbse_priors_resampled(y, z.argmax(1), zt.argmax(1), 3, wr, wt)
    for b in range(4):
        r, t = np.repeat(np.arange(400), wr[b]), np.repeat(np.arange(300), wt[b])
        assert em[b] == pytest.approx(em_priors(model.probs(zt)[t], pi, tol=1e-10).priors, abs=1e-6)
        assert bbse[b] == pytest.approx(bbse_priors(y[r], z.argmax(1)[r], zt.argmax(1)[t], 3).priors, abs=1e-9)


def test_bcts_is_the_maximum_likelihood_and_matches_the_priors():
    from scipy.optimize import minimize
    from scipy.special import log_softmax

    y, z, _ = _data(11, 600)
    z = z * 0.4 + np.array([0.5, 0.0, -0.3])  # underconfident and biased
    m = fit_bcts(z, y)
    assert m.probs(z).mean(0) == pytest.approx(np.bincount(y) / 600, abs=1e-6)

    def nll(v):
        return -log_softmax(v[0] * z + np.r_[0, v[1:]], axis=1)[np.arange(600), y].mean()

    brute = minimize(
        nll, [1.0, 0.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 5000}
    )
    assert nll(np.r_[m.slope, m.bias[1:]]) <= brute.fun + 1e-9
    assert m.slope == pytest.approx(brute.x[0], abs=1e-3)


@pytest.mark.parametrize("method", ["atc", "doc"])
def test_the_two_sides_equal_each_class_with_zero_weights_on_the_others(method):
    """The reference's side (computed once per reference) and the target's give what each predicted class's
    precision is by definition, the share with every other row weighted 0, assembled into the confusion matrix
    by hand; a class the target never predicts gets precision 0 on no rows."""
    from mhaudit.stats.f1 import confusion_tallies, macro_f1

    share = {"atc": atc_share, "doc": doc_share}[method]
    y, z, p = _data(8, 300)
    _, zt, pt = _data(9, 200)
    pred, predt = z.argmax(1), np.where(zt.argmax(1) == 2, 0, zt.argmax(1))  # the target never predicts class 2
    rng = np.random.default_rng(3)
    wr = rng.multinomial(300, np.full(300, 1 / 300), 6).astype(float)
    wt = rng.multinomial(200, np.full(200, 1 / 200), 6).astype(float)
    hit = (pred == y).astype(float)
    got = thresholded_estimates(method, p.max(1), y, pred, wr, pt.max(1), predt, wt, 3)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.stack(
            [share(p.max(1), hit, wr * (pred == c), pt.max(1), wt * (predt == c)) for c in range(3)], axis=1
        )
    n_pred = np.stack([wt @ (predt == c) for c in range(3)], axis=1)
    precision = np.where(n_pred > 0, np.nan_to_num(precision), 0.0)
    cells = np.stack([wr @ ((y == j) & (pred == i)) for j in range(3) for i in range(3)], axis=1).reshape(6, 3, 3)
    errors = cells * (1 - np.eye(3))
    spread = errors / errors.sum(axis=1, keepdims=True)
    cm = n_pred[:, None, :] * (
        np.eye(3) * precision[:, None, :] + (1 - np.eye(3)) * (1 - precision[:, None, :]) * spread
    )
    np.testing.assert_allclose(got["macro_f1"], macro_f1(confusion_tallies(cm)), rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["priors"], cm.sum(2) / cm.sum((1, 2))[:, None], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["accuracy"], share(p.max(1), hit, wr, pt.max(1), wt), rtol=0, atol=1e-12)
