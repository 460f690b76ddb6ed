"""stats.drift against hand computations and scipy; stats.change's false-alarm rate and delay by simulation."""

import numpy as np
import pytest
from scipy.stats import entropy, ks_2samp

from mhaudit.stats.change import self_starting_cusum
from mhaudit.stats.drift import binned_shares, category_shares, decile_edges, js_distance, ks, psi


def test_psi_and_js_by_hand():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.4, 0.4, 0.2])
    assert psi(p, q) == pytest.approx((0.4 - 0.5) * np.log(0.4 / 0.5) + (0.4 - 0.3) * np.log(0.4 / 0.3))
    m = (p + q) / 2
    assert js_distance(p, q) == pytest.approx(np.sqrt((entropy(p, m, base=2) + entropy(q, m, base=2)) / 2))
    assert psi(p, p) == 0 and js_distance(p, p) == 0
    assert np.isfinite(psi(np.array([1.0, 0.0]), np.array([0.0, 1.0])))  # empty bins are floored, not infinite


def test_decile_bins_hold_a_tenth_of_the_reference_each():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=10_000)
    shares = binned_shares(ref, decile_edges(ref))
    assert shares.size == 10 and np.allclose(shares, 0.1, atol=1e-3)
    assert psi(shares, binned_shares(rng.normal(size=5000), decile_edges(ref))) < 0.01
    assert psi(shares, binned_shares(rng.normal(0.5, 1, size=5000), decile_edges(ref))) > 0.2


def test_ks_is_scipys():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=300), rng.normal(0.2, size=200)
    assert ks(a, b) == (pytest.approx(ks_2samp(a, b).statistic), pytest.approx(ks_2samp(a, b).pvalue))


def test_category_shares_put_the_rest_in_other():
    assert category_shares(["en", "en", "ja", "de"], ["en", "ja", "other"]).tolist() == [0.5, 0.25, 0.25]


def test_cusum_false_alarms_under_stationarity():
    """2,000 stationary windows of 1,000 posts (p = 0.2): at most 1 false alarm per 100 windows (expected ~0.4)."""
    rng = np.random.default_rng(2)
    n = np.full(2000, 1000)
    result = self_starting_cusum(rng.binomial(n, 0.2), n)
    assert result.alarm.sum() <= 20


def test_cusum_finds_a_doubled_prevalence_in_its_window():
    rng = np.random.default_rng(3)
    n = np.full(60, 1000)
    p = np.where(np.arange(60) < 40, 0.1, 0.2)
    result = self_starting_cusum(rng.binomial(n, p), n)
    assert result.alarm[40] and not result.alarm[:40].any()


def test_cusum_finds_a_small_shift_within_some_windows():
    rng = np.random.default_rng(4)
    n = np.full(80, 1000)
    p = np.where(np.arange(80) < 40, 0.20, 0.225)  # about 2 standard errors per window
    result = self_starting_cusum(rng.binomial(n, p), n)
    first = np.flatnonzero(result.alarm)
    assert first.size and 40 <= first[0] <= 50


def test_cusum_of_means_equals_the_binomial_case_for_0_1_values_and_takes_the_variance_of_others():
    rng = np.random.default_rng(5)
    n = np.full(50, 400)
    hits = rng.binomial(n, 0.3)
    a, b = self_starting_cusum(hits, n), self_starting_cusum(hits, n, hits)
    np.testing.assert_allclose(a.z, b.z, equal_nan=True)
    values = rng.beta(2, 5, size=(50, 400))  # stationary means of values in (0, 1)
    result = self_starting_cusum(values.sum(axis=1), n, (values**2).sum(axis=1))
    assert np.nanstd(result.z) == pytest.approx(1, abs=0.3) and not result.alarm.any()
