"""stats.ppi against independent references: ppi-python, brute-force formulas and the sampling distribution."""

import numpy as np
import pytest
from sklearn.metrics import f1_score

from mhaudit.stats.ppi import anticipated_sd, label_coordinates, pool_estimates, predicted_coordinates

ppi_py = pytest.importorskip("ppi_py", reason="ppi-python is a dev dependency (pip install -e '.[dev]')")


def _pool(n=3000, k=2, seed=0, calibrated=True):
    """A pool whose labels are drawn from its posteriors (calibrated) or from a distorted copy (not)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 1.5 + np.array([0.6] + [0] * (k - 1))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    truth = probs if calibrated else np.roll(probs, 1, axis=1) * 0.5 + probs * 0.5
    y = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    return y, probs.argmax(axis=1), probs


def _srs(n_items, n, rng, size=1):
    m = np.zeros((size, n_items))
    for b in range(size):
        m[b, rng.choice(n_items, n, replace=False)] = 1
    return m


def test_one_stratum_point_estimates_are_ppi_pythons_and_the_se_agrees_when_the_pool_is_large():
    y, pred, probs = _pool(n=20000)
    rng = np.random.default_rng(1)
    m = _srs(y.size, 200, rng)
    rows = m[0] > 0
    strata = np.zeros(y.size, dtype=int)
    z, f = label_coordinates(y, pred, 2), predicted_coordinates(probs, pred)
    acc_z, acc_f = z[:, :2].sum(axis=1), f[:, :2].sum(axis=1)  # accuracy's coordinate: a mean
    for lam, tuning in ((1.0, "ppi"), (0.0, "labels")):
        ours = pool_estimates(m, y, pred, probs, strata, tuning=tuning, population="platform")
        theirs = ppi_py.ppi_mean_pointestimate(acc_z[rows], acc_f[rows], acc_f, lam=lam)
        assert ours.estimate["accuracy"][0] == pytest.approx(float(np.ravel(theirs)[0]), abs=1e-12)
        theirs = ppi_py.ppi_mean_pointestimate(z[rows, 3], f[rows, 3], f[:, 3], lam=lam)
        assert ours.estimate["prevalence"][0, 1] == pytest.approx(float(np.ravel(theirs)[0]), abs=1e-12)
        # ppi-python takes the labelled items to be independent of the pool; ours are part of it. With
        # n = 200 of N = 20,000 the two standard errors differ by about n / N.
        low, high = ppi_py.ppi_mean_ci(acc_z[rows], acc_f[rows], acc_f, alpha=0.05, lam=lam)
        assert ours.se["accuracy"][0] == pytest.approx((high - low)[0] / 2 / 1.959963984540054, rel=0.03)


def test_platform_variance_matches_resampling_of_the_pool_itself():
    """Population "platform": the pool is drawn from the platform, then the sample from the pool; over both
    draws the estimate's variance about the platform's mean matches the reported one (either calibration)."""
    rng = np.random.default_rng(13)
    for distortion in (0.6, 1.6):  # over- and under-confident posteriors
        estimates, variances = [], []
        for _ in range(1500):
            logits = rng.normal(size=(200, 2)) * 1.5
            probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
            true = probs**distortion / (probs**distortion).sum(axis=1, keepdims=True)
            y = (rng.random(200) > true[:, 0]).astype(int)
            m = _srs(200, 100, rng)
            est = pool_estimates(
                m, y, probs.argmax(axis=1), probs, np.zeros(200, dtype=int), tuning="ppi", population="platform"
            )
            estimates.append(est.estimate["prevalence"][0, 1])
            variances.append(est.se["prevalence"][0, 1] ** 2)
        assert np.mean(variances) == pytest.approx(np.var(np.array(estimates) - 0.5), rel=0.12), distortion


def test_a_stratum_whose_labels_all_agree_still_has_a_variance():
    """20 labels, all equal to the prediction: not certainty. The floor p(1 - p), p = 0.5 / (n + 1), keeps the
    standard error positive."""
    y, pred, probs = _pool(n=2000, seed=14)
    y = pred.copy()  # every label agrees with the model
    strata = (np.arange(2000) >= 1000).astype(int)
    m = np.zeros((1, 2000))
    m[0, [*range(10), *range(1000, 1010)]] = 1
    for tuning in ("power", "ppi", "labels"):
        est = pool_estimates(m, y, pred, probs, strata, tuning=tuning)
        assert est.se["macro_f1"][0] > 0.01 and est.half_width("macro_f1")[0] > 0.02, tuning
        assert 0 <= est.estimate["macro_f1"][0] <= 1, tuning


def test_power_tuned_lambda_is_ppi_pythons_without_its_unlabelled_term():
    """PPI++'s λ = Cov(z, f) / ((1 + n/N) Var(f)) (ppi-python) counts the variance of the unlabelled mean of f;
    for the pool's own mean that term is 0 (f is known on every pooled item), so ours is Cov / Var."""
    y, pred, probs = _pool(seed=3)
    m = _srs(y.size, 500, np.random.default_rng(4))
    rows = m[0] > 0
    z, f = label_coordinates(y, pred, 2), predicted_coordinates(probs, pred)
    ours = pool_estimates(m, y, pred, probs, np.zeros(y.size, dtype=int), tuning="power")
    for j in (2, 3):  # the true-class coordinates (the prevalence estimates)
        lam = ppi_py.ppi._calc_lam_glm(
            z[rows, j] - z[rows, j].mean(),
            f[rows, j] - f[rows, j].mean(),
            f[:, j] - f[:, j].mean(),
            np.eye(1),
            clip=False,
        )
        assert ours.lam[0, j] == pytest.approx(min(1.0, lam * (1 + 500 / y.size)), abs=0.03)


def test_labels_only_srs_is_the_sample_mean_with_the_finite_population_correction():
    y, pred, probs = _pool(n=800, k=3, seed=5)
    m = _srs(y.size, 120, np.random.default_rng(6))
    rows = m[0] > 0
    est = pool_estimates(m, y, pred, probs, np.zeros(y.size, dtype=int), tuning="labels")
    correct = (y == pred)[rows]
    assert est.estimate["accuracy"][0] == pytest.approx(correct.mean(), abs=1e-12)
    assert est.se["accuracy"][0] == pytest.approx(np.sqrt(correct.var(ddof=1) / 120 * (1 - 120 / 800)), rel=1e-9)
    # macro-F1 from the design-weighted tallies: with one stratum, tp and t are the sample's shares, q the pool's
    q = np.bincount(pred, minlength=3) / pred.size
    tp = np.array([((y == c) & (pred == c))[rows].mean() for c in range(3)])
    t = np.array([(y == c)[rows].mean() for c in range(3)])
    assert est.estimate["macro_f1"][0] == pytest.approx(np.mean(2 * tp / (q + t)), abs=1e-12)


def test_census_gives_the_exact_metric_with_zero_width():
    y, pred, probs = _pool(n=400, k=3, seed=7)
    strata = np.arange(400) % 4
    for tuning in ("power", "ppi", "labels"):
        est = pool_estimates(np.ones((1, 400)), y, pred, probs, strata, tuning=tuning)
        assert est.estimate["accuracy"][0] == pytest.approx((y == pred).mean(), abs=1e-12)
        assert est.estimate["macro_f1"][0] == pytest.approx(f1_score(y, pred, average="macro"), abs=1e-12)
        assert est.estimate["prevalence"][0] == pytest.approx(np.bincount(y, minlength=3) / 400, abs=1e-12)
        assert est.se["macro_f1"][0] == pytest.approx(0, abs=1e-9)


def _stratified(strata, sizes, rng, n_draws):
    m = np.zeros((n_draws, strata.size))
    for h, n_h in enumerate(sizes):
        rows = np.flatnonzero(strata == h)
        picks = np.argsort(rng.random((n_draws, rows.size)), axis=1)[:, :n_h]  # n_h distinct items per draw
        m[np.arange(n_draws)[:, None], rows[picks]] = 1
    return m


@pytest.mark.parametrize("calibrated", [True, False])
def test_stratified_estimates_unbiased_and_cover(calibrated):
    """Sampling distribution over 2,000 stratified draws: mean error, SE against the empirical SD, coverage."""
    y, pred, probs = _pool(n=2000, k=2, seed=8, calibrated=calibrated)
    conf = probs.max(axis=1)
    strata = pred * 2 + (conf > np.median(conf))
    rng = np.random.default_rng(9)
    m = _stratified(strata, [40, 40, 40, 40], rng, 2000)
    truth = {"accuracy": (y == pred).mean(), "macro_f1": f1_score(y, pred, average="macro")}
    for tuning in ("ppi", "labels", "power"):
        est = pool_estimates(m, y, pred, probs, strata, tuning=tuning)
        for metric, value in truth.items():
            draws = est.estimate[metric]
            assert abs(draws.mean() - value) < 0.004, (tuning, metric)
            assert np.median(est.se[metric]) == pytest.approx(draws.std(), rel=0.12), (tuning, metric)
            low, high = est.interval(metric)
            assert ((low <= value) & (value <= high)).mean() >= 0.92, (tuning, metric)
    # Within a stratum by predicted class and confidence f varies little, so PPI adds little to the
    # stratification; in one stratum (simple random sampling) calibrated posteriors must narrow the estimate.
    one = np.zeros(y.size, dtype=int)
    m_srs = _stratified(one, [160], rng, 2000)
    ppi, labels = (pool_estimates(m_srs, y, pred, probs, one, tuning=t).estimate["macro_f1"] for t in ("ppi", "labels"))
    if calibrated:
        assert ppi.std() < 0.93 * labels.std()  # measured 0.89 on this pool


def test_a_stratum_without_labels_gives_nan():
    y, pred, probs = _pool(n=200, seed=10)
    strata = (np.arange(200) >= 100).astype(int)
    m = np.zeros((1, 200))
    m[0, :30] = 1
    est = pool_estimates(m, y, pred, probs, strata)
    assert np.isnan(est.estimate["accuracy"][0])


def test_anticipated_sd_matches_a_monte_carlo_of_the_linearised_residual():
    y, pred, probs = _pool(n=1000, k=3, seed=11)
    strata = pred
    sd = anticipated_sd(probs, pred, strata)
    rng = np.random.default_rng(12)
    from mhaudit.stats.ppi import macro_f1_gradient

    f = predicted_coordinates(probs, pred)
    mean = f.mean(axis=0)
    grad = macro_f1_gradient(mean[:3], mean[3:], np.bincount(pred, minlength=3) / 1000)
    draws = (rng.random((400, 1000, 1)) > np.cumsum(probs, axis=1)[None]).sum(axis=2)
    resid = np.stack([(label_coordinates(d, pred, 3) - f) @ grad for d in draws])  # draws x items
    for h in range(3):
        assert sd[h] == pytest.approx(np.sqrt(resid[:, strata == h].var(axis=0).mean()), rel=0.05)
