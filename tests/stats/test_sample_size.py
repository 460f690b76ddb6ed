"""stats.sample_size: labels needed with the finite-population correction, against brute force and simulation."""

import itertools
import math

import numpy as np
import pytest

from mhaudit.stats.ppi import pool_estimates
from mhaudit.stats.sample_size import labels_for_tolerance, macro_f1_pool_sd, pool_variance, srs_labels_for_tolerance


def _brute_labels(half_width, n, big_n, tol, fpc=True):
    """The smallest m in 1..N whose half-width, c·sqrt(1/m − 1/N) (or c/sqrt(m)), is at most tol."""
    c = half_width / math.sqrt(1 / n - 1 / big_n) if fpc else half_width * math.sqrt(n)
    for m in range(1, big_n + 1):
        if c * math.sqrt(1 / m - 1 / big_n if fpc else 1 / m) <= tol + 1e-12:
            return m
    return big_n


@pytest.mark.parametrize("seed", range(40))
def test_labels_for_tolerance_is_the_brute_force_smallest_n(seed):
    rng = np.random.default_rng(seed)
    big_n = int(rng.integers(20, 3000))
    n = int(rng.integers(2, big_n))
    half_width, tol = float(rng.uniform(0.005, 0.3)), float(rng.choice([0.02, 0.05, 0.1]))
    assert labels_for_tolerance(half_width, n, big_n, tol) == _brute_labels(half_width, n, big_n, tol)
    assert labels_for_tolerance(half_width, n, big_n, tol, fpc=False) == _brute_labels(
        half_width, n, big_n, tol, fpc=False
    )


def test_labels_for_tolerance_edges():
    assert labels_for_tolerance(0.0, 400, 400, 0.05) == 400  # a census
    assert labels_for_tolerance(0.1, 100, 655, 0.05) <= 655 and labels_for_tolerance(5.0, 100, 655, 0.05) == 655
    with pytest.warns(UserWarning, match="half-width"):
        assert math.isnan(labels_for_tolerance(math.nan, 100, 655, 0.05))


def test_pool_variance_is_unbiased_over_every_stratified_sample():
    """Enumerate every stratified sample of a tiny pool (5 and 4 items, 2 labels each): the mean of the estimate
    is the pool variance, exactly."""
    u = np.array([0.3, 1.2, -0.4, 2.0, 0.9, 5.0, 4.1, 3.3, 6.2])
    strata = np.array([0] * 5 + [1] * 4)
    truth = u.var(ddof=1)
    estimates = []
    for a in itertools.combinations(range(5), 2):
        for b in itertools.combinations(range(5, 9), 2):
            rows = list(a + b)
            estimates.append(pool_variance(u[rows], strata[rows], [5, 4]))
    assert np.mean(estimates) == pytest.approx(truth, abs=1e-12)
    with pytest.warns(UserWarning, match="fewer than 2"):
        assert math.isnan(pool_variance(u[[0, 5, 6]], strata[[0, 5, 6]], [5, 4]))


@pytest.mark.parametrize("seed", range(10))
def test_srs_labels_for_tolerance_is_the_brute_force_smallest_n(seed):
    from scipy.stats import t

    rng = np.random.default_rng(seed)
    big_n, sd, tol = int(rng.integers(30, 2000)), float(rng.uniform(0.05, 1.0)), 0.05
    fits = [
        m for m in range(2, big_n + 1) if m == big_n or t.ppf(0.975, m - 1) * sd * math.sqrt(1 / m - 1 / big_n) <= tol
    ]
    assert srs_labels_for_tolerance(sd, big_n, tol) == fits[0]


def _pool(big_n, accuracy, prevalence, seed):
    """A two-class pool: true labels, predictions right with probability `accuracy`, a constant posterior."""
    rng = np.random.default_rng(seed)
    y = (rng.random(big_n) < prevalence).astype(int)
    pred = np.where(rng.random(big_n) < accuracy, y, 1 - y)
    return y, pred, np.c_[0.85 - 0.7 * pred, 0.15 + 0.7 * pred]


def _srs(big_n, n, draws, rng):
    m = np.zeros((draws, big_n))
    for b in range(draws):
        m[b, rng.choice(big_n, n, replace=False)] = 1
    return m


def _truth(y, pred):
    return np.mean([2 * ((y == c) & (pred == c)).sum() / ((y == c).sum() + (pred == c).sum()) for c in (0, 1)])


def test_a_simple_random_sample_interval_with_the_correction_covers_on_a_small_pool():
    """The labels-only SRS baseline (pool_estimates with one stratum, population pool) is the FPC interval: 200 of
    300 items, 2,000 draws. Its SE matches the spread of the estimates and its 95% CI covers about 95%; the same
    interval without the correction (SE / sqrt(1 − n/N)) is 1.7 times as wide and covers nearly always."""
    y, pred, probs = _pool(300, 0.75, 0.35, seed=0)
    est = pool_estimates(
        _srs(300, 200, 2000, np.random.default_rng(1)), y, pred, probs, np.zeros(300, dtype=int), tuning="labels"
    )
    truth = {"accuracy": (y == pred).mean(), "macro_f1": _truth(y, pred)}
    for metric, value in truth.items():
        low, high = est.interval(metric)
        assert 0.92 <= np.mean((low <= value) & (value <= high)) <= 0.975, metric  # counts are discrete
        assert np.mean(est.se[metric]) == pytest.approx(np.std(est.estimate[metric]), rel=0.08), metric
        wide = est.half_width(metric) / math.sqrt(1 - 200 / 300)
        assert np.mean(np.abs(est.estimate[metric] - value) <= wide) >= 0.99, metric


def test_the_gap_between_labels_needed_with_and_without_the_correction():
    """The 330-vs-243 kind of gap: a pool of 655 posts, a simple random sample of 100 labels. Without the
    correction, n (h / 0.05)² asks for about 320 labels; with it, about 240, and 240 labels do give ± 0.05
    (the mean half-width over 400 draws), while the uncorrected count overshoots to about ± 0.04."""
    y, pred, probs = _pool(655, 0.70, 0.30, seed=0)
    one, rng = np.zeros(655, dtype=int), np.random.default_rng(1)

    def mean_half_width(n):
        return float(
            np.mean(pool_estimates(_srs(655, n, 400, rng), y, pred, probs, one, tuning="labels").half_width("macro_f1"))
        )

    h = mean_half_width(100)
    without, with_fpc = math.ceil(100 * (h / 0.05) ** 2), labels_for_tolerance(h, 100, 655, 0.05)
    assert 300 <= without <= 350 and 225 <= with_fpc <= 255
    assert mean_half_width(int(with_fpc)) == pytest.approx(0.05, rel=0.05)
    assert mean_half_width(without) < 0.044


def test_the_srs_projection_from_a_stratified_sample_matches_simple_random_sampling():
    """macro_f1_pool_sd from stratified samples (strata: predicted class) estimates the pool SD of the linearised
    macro-F1; the labels it says a simple random sample needs give ± 0.05 when simple random samples of that size
    are drawn."""
    y, pred, probs = _pool(3000, 0.8, 0.3, seed=2)
    rng = np.random.default_rng(3)
    sds = []
    for _ in range(300):
        labelled = np.zeros(3000, dtype=bool)
        for c, n_c in ((0, 60), (1, 60)):  # unequal sampling fractions: the classes are unequal in size
            labelled[rng.choice(np.flatnonzero(pred == c), n_c, replace=False)] = True
        sds.append(macro_f1_pool_sd(np.where(labelled, y, -1), pred, pred, labelled, 2))
    need = srs_labels_for_tolerance(float(np.mean(np.square(sds))) ** 0.5, 3000, 0.05)
    est = pool_estimates(_srs(3000, int(need), 400, rng), y, pred, probs, np.zeros(3000, dtype=int), tuning="labels")
    assert np.mean(est.half_width("macro_f1")) == pytest.approx(0.05, rel=0.05)
