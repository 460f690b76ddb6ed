"""Agreement statistics against independent references: sklearn (kappa, precision/recall/F1), the
`krippendorff` package and a brute-force pair count (alpha), explicit item resamples (bootstrap), and a
simulation for CI coverage."""

import doctest
import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score, f1_score, precision_score, recall_score

from mhaudit.stats import agreement, weak_metrics
from mhaudit.stats.agreement import (
    bootstrap_kappa,
    cohen_kappa,
    confusion_matrix,
    kappa_from_confusion,
    kappa_reason,
    krippendorff_alpha,
    observed_agreement,
)
from mhaudit.stats.bootstrap import resample_counts
from mhaudit.stats.weak_metrics import binary_metrics, binary_reasons, weak_vs_reference

krippendorff = pytest.importorskip(
    "krippendorff", reason="the krippendorff package (dev extra) is the reference for alpha"
)


def test_doctests():
    assert doctest.testmod(agreement).failed == 0
    assert doctest.testmod(weak_metrics).failed == 0


def sk_kappa(a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cohen_kappa_score(a, b)


pairs = st.integers(1, 60).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 3), min_size=n, max_size=n), st.lists(st.integers(0, 3), min_size=n, max_size=n)
    )
)


@settings(max_examples=300, deadline=None)
@given(pairs)
def test_kappa_matches_sklearn_k_class(ab):
    a, b = ab
    ours, ref = cohen_kappa(a, b), sk_kappa(a, b)
    if np.isnan(ref):
        assert np.isnan(ours)
        assert kappa_reason(confusion_matrix(a, b)[0]) is not None
    else:
        assert ours == pytest.approx(ref, abs=1e-12)
        assert -1 <= ours <= 1
    assert cohen_kappa(b, a) == pytest.approx(ours, nan_ok=True)  # symmetric
    assert observed_agreement(a, b) == pytest.approx(np.mean(np.array(a) == np.array(b)))


def test_kappa_binary_and_string_labels():
    a = ["yes", "yes", "no", "no", "yes", "no", "no", "no"]
    b = ["yes", "no", "no", "no", "yes", "yes", "no", "no"]
    assert cohen_kappa(a, b) == pytest.approx(sk_kappa(a, b))
    table, labels = confusion_matrix(a, b)
    assert labels == ["no", "yes"] and table.tolist() == [[4, 1], [1, 2]]
    # A fixed label order with an unused class changes nothing.
    assert cohen_kappa(a, b, labels=["no", "yes", "maybe"]) == pytest.approx(cohen_kappa(a, b))


def test_kappa_undefined_cases_are_nan_with_reason():
    assert np.isnan(cohen_kappa([0, 0, 0], [0, 0, 0]))
    table, labels = confusion_matrix([0, 0, 0], [0, 0, 0], labels=[0, 1])
    assert "chance agreement is 1" in kappa_reason(table, labels) and "0" in kappa_reason(table, labels)
    assert np.isnan(cohen_kappa([], []))
    assert kappa_reason(np.zeros((2, 2), dtype=int)) == "undefined: no items labelled by both"
    # One labeler constant, the other not: defined (kappa = 0), as in sklearn.
    assert cohen_kappa([0, 0, 0, 0], [0, 1, 0, 1]) == pytest.approx(sk_kappa([0, 0, 0, 0], [0, 1, 0, 1])) == 0
    r = bootstrap_kappa([1, 1, 1], [1, 1, 1], n_boot=50, rng=0)
    assert np.isnan(r["estimate"]) and r["n_failed"] == 50 and np.isnan(r["ci_low"]) and r["reason"]


def test_bad_inputs():
    with pytest.raises(ValueError, match="same items"):
        confusion_matrix([0, 1], [0])
    with pytest.raises(ValueError, match="missing"):
        confusion_matrix([0, None], [0, 1])
    with pytest.raises(ValueError, match="not one of the labels"):
        confusion_matrix([0, 2], [0, 1], labels=[0, 1])
    with pytest.raises(ValueError, match="non-negative"):
        kappa_from_confusion([[1, -1], [0, 1]])
    with pytest.raises(ValueError, match="0 or 1"):
        weak_vs_reference([0, 2], [0, 1])


def test_kappa_from_confusion_is_exact_on_explicit_resamples():
    """The table of an explicit item resample gives sklearn's kappa on the resampled arrays."""
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, 80)
    b = np.where(rng.random(80) < 0.7, a, rng.integers(0, 3, 80))
    counts = resample_counts(np.zeros(80), 200, rng, stratified=False)
    k = 3
    onehot = np.zeros((80, k * k), dtype=np.int64)
    onehot[np.arange(80), a * k + b] = 1
    tables = (counts @ onehot).reshape(-1, k, k)
    ours = kappa_from_confusion(tables)
    for row, value in zip(counts[:20], ours[:20]):
        ra, rb = np.repeat(a, row), np.repeat(b, row)
        assert value == pytest.approx(sk_kappa(ra, rb), abs=1e-12)


def test_multinomial_tables_match_the_item_bootstrap_in_distribution():
    """Drawing the confusion table as Multinomial(n, cell shares) is the item bootstrap: same quantiles."""
    rng = np.random.default_rng(11)
    a = rng.integers(0, 2, 120)
    b = np.where(rng.random(120) < 0.8, a, 1 - a)
    fast = agreement.draw_tables(confusion_matrix(a, b, [0, 1])[0], 20_000, np.random.default_rng(1))
    counts = resample_counts(np.zeros(120), 20_000, np.random.default_rng(2), stratified=False)
    onehot = np.zeros((120, 4), dtype=np.int64)
    onehot[np.arange(120), a * 2 + b] = 1
    slow = (counts @ onehot).reshape(-1, 2, 2)
    kf, ks = kappa_from_confusion(fast), kappa_from_confusion(slow)
    assert np.quantile(kf, [0.025, 0.5, 0.975]) == pytest.approx(np.quantile(ks, [0.025, 0.5, 0.975]), abs=0.012)
    assert kf.std() == pytest.approx(ks.std(), rel=0.03)


def test_bootstrap_kappa_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 200)
    b = np.where(rng.random(200) < 0.85, a, 1 - a)
    r1, r2 = bootstrap_kappa(a, b, n_boot=1000, rng=5), bootstrap_kappa(a, b, n_boot=1000, rng=5)
    assert r1 == r2
    assert r1["estimate"] == pytest.approx(sk_kappa(a, b))
    assert r1["ci_low"] < r1["estimate"] < r1["ci_high"]
    assert r1["n"] == 200 and r1["n_boot"] == 1000 and r1["n_failed"] == 0 and r1["reason"] is None
    p_o, p_e = r1["observed_agreement"], r1["expected_agreement"]
    assert (p_o - p_e) / (1 - p_e) == pytest.approx(r1["estimate"])
    assert bootstrap_kappa(a, b, n_boot=1000, rng=6)["ci_low"] != r1["ci_low"]


def test_kappa_ci_coverage_by_simulation():
    """95% percentile CIs cover the population kappa in about 95% of simulated studies."""
    cells = np.array([0.55, 0.08, 0.07, 0.30])  # tn, fp, fn, tp of a population
    table = cells.reshape(2, 2)
    r, c = table.sum(axis=1), table.sum(axis=0)
    p_e = (r * c).sum()
    truth = (np.trace(table) - p_e) / (1 - p_e)
    rng = np.random.default_rng(2024)
    hits, studies = 0, 400
    for _ in range(studies):
        study = rng.multinomial(150, cells)
        a = np.repeat([0, 0, 1, 1], study)
        b = np.repeat([0, 1, 0, 1], study)
        res = bootstrap_kappa(a, b, n_boot=1000, rng=rng)
        hits += res["ci_low"] <= truth <= res["ci_high"]
    assert 0.91 <= hits / studies <= 0.98


# --------------------------------------------------------------------------------- Krippendorff
def brute_alpha(data):
    """Krippendorff's nominal alpha by counting ordered pairs of values within each item."""
    data = np.asarray(data, dtype=object)
    values = sorted({v for v in data.ravel() if v is not None and v == v})
    o = {(c, k): 0.0 for c in values for k in values}
    for item in data.T:
        vals = [v for v in item if v is not None and v == v]
        m = len(vals)
        if m < 2:
            continue
        for i, j in itertools.permutations(range(m), 2):
            o[(vals[i], vals[j])] += 1 / (m - 1)
    n_c = {c: sum(o[(c, k)] for k in values) for c in values}
    n = sum(n_c.values())
    d_o = sum(o[(c, k)] for c in values for k in values if c != k)
    d_e = sum(n_c[c] * n_c[k] for c in values for k in values if c != k)
    return 1 - (n - 1) * d_o / d_e if d_e else float("nan")


reliability = st.tuples(st.integers(2, 5), st.integers(2, 25)).flatmap(
    lambda shape: st.lists(
        st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=shape[1], max_size=shape[1]),
        min_size=shape[0],
        max_size=shape[0],
    )
)


@settings(max_examples=200, deadline=None)
@given(reliability)
def test_alpha_matches_krippendorff_package_and_brute_force(data):
    ours = krippendorff_alpha(data)
    brute = brute_alpha(data)
    floats = np.array([[np.nan if v is None else v for v in row] for row in data], dtype=float)
    values = set(floats[~np.isnan(floats)].tolist())
    pairable = (~np.isnan(floats)).sum(axis=0) >= 2
    if np.isnan(brute):
        assert np.isnan(ours["estimate"]) and ours["reason"]
        return
    assert ours["estimate"] == pytest.approx(brute, abs=1e-10)
    assert ours["reason"] is None and ours["n_items"] == int(pairable.sum())
    if len(values) >= 2:
        ref = krippendorff.alpha(reliability_data=floats, level_of_measurement="nominal")
        assert ours["estimate"] == pytest.approx(ref, abs=1e-9)


def test_alpha_undefined_and_bootstrap():
    one_value = [[1, 1, None], [1, 1, 1]]
    r = krippendorff_alpha(one_value)
    assert np.isnan(r["estimate"]) and "no variation" in r["reason"]
    r = krippendorff_alpha([[1, None], [None, 0]])
    assert np.isnan(r["estimate"]) and "no item has values from two coders" in r["reason"]
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 2, 150)
    data = np.array([np.where(rng.random(150) < 0.85, truth, 1 - truth) for _ in range(3)], dtype=float)
    data[0, :20] = np.nan
    res = krippendorff_alpha(data, n_boot=800, rng=1)
    assert res["estimate"] == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    assert res["ci_low"] < res["estimate"] < res["ci_high"] and res["n_boot"] == 800 and res["n_coders"] == 3
    assert res == krippendorff_alpha(data, n_boot=800, rng=1)


# --------------------------------------------------------------------------- weak vs reference
binary_pairs = st.integers(1, 80).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 1), min_size=n, max_size=n), st.lists(st.integers(0, 1), min_size=n, max_size=n)
    )
)


@settings(max_examples=150, deadline=None)
@given(binary_pairs)
def test_binary_metrics_match_sklearn(pair):
    ref, weak = (np.array(v) for v in pair)
    tp, fp = int(((ref == 1) & (weak == 1)).sum()), int(((ref == 0) & (weak == 1)).sum())
    fn, tn = int(((ref == 1) & (weak == 0)).sum()), int(((ref == 0) & (weak == 0)).sum())
    m, reasons = binary_metrics(tp, fp, fn, tn), binary_reasons(tp, fp, fn, tn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = {
            "precision": precision_score(ref, weak, zero_division=np.nan),
            "recall": recall_score(ref, weak, zero_division=np.nan),
            "f1": f1_score(ref, weak, zero_division=np.nan),
            "f1_negative": f1_score(ref, weak, pos_label=0, zero_division=np.nan),
            "kappa": sk_kappa(ref, weak),
            "observed_agreement": np.mean(ref == weak),
        }
    for key, value in expected.items():
        if np.isnan(value):
            assert np.isnan(m[key]) and reasons[key], key
        else:
            assert m[key] == pytest.approx(value, abs=1e-12), key
            assert reasons[key] is None, key
    if reasons["macro_f1"] is None:
        assert m["macro_f1"] == pytest.approx(f1_score(ref, weak, average="macro", labels=[0, 1]))
    assert m["weak_positive_rate"] == pytest.approx(weak.mean())
    assert m["reference_positive_rate"] == pytest.approx(ref.mean())


def test_weak_vs_reference_table_and_ci():
    rng = np.random.default_rng(8)
    ref = rng.integers(0, 2, 300)
    weak = np.where(rng.random(300) < 0.8, ref, 1 - ref)
    metrics, table = weak_vs_reference(ref, weak, n_boot=1000, rng=0)
    assert table.tolist() == confusion_matrix(ref, weak, [0, 1])[0].tolist()
    m = metrics.set_index("metric")
    assert list(m.index) == list(weak_metrics.BINARY_METRICS)
    assert (m["ci_low"] <= m["estimate"]).all() and (m["estimate"] <= m["ci_high"]).all()
    assert m.loc["kappa", "estimate"] == pytest.approx(sk_kappa(ref, weak))
    assert (m["n"] == 300).all() and (m["n_boot"] == 1000).all()


def test_weighted_estimates_recover_the_pool():
    """A stratified sample with exactly the pool's composition per stratum: weighted cells = the pool's cells."""
    # Pool: weak=1 stratum 20 TP + 80 FP; weak=0 stratum 30 FN + 870 TN. Sample 50 of 100 and 90 of 900.
    ref = np.array([1] * 10 + [0] * 40 + [1] * 3 + [0] * 87)
    weak = np.array([1] * 50 + [0] * 90)
    weights = np.array([100 / 50] * 50 + [900 / 90] * 90)
    metrics, table = weak_vs_reference(ref, weak, n_boot=500, rng=0, weights=weights, strata=weak)
    m = metrics.set_index("metric")["estimate"]
    pool = binary_metrics(20, 80, 30, 870)
    for key in weak_metrics.BINARY_METRICS:
        assert m[key] == pytest.approx(float(pool[key])), key
    assert table.tolist() == [[87, 40], [3, 10]]  # the table stays in item counts
    # Within-stratum resampling keeps the stratum sizes, so the weak positive rate has no spread.
    row = metrics.set_index("metric").loc["weak_positive_rate"]
    assert row["ci_low"] == pytest.approx(row["ci_high"]) == pytest.approx(0.1)
    # Unit weights give the unweighted estimates.
    unit, _ = weak_vs_reference(ref, weak, n_boot=0, weights=np.ones(140))
    plain, _ = weak_vs_reference(ref, weak, n_boot=0)
    assert unit["estimate"].to_numpy() == pytest.approx(plain["estimate"].to_numpy(), nan_ok=True)


def test_reasons_for_one_class_reference():
    metrics, _ = weak_vs_reference([0, 0, 0, 0], [0, 1, 0, 0], n_boot=100, rng=0)
    m = metrics.set_index("metric")
    assert np.isnan(m.loc["recall", "estimate"]) and "no positive item" in m.loc["recall", "reason"]
    assert m.loc["precision", "estimate"] == 0 and pd.isna(m.loc["precision", "reason"])
    assert m.loc["kappa", "estimate"] == 0  # defined: the weak labeler used both classes
    metrics, _ = weak_vs_reference([0, 0, 0], [0, 0, 0], n_boot=100, rng=0)
    m = metrics.set_index("metric")
    assert np.isnan(m.loc["kappa", "estimate"]) and "chance agreement is 1" in m.loc["kappa", "reason"]
    assert np.isnan(m.loc["macro_f1", "estimate"]) and m.loc["macro_f1", "reason"]
    assert m.loc["kappa", "n_failed"] == 100
