"""The macro-AUC's DeLong covariance against an O(n^2) placement computation, DeLong's binary variance,
the label-stratified bootstrap it replaces at large n (audits/cpfe), and its NaN rules."""

from __future__ import annotations

import doctest
import math

import numpy as np

from mhaudit.stats import macro_delong
from mhaudit.stats.auc import delong, macro_auc
from mhaudit.stats.bootstrap import bootstrap_macro_auc, resample_counts
from mhaudit.stats.macro_delong import macro_auc_delong, paired_macro_auc_delong


def data(n: int, k: int = 4, seed: int = 0, rounding: int | None = None):
    """SYNTHETIC: labels with unequal priors, logits shifted toward the true class (rounded to force ties)."""
    rng = np.random.default_rng(seed)
    y = rng.choice(k, size=n, p=np.linspace(1, 2, k) / np.linspace(1, 2, k).sum())
    logits = rng.normal(size=(n, k)) + 1.2 * np.eye(k)[y]
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return y, (probs.round(rounding) if rounding else probs)


def brute_covariance(y: np.ndarray, probs: np.ndarray, k: int) -> np.ndarray:
    """Per class, every positive against every negative (DeLong 1988's placement values as shares); each row's
    term of AUC_c is its placement over its own class's size; the covariance sums n_l x the within-label sample
    covariance, row by row in Python loops (no shared code with the module)."""
    n = y.size
    phi = np.zeros((n, k))
    for c in range(k):
        pos, neg = np.flatnonzero(y == c), np.flatnonzero(y != c)
        for i in pos:
            phi[i, c] = (
                sum(1.0 if probs[i, c] > probs[j, c] else 0.5 if probs[i, c] == probs[j, c] else 0.0 for j in neg)
                / neg.size
                / pos.size
            )
        for j in neg:
            phi[j, c] = (
                sum(1.0 if probs[i, c] > probs[j, c] else 0.5 if probs[i, c] == probs[j, c] else 0.0 for i in pos)
                / pos.size
                / neg.size
            )
    cov = np.zeros((k, k))
    for label in range(k):
        rows = phi[y == label]
        size = rows.shape[0]
        for c in range(k):
            for d in range(k):
                a, b = rows[:, c], rows[:, d]
                cov[c, d] += size * sum((a - a.mean()) * (b - b.mean())) / (size - 1)
    return cov


def test_covariance_equals_the_quadratic_placement_computation_with_ties():
    y, probs = data(90, rounding=1)  # rounded to one decimal: many ties within and across classes
    got = macro_auc_delong(y, probs, 4)
    want = brute_covariance(y, probs, 4)
    np.testing.assert_allclose(got["cov"], want, rtol=1e-12, atol=1e-15)
    assert got["se"] == math.sqrt(got["cov"].sum()) / 4
    assert abs(got["se"] - math.sqrt(want.sum()) / 4) < 1e-13
    assert got["macro_auc"] == macro_auc(y, probs, 4)


def test_two_classes_give_delongs_binary_variance():
    y, probs = data(300, k=2, seed=3, rounding=2)
    got = macro_auc_delong(y, probs, 2)
    for c in range(2):
        auc, var = delong(y == c, probs[:, c])
        assert abs(got["aucs"][c] - auc) < 1e-15
        assert abs(got["cov"][c, c] - var) < 1e-15


def test_se_agrees_with_the_label_stratified_bootstrap():
    """The estimate it replaces in the audit: B = 2,000 stratified resamples, whose SE has a Monte Carlo error
    of about 1/sqrt(2 B) = 1.6%; seen: ratio 1.012, paired 1.032 (n = 4,000)."""
    y, probs = data(4000, seed=1)
    boot = bootstrap_macro_auc(y, probs, 4, resample_counts(y, 2000, rng=2))
    ratio = macro_auc_delong(y, probs, 4)["se"] / np.std(boot, ddof=1)
    assert 0.95 < ratio < 1.05, ratio
    # two models on the same rows: the paired SE against the paired bootstrap (the same resamples for both)
    _, other = data(4000, seed=5)
    other = 0.5 * other + 0.5 * probs
    counts = resample_counts(y, 2000, rng=4)
    diff = bootstrap_macro_auc(y, probs, 4, counts) - bootstrap_macro_auc(y, other, 4, counts)
    paired = paired_macro_auc_delong(y, probs, other, 4)
    assert 0.95 < paired["se"] / np.std(diff, ddof=1) < 1.05
    assert paired["diff"] == macro_auc(y, probs, 4) - macro_auc(y, other, 4)


def test_same_orderings_have_exactly_zero_paired_variance():
    y, probs = data(500, seed=2)
    assert paired_macro_auc_delong(y, probs, probs.copy(), 4)["se"] == 0.0
    assert paired_macro_auc_delong(y, probs, 3 * probs, 4)["se"] == 0.0  # a monotone map of each column


def test_undefined_cases_are_nan_with_the_reason():
    y, probs = data(50, k=3, seed=4)
    y[y == 2] = 1  # class 2 has no positives
    r = macro_auc_delong(y, probs, 3)
    assert math.isnan(r["macro_auc"]) and math.isnan(r["se"]) and "[2]" in r["reason"]
    assert "[2]" in paired_macro_auc_delong(y, probs, probs, 3)["reason"]
    y, probs = data(50, k=3, seed=4)
    y[y == 2] = 1
    y[0] = 2  # one row of label 2: AUC defined, its variance not
    r = macro_auc_delong(y, probs, 3)
    assert math.isfinite(r["macro_auc"]) and math.isnan(r["se"]) and "single row" in r["reason"]


def test_docstring_examples():
    assert doctest.testmod(macro_delong).failed == 0
