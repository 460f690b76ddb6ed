"""Binary classification statistics against sklearn, statsmodels, explicit resampling and hand counts."""

from __future__ import annotations

import doctest
import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    balanced_accuracy_score,
    confusion_matrix,
    f1_score,
    matthews_corrcoef,
    precision_score,
    recall_score,
    roc_auc_score,
)
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests

from mhaudit.stats import binary, divergence, significance
from mhaudit.stats.binary import (
    binary_scores,
    bootstrap_macro_f1,
    confusion_counts,
    macro_f1_from_counts,
    majority_macro_f1,
    paired_difference,
)
from mhaudit.stats.divergence import degree_of_divergence, regime_permutation
from mhaudit.stats.significance import benjamini_hochberg, mcnemar
from mhaudit.stats.undefined import UndefinedStatisticWarning

TOL = 1e-12


def sk_macro(y, pred) -> float:
    """The reference Macro-F1: sklearn over both labels, undefined F1 = 0."""
    return f1_score(y, pred, average="macro", labels=[0, 1], zero_division=0)


def materialised(y, preds, row) -> np.ndarray:
    """sklearn Macro-F1 of each prediction vector on the resample spelled out by np.repeat."""
    yb = np.repeat(y, row)
    return np.array([sk_macro(yb, np.repeat(p, row)) for p in preds])


def binary_case(n_min=2, n_max=30, k_max=1):
    """(y, preds (k, n)) of small binary arrays."""
    return st.integers(n_min, n_max).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 1), min_size=n, max_size=n),
            st.lists(st.lists(st.integers(0, 1), min_size=n, max_size=n), min_size=1, max_size=k_max),
        )
    )


@pytest.mark.parametrize("module", [binary, divergence, significance])
def test_doctests(module):
    assert doctest.testmod(module).failed == 0


# --- point metrics --------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(binary_case(n_min=1, n_max=25, k_max=1), st.integers(0, 2**31 - 1))
def test_binary_scores_equal_sklearn(case, seed):
    """zero_division=0 reproduces sklearn's zero_division=0; by default each 0/0 is NaN and named."""
    y, (pred,) = np.array(case[0]), np.array(case[1])
    prob = np.random.default_rng(seed).integers(0, 4, size=y.size) / 4  # heavy ties
    both = 0 < y.sum() < y.size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns about undefined metrics and single classes
        zero = binary_scores(y, pred, prob, zero_division=0)
        ref = {
            "macro_f1": sk_macro(y, pred),
            "f1_pos": f1_score(y, pred, pos_label=1, zero_division=0),
            "precision": precision_score(y, pred, zero_division=0),
            "recall": recall_score(y, pred, zero_division=0),
            "accuracy": accuracy_score(y, pred),
            "balanced_accuracy": balanced_accuracy_score(y, pred) if both else math.nan,
            "mcc": matthews_corrcoef(y, pred),
            "pr_auc": average_precision_score(y, prob) if y.any() else math.nan,
            "roc_auc": roc_auc_score(y, prob) if both else math.nan,
        }
        nan_ref = {
            "f1_pos": f1_score(y, pred, zero_division=np.nan),
            "precision": precision_score(y, pred, zero_division=np.nan),
            "recall": recall_score(y, pred, zero_division=np.nan),
        }
    assert zero["n"] == y.size and zero["prevalence"] == pytest.approx(y.mean(), abs=TOL)
    for key, value in ref.items():
        assert (math.isnan(zero[key]) and math.isnan(value)) or abs(zero[key] - value) <= TOL, key
    got = binary_scores(y, pred, prob)
    for key, value in nan_ref.items():
        assert (math.isnan(got[key]) and math.isnan(value)) or abs(got[key] - value) <= TOL, key
    per_class = f1_score(y, pred, average=None, labels=[0, 1], zero_division=np.nan)
    assert (math.isnan(got["macro_f1"]) and np.isnan(per_class).any()) or got["macro_f1"] == pytest.approx(
        per_class.mean(), abs=TOL
    )
    marginals_missing = not both or pred.all() or not pred.any()
    assert math.isnan(got["mcc"]) == marginals_missing
    undefined = [k for k, v in got.items() if isinstance(v, float) and math.isnan(v)]
    assert bool(got["reason"]) == bool(undefined)


def test_binary_scores_without_prob_and_bad_input():
    s = binary_scores([0, 1, 1], [0, 1, 0])
    assert "pr_auc" not in s and "roc_auc" not in s
    with pytest.raises(ValueError, match="binary"):
        binary_scores([0, 2], [0, 1])
    with pytest.raises(ValueError, match="one prediction per instance"):
        binary_scores([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="empty"):
        binary_scores([], [])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(0, 40))
def test_majority_macro_f1_equals_sklearn_on_constant_predictions(pos, neg):
    y = np.r_[np.ones(pos, int), np.zeros(neg, int)]
    majority = int(pos > neg)
    got = majority_macro_f1(y, zero_division=0)
    assert abs(got - sk_macro(y, np.full(y.size, majority))) <= TOL
    assert abs(got - max(pos, neg) / (y.size + max(pos, neg))) <= TOL  # p / (1 + p)
    if neg == 0:  # one class: the other has no F1
        with pytest.warns(UndefinedStatisticWarning):
            assert math.isnan(majority_macro_f1(y))


def test_majority_macro_f1_reproduces_the_paper_reddit_combi_baseline():
    # positive share 0.880 (section 3): the paper reports a majority-class Macro-F1 of 0.468
    assert round(majority_macro_f1(np.r_[np.ones(880, int), np.zeros(120, int)]), 3) == 0.468


@settings(max_examples=80, deadline=None)
@given(binary_case(n_min=1, n_max=20, k_max=4))
def test_confusion_counts_equal_sklearn_and_brute_force(case):
    y, preds = np.array(case[0]), np.array(case[1])
    batch = np.array(confusion_counts(y, preds))  # (4, k): one call for every prediction vector
    for j, pred in enumerate(preds):
        tn, fp, fn, tp = confusion_matrix(y, pred, labels=[0, 1]).ravel()
        brute = [sum((a, b) == cell for a, b in zip(case[0], case[1][j])) for cell in ((1, 1), (0, 1), (1, 0), (0, 0))]
        assert batch[:, j].tolist() == [tp, fp, fn, tn] == brute
        assert [int(v) for v in confusion_counts(y.astype(bool), pred == 1)] == brute  # one vector: four numbers


def test_confusion_counts_batch_over_leading_axes_and_refuse_bad_input():
    rng = np.random.default_rng(0)
    y, preds = rng.integers(0, 2, 50), rng.integers(0, 2, (3, 4, 50))
    tp, fp, fn, tn = confusion_counts(y, preds)
    assert tp.shape == (3, 4) and (tp + fp + fn + tn == 50).all()
    assert [int(v[2, 1]) for v in (tp, fp, fn, tn)] == [int(v) for v in confusion_counts(y, preds[2, 1])]
    assert [int(v) for v in confusion_counts([], [])] == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="0/1"):
        confusion_counts([0, 2], [0, 1])
    with pytest.raises(ValueError, match="0/1"):
        confusion_counts(1, 1)
    with pytest.raises(ValueError, match="last axis"):
        confusion_counts([0, 1], [0, 1, 1])


@settings(max_examples=80, deadline=None)
@given(binary_case(n_min=1, n_max=20, k_max=1))
def test_macro_f1_from_counts_equals_sklearn(case):
    y, (pred,) = np.array(case[0]), np.array(case[1])
    tp, fp = np.sum((y == 1) & (pred == 1)), np.sum((y == 0) & (pred == 1))
    fn, tn = np.sum((y == 1) & (pred == 0)), np.sum((y == 0) & (pred == 0))
    assert abs(macro_f1_from_counts(tp, fp, fn, tn, zero_division=0) - sk_macro(y, pred)) <= TOL


def test_macro_f1_from_counts_broadcasts_and_handles_zero_division():
    out = macro_f1_from_counts(np.array([[3], [0]]), 1, 1, np.array([5, 0, 2]))
    assert out.shape == (2, 3)
    assert out[1, 1] == 0.0  # tp = tn = 0 with one fp and one fn: both F1 are 0, and defined
    # tp = fp = fn = 0: F1(1) undefined, so the mean is; zero_division=0 counts it as 0 (F1(0) = 1)
    with pytest.warns(UndefinedStatisticWarning, match="undefined"):
        assert math.isnan(macro_f1_from_counts(0, 0, 0, 7))
    assert macro_f1_from_counts(0, 0, 0, 7, zero_division=0) == 0.5
    assert macro_f1_from_counts(0, 0, 0, 0, zero_division=0) == 0.0
    assert macro_f1_from_counts(0, 0, 0, 7, zero_division=1) == 1.0
    with pytest.raises(ValueError, match="zero_division"):
        macro_f1_from_counts(0, 0, 0, 7, zero_division=0.5)
    with pytest.raises(ValueError, match="non-negative"):
        macro_f1_from_counts(-1, 0, 0, 1)


# --- bootstrap ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stratified", [False, True])
def test_bootstrap_macro_f1_equals_sklearn_on_its_own_resamples(stratified, monkeypatch):
    monkeypatch.setattr(binary, "_BLOCK_CELLS", 200)  # several blocks of 5 rows for n = 37
    rng = np.random.default_rng(3)
    n = 37
    y = (rng.random(n) < 0.3).astype(int)
    preds = (rng.random((3, n)) < 0.4).astype(int)
    preds[2] = y  # a perfect vector: 1.0 in every resample that keeps both classes
    got = bootstrap_macro_f1(y, preds, n_boot=23, rng=11, stratified=stratified, zero_division=0)
    blocks = list(binary._count_blocks(y, 23, np.random.default_rng(11), stratified))
    assert len(blocks) == 5
    counts = np.vstack([c for _, c in blocks])
    assert (counts.sum(axis=1) == n).all()
    if stratified:  # class sizes kept
        assert (counts[:, y == 1].sum(axis=1) == y.sum()).all()
    expected = np.array([materialised(y, preds, row) for row in counts])
    np.testing.assert_allclose(got, expected, rtol=0, atol=TOL)


def test_bootstrap_macro_f1_shapes_and_pairing():
    y = np.array([0, 1] * 10)
    p = np.array([0, 1, 1, 0] * 5)
    draws = bootstrap_macro_f1(y, np.stack([p, p]), n_boot=50, rng=0)
    assert draws.shape == (50, 2) and np.array_equal(draws[:, 0], draws[:, 1])  # same resamples
    assert bootstrap_macro_f1(y, p, n_boot=4, rng=0).shape == (4, 1)
    np.testing.assert_array_equal(bootstrap_macro_f1(y, p, 30, rng=5), bootstrap_macro_f1(y, p, 30, rng=5))
    with pytest.raises(ValueError, match="shape"):
        bootstrap_macro_f1(y, np.ones((2, 5)), n_boot=3)


def test_paired_difference_matches_its_draws_and_sklearn():
    rng = np.random.default_rng(0)
    n = 300
    y = (rng.random(n) < 0.4).astype(int)
    pred_x = np.where(rng.random(n) < 0.8, y, 1 - y)
    pred_ref = np.where(rng.random(n) < 0.7, y, 1 - y)
    r = paired_difference(y, pred_x, pred_ref, n_boot=400, rng=9)
    assert abs(r["delta"] - (sk_macro(y, pred_x) - sk_macro(y, pred_ref))) <= TOL
    draws = bootstrap_macro_f1(y, np.stack([pred_x, pred_ref]), 400, rng=9)
    d = draws[:, 0] - draws[:, 1]
    assert r["se"] == pytest.approx(np.std(d, ddof=1), abs=TOL)
    assert [r["ci_low"], r["ci_high"]] == pytest.approx(np.percentile(d, [2.5, 97.5]).tolist(), abs=TOL)
    assert r["p_greater"] == pytest.approx((np.sum(d <= 0) + 1) / 401)
    assert r["p_less"] == pytest.approx((np.sum(d >= 0) + 1) / 401)
    assert r["p_two_sided"] == pytest.approx(min(1, 2 * min(r["p_greater"], r["p_less"])))
    assert r["delta"] > 0.05 and r["p_greater"] < 0.01 and r["p_less"] > 0.99


def test_paired_difference_of_identical_predictions_is_exactly_zero():
    y = np.array([0, 1, 1, 0, 1, 0, 0, 1])
    r = paired_difference(y, y[::-1], y[::-1], n_boot=99, rng=1)
    assert r["delta"] == 0 and r["se"] == 0 and r["p_greater"] == 1 and r["p_less"] == 1
    assert r["p_two_sided"] == 1


# --- degree of divergence -------------------------------------------------------------------------------


def simulated_groups(seed=0, sizes=(60, 45, 70, 50), acc_x=(0.85, 0.8, 0.7, 0.7), acc_a=(0.7, 0.7, 0.72, 0.75)):
    rng = np.random.default_rng(seed)
    groups = {}
    for name, n, ax, aa in zip(["h1", "h2", "a1", "a2"], sizes, acc_x, acc_a):
        y = (rng.random(n) < 0.45).astype(int)
        groups[name] = (y, np.where(rng.random(n) < ax, y, 1 - y), np.where(rng.random(n) < aa, y, 1 - y))
    return groups


def test_dod_equals_brute_force_explicit_resampling():
    groups = simulated_groups()
    human, auto, b, seed = ["h1", "h2"], ["a1", "a2"], 30, 17
    r = degree_of_divergence(groups, human, auto, n_boot=b, rng=seed)
    # estimate: the paper's difference in differences with sklearn Macro-F1
    delta = {k: sk_macro(y, px) - sk_macro(y, pa) for k, (y, px, pa) in groups.items()}
    assert abs(r["estimate"] - ((delta["h1"] + delta["h2"]) / 2 - (delta["a1"] + delta["a2"]) / 2)) <= TOL
    table = r["per_dataset"].set_index("dataset")
    assert list(table["side"]) == ["human", "human", "auto", "auto"]
    for k, (y, px, pa) in groups.items():
        assert abs(table.loc[k, "mf1_x"] - sk_macro(y, px)) <= TOL and abs(table.loc[k, "delta"] - delta[k]) <= TOL
        assert table.loc[k, "n"] == y.size
    # draws: data set i resampled from the i-th spawned child; materialise and score with sklearn
    children = np.random.default_rng(seed).spawn(4)
    per_set = {}
    for name, child in zip(human + auto, children):
        y, px, pa = groups[name]
        counts = np.vstack([c for _, c in binary._count_blocks(y, b, child, False)])
        per_set[name] = np.array([np.subtract(*materialised(y, [px, pa], row)) for row in counts])
    brute = (per_set["h1"] + per_set["h2"]) / 2 - (per_set["a1"] + per_set["a2"]) / 2
    np.testing.assert_allclose(r["draws"], brute, rtol=0, atol=TOL)
    assert r["se"] == pytest.approx(np.std(brute, ddof=1), abs=TOL)
    assert r["p"] == pytest.approx((np.sum(brute <= 0) + 1) / (b + 1))


def test_dod_detects_divergence_and_respects_the_alternative():
    groups = simulated_groups(seed=1, sizes=(300, 300, 300, 300))
    g = degree_of_divergence(groups, ["h1", "h2"], ["a1", "a2"], n_boot=500, rng=2)
    less = degree_of_divergence(groups, ["h1", "h2"], ["a1", "a2"], n_boot=500, rng=2, alternative="less")
    assert g["estimate"] > 0.05 and g["ci_low"] > 0 and g["p"] < 0.01 and less["p"] > 0.99
    assert g["z"] == pytest.approx(g["estimate"] / g["se"]) and g["z"] > 2
    assert g["p_two_sided"] == pytest.approx(min(1, 2 * g["p"]))
    swapped = degree_of_divergence(groups, ["a1", "a2"], ["h1", "h2"], n_boot=500, rng=2, alternative="less")
    assert swapped["estimate"] == pytest.approx(-g["estimate"], abs=TOL)
    assert g["draws"].shape == (500,) and g["n_boot"] == 500


def test_dod_rejects_bad_designs():
    groups = simulated_groups()
    with pytest.raises(ValueError, match="auto side is empty"):
        degree_of_divergence(groups, ["h1"], [], n_boot=10)
    with pytest.raises(ValueError, match="both the human and the auto side"):
        degree_of_divergence(groups, ["h1", "a1"], ["a1"], n_boot=10)
    with pytest.raises(ValueError, match="not in groups"):
        degree_of_divergence(groups, ["h1"], ["zz"], n_boot=10)
    one_class = dict(groups, a2=(np.ones(5, int), np.ones(5, int), np.zeros(5, int)))
    with pytest.raises(ValueError, match="'a2' has a single class"):
        degree_of_divergence(one_class, ["h1"], ["a2"], n_boot=10)
    with pytest.raises(ValueError, match="alternative"):
        degree_of_divergence(groups, ["h1"], ["a1"], n_boot=10, alternative="two-sided")
    short = dict(groups, a1=(np.array([0, 1, 1]), np.array([0, 1]), np.array([0, 1, 1])))
    with pytest.raises(ValueError, match="one prediction per instance"):
        degree_of_divergence(short, ["h1"], ["a1"], n_boot=10)


# --- regime permutation ---------------------------------------------------------------------------------

HAND = {"h1": 0.10, "h2": 0.06, "a1": -0.02, "a2": 0.00}


def test_regime_permutation_hand_computed_two_plus_two():
    # The six human sides and their DoD, by hand:
    # {h1,h2} .08-(-.01)=.09  {h1,a1} .04-.03=.01  {h1,a2} .05-.02=.03
    # {h2,a1} .02-.05=-.03    {h2,a2} .03-.04=-.01 {a1,a2} -.01-.08=-.09
    r = regime_permutation(HAND, ["h1", "h2"])
    assert r["observed"] == pytest.approx(0.09) and r["n_assignments"] == 6
    assert sorted(r["assignments"]["dod"].round(10)) == [-0.09, -0.03, -0.01, 0.01, 0.03, 0.09]
    assert r["p"] == pytest.approx(1 / 6) and r["min_p"] == pytest.approx(1 / 6)
    assert "1/6 = 0.1667" in r["note"] and "cannot reach the 5% level" in r["note"]
    assert regime_permutation(HAND, ["h1", "h2"], alternative="less")["p"] == 1.0
    # observed .01: three of six >= .01 (.09, .01, .03); four <= .01 (.01, -.03, -.01, -.09)
    assert regime_permutation(HAND, ["h1", "a1"])["p"] == pytest.approx(3 / 6)
    assert regime_permutation(HAND, ["h1", "a1"], alternative="less")["p"] == pytest.approx(4 / 6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-20, 20), min_size=2, max_size=7), st.data())
def test_regime_permutation_properties(values, data):
    deltas = {f"d{i}": v / 100 for i, v in enumerate(values)}  # coarse values: many exact ties
    names = list(deltas)
    h = data.draw(st.integers(1, len(names) - 1))
    human = names[:h]
    g = regime_permutation(deltas, human)
    less = regime_permutation(deltas, human, alternative="less")
    assert g["n_assignments"] == math.comb(len(names), h) and g["min_p"] == 1 / g["n_assignments"]
    assert g["min_p"] <= g["p"] <= 1 and g["min_p"] <= less["p"] <= 1
    assert g["p"] + less["p"] >= 1 - TOL  # the observed assignment counts on both sides
    # independent count over the integer-scaled deltas (exact, no tolerance needed)
    ints = np.array(values)

    def dod(side):  # scaled by h (n - h) so that it stays an integer
        mask = np.isin(names, side)
        return ints[mask].sum() * (len(names) - h) - ints[~mask].sum() * h

    observed = dod(human)
    stats = [dod([names[i] for i in c]) for c in itertools.combinations(range(len(names)), h)]
    assert g["p"] == pytest.approx(np.mean([s >= observed for s in stats]), abs=TOL)
    assert less["p"] == pytest.approx(np.mean([s <= observed for s in stats]), abs=TOL)


def test_regime_permutation_rejects_bad_sides():
    with pytest.raises(ValueError, match="proper subset"):
        regime_permutation(HAND, list(HAND))
    with pytest.raises(ValueError, match="not in deltas"):
        regime_permutation(HAND, ["zz"])
    with pytest.raises(ValueError, match="string"):
        regime_permutation(HAND, "h1")


# --- McNemar and Benjamini-Hochberg ---------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(binary_case(n_min=1, n_max=40, k_max=2).filter(lambda c: len(c[1]) == 2))
def test_mcnemar_equals_statsmodels(case):
    y, (pa, pb) = np.array(case[0]), np.array(case[1])
    r = mcnemar(y, pa, pb)
    ok_a, ok_b = pa == y, pb == y
    table = [[np.sum(ok_a & ok_b), np.sum(ok_a & ~ok_b)], [np.sum(~ok_a & ok_b), np.sum(~ok_a & ~ok_b)]]
    assert (r["b"], r["c"]) == (table[0][1], table[1][0])
    if r["b"] == r["c"]:  # documented departure: no discordance imbalance -> 0, p = 1 (R's mcnemar.test)
        assert r["statistic"] == 0 and r["p"] == 1
    else:
        ref = sm_mcnemar(table, exact=False, correction=True)
        assert abs(r["statistic"] - ref.statistic) <= TOL and abs(r["p"] - ref.pvalue) <= TOL


def test_mcnemar_hand_counts():
    y = np.ones(30, int)
    pa = np.r_[np.ones(12, int), np.zeros(18, int)]  # a right on 0..11
    pb = np.r_[np.zeros(10, int), np.ones(5, int), np.zeros(15, int)]  # b right on 10..14
    r = mcnemar(y, pa, pb)  # b = 10 (0..9), c = 3 (12..14); (|10-3|-1)^2/13 = 36/13
    assert (r["b"], r["c"]) == (10, 3) and r["statistic"] == pytest.approx(36 / 13)
    none = mcnemar(y, pa, pa)
    assert none["statistic"] == 0 and none["p"] == 1


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.sampled_from([0.0, 0.01, 0.05, 1.0, math.nan]), st.floats(0, 1)), min_size=0, max_size=25))
def test_benjamini_hochberg_equals_statsmodels(pvalues):
    p = np.array(pvalues, dtype=float)
    got = benjamini_hochberg(p)
    assert got.shape == p.shape and np.array_equal(np.isnan(got), np.isnan(p))
    ok = ~np.isnan(p)
    if ok.any():
        ref = multipletests(p[ok], method="fdr_bh")[1]
        np.testing.assert_allclose(got[ok], ref, rtol=0, atol=TOL)


def test_benjamini_hochberg_keeps_shape_and_rejects_out_of_range():
    p = np.array([[0.01, 0.2], [np.nan, 0.03]])
    assert benjamini_hochberg(p).shape == (2, 2)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        benjamini_hochberg([0.5, 1.5])
