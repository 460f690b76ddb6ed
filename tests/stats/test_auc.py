"""The fast DeLong against the O(n^2) definition (DeLong 1988) and sklearn; known answers; NaN rules."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2, norm
from sklearn.metrics import roc_auc_score

from mhaudit.stats import auc
from mhaudit.stats import delong as fast_delong
from mhaudit.stats.auc import auc_ci, delong, macro_auc, paired_delong, per_class_auc
from mhaudit.stats.undefined import UndefinedStatisticWarning

TOL = 1e-12


# --- brute force: placement values / structural components straight from DeLong et al. (1988) ---


def psi(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kernel matrix: 1 when the positive outscores the negative, 1/2 on a tie."""
    return (x[:, None] > y[None, :]) + 0.5 * (x[:, None] == y[None, :])


def brute_components(y, score):
    y = np.asarray(y, dtype=bool)
    k = psi(score[y], score[~y])
    return k.mean(axis=1), k.mean(axis=0)  # V10 (per positive), V01 (per negative)


def brute_delong(y, score):
    v10, v01 = brute_components(y, score)
    m, n = v10.size, v01.size
    var = v10.var(ddof=1) / m + v01.var(ddof=1) / n if m > 1 and n > 1 else math.nan
    return v10.mean(), var


def brute_paired(y, a, b):
    a10, a01 = brute_components(y, a)
    b10, b01 = brute_components(y, b)
    m, n = a10.size, a01.size
    if m < 2 or n < 2:
        return a10.mean(), b10.mean(), math.nan, math.nan, math.nan
    s10, s01 = np.cov(np.vstack([a10, b10])), np.cov(np.vstack([a01, b01]))
    c = np.array([1.0, -1.0])
    var = c @ s10 @ c / m + c @ s01 @ c / n
    diff = a10.mean() - b10.mean()
    z = diff / math.sqrt(var) if var > 1e-20 else math.nan
    return a10.mean(), b10.mean(), var, z, chi2.sf(z * z, df=1)  # z^2 ~ chi2(1): an independent p


def same(a: float, b: float, tol: float = TOL) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


@st.composite
def binary_problems(draw, n_scores: int = 1, max_n: int = 30):
    """Small labelled samples with both classes; half of them with heavily tied scores."""
    n = draw(st.integers(2, max_n))
    y = draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(lambda v: any(v) and not all(v)))
    element = st.sampled_from([st.integers(0, 4).map(float), st.floats(-1e3, 1e3, allow_nan=False)])
    scores = [np.array(draw(st.lists(draw(element), min_size=n, max_size=n))) for _ in range(n_scores)]
    return np.array(y), *scores


@settings(max_examples=200, deadline=None)
@given(binary_problems())
def test_fast_delong_equals_brute_force_and_sklearn(problem):
    y, score = problem
    fast_auc, fast_var = delong(y, score)
    slow_auc, slow_var = brute_delong(y, score)
    assert abs(fast_auc - slow_auc) <= TOL
    assert same(fast_var, slow_var)
    assert abs(fast_auc - roc_auc_score(y, score)) <= TOL


@settings(max_examples=200, deadline=None)
@given(binary_problems(n_scores=2))
def test_paired_delong_equals_brute_force(problem):
    y, a, b = problem
    r = paired_delong(y, a, b)
    auc_a, auc_b, var, z, p = brute_paired(y, a, b)
    assert abs(r["auc_a"] - auc_a) <= TOL and abs(r["auc_b"] - auc_b) <= TOL
    assert abs(r["diff"] - (auc_a - auc_b)) <= TOL
    if y.sum() < 2 or (~y).sum() < 2:
        assert math.isnan(r["se"]) and math.isnan(r["p"]) and "single example" in r["reason"]
    elif r["se"] == 0:  # exact zero in the fast version; the brute force is zero to rounding
        assert abs(var) < 1e-20 and math.isnan(r["z"]) and math.isnan(r["p"]) and "zero variance" in r["reason"]
    else:
        assert abs(r["se"] ** 2 - var) <= TOL
        assert r["z"] == pytest.approx(z, rel=1e-9)
        assert r["p"] == pytest.approx(p, rel=1e-9, abs=1e-15)
        assert r["reason"] == ""


def test_moderate_sample_with_ties_equals_brute_force():
    rng = np.random.default_rng(11)
    y = rng.random(600) < 0.3
    score = np.round(rng.normal(size=600) + y, 1)  # ~40 distinct values: many ties
    assert np.allclose(delong(y, score), brute_delong(y, score), rtol=0, atol=TOL)
    other = np.round(score + rng.normal(scale=0.7, size=600), 1)
    r, b = paired_delong(y, score, other), brute_paired(y, score, other)
    assert r["se"] ** 2 == pytest.approx(b[2], abs=TOL)
    assert r["p"] == pytest.approx(b[4], rel=1e-9)


def test_known_answers():
    assert delong([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == (0.75, 0.125)  # worked by hand in the docstring
    assert delong([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4]) == (1.0, 0.0)  # perfectly separated
    assert delong([1, 1, 0, 0], [0.1, 0.2, 0.3, 0.4]) == (0.0, 0.0)  # perfectly reversed
    assert delong([0, 1, 0, 1, 1], [3.0] * 5) == (0.5, 0.0)  # all tied: every placement is 1/2
    # One tie between classes: placements V10 = (3/4, 1, 1), V01 = (1, 5/6), so
    # AUC = 11/12 and Var = S10/3 + S01/2 = (1/48)/3 + (1/72)/2 = 1/144 + 1/144 = 1/72.
    a, v = delong([0, 0, 1, 1, 1], [1.0, 2.0, 2.0, 3.0, 4.0])
    assert a == pytest.approx(11 / 12, abs=TOL) and v == pytest.approx(1 / 72, abs=TOL)
    r = auc_ci([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4])
    assert (r["auc"], r["se"], r["ci_low"], r["ci_high"], r["reason"]) == (1.0, 0.0, 1.0, 1.0, "")


def test_ci_is_normal_and_clipped():
    rng = np.random.default_rng(3)
    y = rng.random(200) < 0.4
    score = rng.normal(size=200) + 1.5 * y
    r = auc_ci(y, score, alpha=0.1)
    a, v = delong(y, score)
    assert r["auc"] == a and r["se"] == math.sqrt(v)
    assert r["ci_low"] == pytest.approx(a - norm.ppf(0.95) * math.sqrt(v), abs=TOL)
    assert r["ci_high"] == pytest.approx(min(1.0, a + norm.ppf(0.95) * math.sqrt(v)), abs=TOL)
    assert (r["n_pos"], r["n_neg"]) == (int(y.sum()), int((~y).sum()))
    high = auc_ci([0, 0, 0, 1, 1, 1], [1, 2, 5, 3, 6, 7])
    assert high["ci_high"] == 1.0 and high["auc"] + 1.96 * high["se"] > 1  # clipped


def test_undefined_auc_is_nan_with_reason_never_half():
    with pytest.warns(UndefinedStatisticWarning, match="no negatives"):
        assert all(math.isnan(v) for v in delong([1, 1, 1], [0.1, 0.2, 0.3]))
    with pytest.warns(UndefinedStatisticWarning, match="no positives"):
        assert all(math.isnan(v) for v in delong([False, False], [0.1, 0.2]))
    for y, reason in (([1, 1, 1], "no negatives"), ([0, 0, 0], "no positives"), ([], "no positives")):
        r = auc_ci(y, np.arange(len(y), dtype=float))
        assert r["reason"] == reason
        assert all(math.isnan(r[k]) for k in ("auc", "se", "ci_low", "ci_high"))
        p = paired_delong(y, np.arange(len(y)), np.arange(len(y)))
        assert p["reason"] == reason and all(math.isnan(p[k]) for k in ("auc_a", "auc_b", "diff", "se", "z", "p"))
    one = auc_ci([0, 0, 1], [0.1, 0.5, 0.3])  # AUC defined, its variance is not (S10 needs two positives)
    assert one["auc"] == 0.5 and math.isnan(one["se"]) and math.isnan(one["ci_low"])
    assert one["reason"] == "one positive: no variance estimate"


def test_identical_scores_have_zero_variance_and_no_test():
    rng = np.random.default_rng(5)
    y, s = rng.random(50) < 0.5, rng.normal(size=50)
    r = paired_delong(y, s, 3 * s + 1)  # same ordering
    assert r["diff"] == 0 and r["se"] == 0 and math.isnan(r["z"]) and math.isnan(r["p"])
    assert "zero variance" in r["reason"]


def test_paired_is_antisymmetric():
    rng = np.random.default_rng(8)
    y = rng.random(80) < 0.5
    a, b = rng.normal(size=80) + y, rng.normal(size=80) + 0.5 * y
    ab, ba = paired_delong(y, a, b), paired_delong(y, b, a)
    assert ab["z"] == pytest.approx(-ba["z"], abs=TOL) and ab["p"] == pytest.approx(ba["p"], abs=TOL)
    assert 0 < ab["p"] < 1


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="binary"):
        delong([0, 1, 2], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="non-finite"):
        auc_ci([0, 1], [0.1, np.nan])
    with pytest.raises(ValueError, match="one value per example"):
        auc_ci([0, 1, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="alpha"):
        auc_ci([0, 1], [0.1, 0.2], alpha=1.5)
    with pytest.raises(ValueError, match=r"lie in \[0, 3\)"):
        macro_auc([0, 3], np.zeros((2, 3)), 3)
    with pytest.raises(ValueError, match="shape"):
        per_class_auc([0, 1], np.zeros((2, 2)), 3)


def dirichlet_problem(seed: int, n: int, k: int, ties: bool):
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])  # every class present
    logits = rng.integers(0, 3, (n, k)).astype(float) if ties else rng.normal(size=(n, k))
    logits[np.arange(n), y] += rng.random(n)
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return y, probs


@pytest.mark.parametrize("seed", range(12))
def test_macro_auc_equals_sklearn_ovr_macro(seed):
    k = 2 + seed % 4
    y, probs = dirichlet_problem(seed, n=20 + 17 * seed, k=k, ties=seed % 2 == 0)
    expected = roc_auc_score(y, probs[:, 1] if k == 2 else probs, multi_class="ovr", average="macro")
    if k == 2:  # sklearn's binary AUC; the one-vs-rest mean of the two columns is the same number
        expected = (roc_auc_score(y == 0, probs[:, 0]) + roc_auc_score(y == 1, probs[:, 1])) / 2
    assert macro_auc(y, probs, k) == pytest.approx(expected, abs=TOL)


def test_macro_auc_is_undefined_with_an_absent_class():
    y, probs = dirichlet_problem(1, n=60, k=4, ties=False)
    assert macro_auc(y, probs, 4) == pytest.approx(roc_auc_score(y, probs, multi_class="ovr"), abs=TOL)
    y = np.where(y == 3, 0, y)  # class 3 never occurs: not the mean of the other three
    with pytest.warns(UndefinedStatisticWarning, match=r"class\(es\) \[3\]"):
        assert math.isnan(macro_auc(y, probs, 4))
    with pytest.warns(UndefinedStatisticWarning):
        assert math.isnan(macro_auc(np.zeros(5, dtype=int), probs[:5], 4))
    with pytest.warns(UndefinedStatisticWarning):
        assert math.isnan(macro_auc(np.array([], dtype=int), np.zeros((0, 4)), 4))


def test_per_class_auc_rows():
    y, probs = dirichlet_problem(2, n=120, k=3, ties=True)
    y = np.where(y == 2, 1, y)  # class 2 absent
    rows = per_class_auc(y, probs, 3, alpha=0.1)
    assert [r["class_index"] for r in rows] == [0, 1, 2]
    for k in (0, 1):
        assert rows[k]["auc"] == pytest.approx(roc_auc_score(y == k, probs[:, k]), abs=TOL)
        assert {key: v for key, v in rows[k].items() if key != "class_index"} == auc_ci(y == k, probs[:, k], 0.1)
    assert rows[2]["reason"] == "no positives" and math.isnan(rows[2]["auc"])
    assert (rows[2]["n_pos"], rows[2]["n_neg"]) == (0, 120)


def test_delong_ci_covers_the_truth():
    """Binormal scores with separation d: true AUC = Phi(d / sqrt 2); 95% CIs should cover ~95%."""
    rng = np.random.default_rng(2024)
    d, reps, m, n = 1.0, 400, 60, 80
    truth = norm.cdf(d / math.sqrt(2))
    y = np.r_[np.ones(m, bool), np.zeros(n, bool)]
    hits = 0
    for _ in range(reps):
        score = rng.normal(size=m + n) + d * y
        r = auc_ci(y, score)
        hits += r["ci_low"] <= truth <= r["ci_high"]
    assert 0.92 <= hits / reps <= 0.98


def test_fast_midranks_match_scipy():
    from scipy.stats import rankdata

    x = np.random.default_rng(0).integers(0, 20, 500).astype(float)
    assert np.array_equal(fast_delong._midranks(x), rankdata(x, method="average"))


@pytest.mark.parametrize("module", [fast_delong, auc])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
