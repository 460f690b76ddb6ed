import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import confusion_matrix

from mhaudit.stats.fairness import equity_by_class, prior_adjusted_rates, summarise_classes

# Hand-worked example, 10 rows per platform, 3 classes.
# Reference confusion (rows true, columns predicted): [[3,1,0],[0,2,1],[1,0,2]]
Y_REF = [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
P_REF = [0, 0, 0, 1, 1, 1, 2, 2, 2, 0]
# Target confusion: [[1,1,0],[2,3,0],[0,2,1]]
Y_TGT = [0, 0, 1, 1, 1, 1, 1, 2, 2, 2]
P_TGT = [0, 1, 1, 1, 1, 0, 0, 1, 2, 1]


def close(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)


def test_every_field_by_hand():
    r0, r1, r2 = equity_by_class(Y_REF, P_REF, Y_TGT, P_TGT, 3)
    # predicted-class shares: ref .4/.3/.3, target .3/.6/.1
    assert [r["rate_ref"] for r in (r0, r1, r2)] == pytest.approx([0.4, 0.3, 0.3])
    assert [r["rate_tgt"] for r in (r0, r1, r2)] == pytest.approx([0.3, 0.6, 0.1])
    assert [r["disparate_impact"] for r in (r0, r1, r2)] == pytest.approx([0.75, 0.5, 1 / 3])
    assert [r["tpr_ref"] for r in (r0, r1, r2)] == pytest.approx([3 / 4, 2 / 3, 2 / 3])
    assert [r["tpr_tgt"] for r in (r0, r1, r2)] == pytest.approx([1 / 2, 3 / 5, 1 / 3])
    assert [r["fpr_ref"] for r in (r0, r1, r2)] == pytest.approx([1 / 6, 1 / 7, 1 / 7])
    assert [r["fpr_tgt"] for r in (r0, r1, r2)] == pytest.approx([2 / 8, 3 / 5, 0.0])
    assert [r["equal_opportunity_gap"] for r in (r0, r1, r2)] == pytest.approx([0.25, 1 / 15, 1 / 3])
    # class 1: the FPR gap (3/5 - 1/7 = 16/35) exceeds the TPR gap, so the two gaps differ
    assert [r["equalized_odds_gap"] for r in (r0, r1, r2)] == pytest.approx([0.25, 16 / 35, 1 / 3])
    assert [r["di_below_0_80"] for r in (r0, r1, r2)] == [True, True, True]
    assert [r["di_below_0_50"] for r in (r0, r1, r2)] == [False, False, True]  # 0.5 is not below 0.5
    assert [r["reason"] for r in (r0, r1, r2)] == ["", "", ""]
    assert [(r["n_ref"], r["n_tgt"], r["support_ref"], r["support_tgt"]) for r in (r0, r1, r2)] == [
        (10, 10, 4, 2),
        (10, 10, 3, 5),
        (10, 10, 3, 3),
    ]

    summary = summarise_classes([r0, r1, r2])
    assert summary["max_equal_opportunity_gap"] == pytest.approx(1 / 3)
    assert summary["max_equal_opportunity_gap_class"] == 2
    assert summary["max_equalized_odds_gap"] == pytest.approx(16 / 35)
    assert summary["max_equalized_odds_gap_class"] == 1
    assert summary["min_disparate_impact"] == pytest.approx(1 / 3)
    assert summary["min_disparate_impact_class"] == 2
    assert summary["reason"] == "" and summary["note"] == ""
    assert "min_disparate_impact_prior_adjusted" not in summary


def test_prior_adjusted_rates_and_di_by_hand():
    # Reference shares .4/.3/.3; target P(pred | y): y0 [.5,.5,0], y1 [.4,.6,0], y2 [0,2/3,1/3].
    # Adjusted rate_k = sum_j prior_ref[j] P_tgt(pred=k | y=j) = .32, .58, .10
    rates = prior_adjusted_rates(Y_TGT, P_TGT, [0.4, 0.3, 0.3], 3)
    assert rates == pytest.approx([0.32, 0.58, 0.10])
    # The same by explicit importance weights w = prior_ref[y] / prior_tgt[y] = 2, 0.6, 1
    w = np.array([2, 0.6, 1])[Y_TGT]
    assert rates == pytest.approx([w[np.array(P_TGT) == k].sum() / w.sum() for k in range(3)])
    rows = equity_by_class(Y_REF, P_REF, Y_TGT, P_TGT, 3, adjust_priors=True)
    assert [r["rate_tgt_prior_adjusted"] for r in rows] == pytest.approx([0.32, 0.58, 0.10])
    assert [r["disparate_impact_prior_adjusted"] for r in rows] == pytest.approx([0.8, 0.3 / 0.58, 1 / 3])
    assert [r["disparate_impact"] for r in rows] == pytest.approx([0.75, 0.5, 1 / 3])  # unchanged
    summary = summarise_classes(rows)
    assert summary["min_disparate_impact_prior_adjusted"] == pytest.approx(1 / 3)
    assert summary["min_disparate_impact_prior_adjusted_class"] == 2


def test_prior_adjusted_di_is_one_under_pure_label_shift():
    # Same P(pred | y) on both platforms (class 0: 3 of 4 right; class 1: 1 of 2), priors 4:2 vs 8:12.
    y_ref, p_ref = [0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 1, 0]
    y_tgt = [0] * 8 + [1] * 12
    p_tgt = [0] * 6 + [1] * 2 + [1] * 6 + [0] * 6
    rows = equity_by_class(y_ref, p_ref, y_tgt, p_tgt, 2, adjust_priors=True)
    assert [r["disparate_impact"] for r in rows] != pytest.approx([1, 1])
    assert [r["disparate_impact_prior_adjusted"] for r in rows] == pytest.approx([1.0, 1.0])


def test_class_absent_on_target_leaves_tpr_and_gaps_undefined():
    rows = equity_by_class([0, 1, 2, 2], [0, 1, 2, 1], [0, 0, 1, 1], [0, 1, 1, 2], 3)
    r2 = rows[2]
    assert math.isnan(r2["tpr_tgt"]) and r2["tpr_ref"] == 0.5
    assert r2["fpr_tgt"] == pytest.approx(0.25)  # 1 of the 4 non-class-2 target rows predicted 2
    assert math.isnan(r2["equal_opportunity_gap"]) and math.isnan(r2["equalized_odds_gap"])
    assert r2["reason"] == "class absent on target: TPR undefined"
    assert r2["disparate_impact"] == pytest.approx(0.25 / 0.25)
    assert rows[0]["reason"] == rows[1]["reason"] == ""


def test_class_absent_on_reference():
    rows = equity_by_class([0, 0, 1, 1], [0, 2, 1, 1], [0, 1, 2, 2], [0, 1, 2, 0], 3)
    assert rows[2]["reason"] == "class absent on reference: TPR undefined"
    assert math.isnan(rows[2]["tpr_ref"]) and rows[2]["tpr_tgt"] == 0.5
    assert rows[2]["fpr_ref"] == pytest.approx(0.25)


def test_only_one_class_on_target_leaves_its_fpr_undefined():
    rows = equity_by_class([0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 1], 2)
    r0, r1 = rows
    assert r0["tpr_tgt"] == 0.75 and math.isnan(r0["fpr_tgt"])
    assert r0["equal_opportunity_gap"] == pytest.approx(0.25)  # TPR gap still defined
    assert math.isnan(r0["equalized_odds_gap"])  # never the TPR gap alone when the FPR gap is unknown
    assert r0["reason"] == "only this class on target: FPR undefined"
    assert r1["reason"] == "class absent on target: TPR undefined"
    assert r1["fpr_tgt"] == 0.25 and r1["fpr_ref"] == 0.5


def test_never_predicted_class_has_undefined_di_and_false_flags():
    rows = equity_by_class([0, 1, 2], [0, 1, 1], [0, 1, 2, 2], [1, 1, 0, 0], 3)
    r2 = rows[2]
    assert r2["rate_ref"] == 0 and r2["rate_tgt"] == 0
    assert math.isnan(r2["disparate_impact"])
    assert r2["di_below_0_80"] is False and r2["di_below_0_50"] is False
    assert r2["reason"] == "no rows predicted as class on either platform: DI undefined"
    assert r2["tpr_ref"] == 0 and r2["tpr_tgt"] == 0 and r2["equal_opportunity_gap"] == 0
    # one zero rate is a real, maximal disparity, not an undefined one
    r0 = rows[0]
    assert r0["rate_ref"] == pytest.approx(1 / 3) and r0["rate_tgt"] == 0.5
    r_only_ref = equity_by_class([0, 1], [0, 1], [0, 1], [1, 1], 2)[0]
    assert r_only_ref["disparate_impact"] == 0.0 and r_only_ref["reason"] == ""
    assert r_only_ref["di_below_0_50"] is True


def test_reasons_combine_and_summary_ignores_undefined_classes():
    # target holds only class 0, predicted as 0 or 1; class 2 is never predicted anywhere
    rows = equity_by_class([0, 1, 2, 2], [0, 1, 0, 1], [0, 0, 0, 0], [0, 0, 1, 1], 3)
    assert rows[0]["reason"] == "only this class on target: FPR undefined"
    assert rows[2]["reason"] == (
        "class absent on target: TPR undefined; no rows predicted as class on either platform: DI undefined"
    )
    s = summarise_classes(rows)
    assert math.isnan(s["max_equalized_odds_gap"]) and s["max_equalized_odds_gap_class"] is None
    assert s["reason"] == "equalized odds gap undefined for every class"
    assert math.isnan(s["max_equal_opportunity_gap"]) is False
    assert s["max_equal_opportunity_gap"] == pytest.approx(0.5) and s["max_equal_opportunity_gap_class"] == 0
    assert s["min_disparate_impact"] == 1.0 and s["min_disparate_impact_class"] == 0  # rates .5/.5 both
    assert "class(es) 1, 2" in s["note"] and "disparate impact undefined for class(es) 2" in s["note"]


def test_prior_adjustment_undefined_when_a_reference_class_is_missing_on_target():
    rows = equity_by_class([0, 1, 2], [0, 1, 2], [0, 1, 1], [0, 1, 0], 3, adjust_priors=True)
    assert all(math.isnan(r["disparate_impact_prior_adjusted"]) for r in rows)
    assert all(math.isnan(r["rate_tgt_prior_adjusted"]) for r in rows)
    assert "class(es) 2 present on reference but absent on target: prior-adjusted DI undefined" in rows[0]["reason"]
    assert np.isnan(prior_adjusted_rates([0, 1, 1], [0, 1, 0], [1, 1, 1], 3)).all()
    # a class absent from the reference needs no target rows: its weight is 0
    assert prior_adjusted_rates([0, 1], [0, 1], [1, 1, 0], 3) == pytest.approx([0.5, 0.5, 0])


def test_summary_all_undefined_and_ties_take_the_first_class():
    nan = float("nan")
    rows = [
        {"class": c, "equal_opportunity_gap": nan, "equalized_odds_gap": 0.4, "disparate_impact": 0.5} for c in range(3)
    ]
    s = summarise_classes(rows)
    assert math.isnan(s["max_equal_opportunity_gap"]) and s["max_equal_opportunity_gap_class"] is None
    assert s["reason"] == "equal opportunity gap undefined for every class"
    assert s["max_equalized_odds_gap_class"] == 0 and s["min_disparate_impact_class"] == 0


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="class code 3"):
        equity_by_class([0, 3], [0, 1], [0], [0], 3)
    with pytest.raises(ValueError, match="empty"):
        equity_by_class([], [], [0], [0], 2)
    with pytest.raises(ValueError, match="rows"):
        equity_by_class([0, 1], [0], [0], [0], 2)


platform = st.integers(3, 4).flatmap(
    lambda k: st.tuples(
        st.just(k),
        st.lists(st.tuples(st.integers(0, k - 1), st.integers(0, k - 1)), min_size=1, max_size=25),
        st.lists(st.tuples(st.integers(0, k - 1), st.integers(0, k - 1)), min_size=1, max_size=25),
    )
)


def _split(pairs):
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


@settings(max_examples=150, deadline=None)
@given(platform)
def test_swapping_platforms_changes_no_symmetric_measure(case):
    k, a, b = case
    ya, pa = _split(a)
    yb, pb = _split(b)
    ab = equity_by_class(ya, pa, yb, pb, k)
    ba = equity_by_class(yb, pb, ya, pa, k)
    for x, y in zip(ab, ba):
        for key in ("disparate_impact", "equal_opportunity_gap", "equalized_odds_gap"):
            assert close(x[key], y[key])
        assert x["rate_ref"] == y["rate_tgt"] and close(x["tpr_ref"], y["tpr_tgt"])
        assert 0 <= x["disparate_impact"] <= 1 or math.isnan(x["disparate_impact"])
        assert x["di_below_0_80"] == y["di_below_0_80"]


@settings(max_examples=150, deadline=None)
@given(platform)
def test_tpr_and_fpr_agree_with_sklearn_confusion_matrix(case):
    k, a, b = case
    ya, pa = _split(a)
    yb, pb = _split(b)
    rows = equity_by_class(ya, pa, yb, pb, k)
    for g, y, pred in (("ref", ya, pa), ("tgt", yb, pb)):
        cm = confusion_matrix(y, pred, labels=list(range(k)))
        for c, row in enumerate(rows):
            tp, fn = cm[c, c], cm[c].sum() - cm[c, c]
            fp = cm[:, c].sum() - tp
            tn = cm.sum() - tp - fn - fp
            assert close(row[f"tpr_{g}"], tp / (tp + fn) if tp + fn else float("nan"))
            assert close(row[f"fpr_{g}"], fp / (fp + tn) if fp + tn else float("nan"))
            assert row[f"rate_{g}"] == pytest.approx(cm[:, c].sum() / cm.sum())


def test_agrees_with_fairscope_where_both_are_defined():
    """fairscope 0.3.0 is an optional reference (not a dependency).

    Its definitions match ours (symmetric DI of argmax rates; |TPR_a - TPR_b|) except at the edges:
    it returns DI = 1.0 when neither platform predicts the class (we: NaN, undefined), and None for the
    TPR gap when a platform lacks the class (we: NaN). One zero rate gives DI = 0 in both. It has no
    FPR / full equalized-odds gap. Its inputs are probabilities; it takes the argmax itself.
    """
    nlp = pytest.importorskip(
        "fairscope.nlp.metrics", reason="fairscope is not installed (optional reference: pip install fairscope==0.3.0)"
    )
    rng = np.random.default_rng(7)
    edge_di = edge_tpr = 0
    for _ in range(300):
        k = int(rng.integers(2, 5))
        probs_a = rng.dirichlet(np.full(k, 0.3), size=int(rng.integers(2, 15)))
        probs_b = rng.dirichlet(np.full(k, 0.3), size=int(rng.integers(2, 15)))
        ya, yb = rng.integers(0, k, len(probs_a)), rng.integers(0, k, len(probs_b))
        rows = equity_by_class(ya, probs_a.argmax(1), yb, probs_b.argmax(1), k)
        di = nlp.per_class_disparate_impact(probs_a, probs_b, k)
        eod = nlp.per_class_equalized_odds(ya, probs_a, yb, probs_b, k)
        for c, row in enumerate(rows):
            if math.isnan(row["disparate_impact"]):
                assert di[c] == 1.0
                edge_di += 1
            else:
                assert row["disparate_impact"] == pytest.approx(di[c], abs=1e-12)
            if math.isnan(row["equal_opportunity_gap"]):
                assert eod[c] is None
                edge_tpr += 1
            else:
                assert row["equal_opportunity_gap"] == pytest.approx(eod[c], abs=1e-12)
    assert edge_di > 0 and edge_tpr > 0  # the random draws did reach the edge cases


def _ratio_score_ci(x_tgt, n_tgt, x_ref, n_ref):
    """The reference: statsmodels' score interval of rate_tgt / rate_ref (Koopman), mapped to DI = min(R, 1/R)."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    low, high = confint_proportions_2indep(
        x_tgt, n_tgt, x_ref, n_ref, method="score", compare="ratio", correction=False
    )
    if high < 1:
        return low, high
    if low > 1:
        return 1 / high, 1 / low
    return min(low, 1 / high), 1.0


@settings(max_examples=150, deadline=None)
@given(st.integers(20, 600), st.integers(20, 600), st.data())
def test_di_interval_is_the_score_interval_of_the_rate_ratio(n_ref, n_tgt, data):
    from mhaudit.stats.fairness import di_interval

    x_ref = data.draw(st.integers(1, n_ref - 1))
    x_tgt = data.draw(st.integers(1, n_tgt - 1))
    low, high = di_interval(x_ref, n_ref, x_tgt, n_tgt)
    want = _ratio_score_ci(x_tgt, n_tgt, x_ref, n_ref)
    # statsmodels: a root finder, to about 1e-6 relative (at 151/152 vs 1/20 its lower bound is 7.8e-7 off, and leaves
    # z^2 - 1.96^2 at -4.3e-6 where ours leaves 1.8e-15): agreement to 1e-5, exactness by the brute force below
    assert low == pytest.approx(want[0], rel=1e-5) and high == pytest.approx(want[1], rel=1e-5)
    point = min((x_ref / n_ref) / (x_tgt / n_tgt), (x_tgt / n_tgt) / (x_ref / n_ref))
    assert low <= point <= high  # one estimator: the point lies inside its interval
    assert di_interval(x_tgt, n_tgt, x_ref, n_ref) == pytest.approx((low, high), rel=1e-9)  # symmetric


def test_di_interval_holds_a_zero_di_and_matches_statsmodels_there():
    from mhaudit.stats.fairness import di_interval

    # The target never predicts the class: DI = 0 (the old Haldane interval gave [0.00077, 0.198] around it).
    low, high = di_interval(40, 300, 0, 300)
    assert low == 0.0 and high == pytest.approx(_ratio_score_ci(40, 300, 0, 300)[1], rel=1e-9)
    assert di_interval(0, 300, 40, 300) == pytest.approx((low, high), rel=1e-9)
    # Brute force: the upper bound is the largest ratio whose score test (z^2) stays under 1.96^2.
    from mhaudit.stats.fairness import _score_z

    grid = np.linspace(1e-4, 0.3, 300_001)
    kept = grid[_score_z(grid, 0.0, 300.0, 40.0, 300.0) ** 2 <= 1.959963984540054**2]
    assert high == pytest.approx(kept.max(), abs=2e-6)
    assert di_interval(50, 100, 50, 100)[1] == 1.0  # the CI of equal rates reaches parity
    assert all(math.isnan(v) for v in di_interval(0, 100, 0, 80))
    low, high = di_interval(np.array([30, 0]), 300, np.array([40, 10]), 300)  # arrays broadcast
    assert low.shape == (2,) and low[1] == 0.0


def test_equity_di_lies_inside_its_interval_on_every_class():
    rng = np.random.default_rng(5)
    for _ in range(50):
        y_ref, y_tgt = rng.integers(0, 4, 300), rng.integers(0, 4, 300)
        p_ref, p_tgt = rng.choice(4, 300, p=[0.5, 0.3, 0.15, 0.05]), rng.choice(4, 300, p=[0.6, 0.3, 0.1, 0.0])
        for row in equity_by_class(y_ref, p_ref, y_tgt, p_tgt, 4):
            if not math.isnan(row["disparate_impact"]):
                assert row["di_ci_low"] <= row["disparate_impact"] <= row["di_ci_high"]
