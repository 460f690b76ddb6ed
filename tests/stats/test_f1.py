"""The one F1 (mhaudit.stats.f1) against scikit-learn's precision_recall_fscore_support and f1_score with
zero_division=np.nan, on random labels, on the edge cases (a class never predicted, never true, both), and
batched: tallies of resamples, confusion matrices and 2 x 2 tables give the same numbers."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix, f1_score, precision_recall_fscore_support

from mhaudit.stats.f1 import binary_tallies, class_scores, confusion_tallies, macro_f1, tallies, weighted_f1
from mhaudit.stats.undefined import UndefinedStatisticWarning

TOL = 1e-12


def _sklearn(y, pred, k, zero_division=np.nan):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p, r, f, s = precision_recall_fscore_support(y, pred, labels=range(k), zero_division=zero_division)
    return {"precision": p, "recall": r, "f1": f, "support": s}


def _quiet(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        return call()


@pytest.mark.parametrize("seed", range(8))
def test_per_class_and_macro_equal_sklearn_on_random_labels(seed):
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(2, 6)), int(rng.integers(1, 60))
    y, pred = rng.integers(0, k, n), rng.integers(0, k, n)
    t = tallies(y, pred, k)
    got = _quiet(lambda: class_scores(t))
    want = _sklearn(y, pred, k)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], atol=TOL, equal_nan=True, err_msg=name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk_macro = f1_score(y, pred, labels=range(k), average="macro", zero_division=np.nan)
        sk_weighted = f1_score(y, pred, labels=range(k), average="weighted", zero_division=np.nan)
    mine = _quiet(lambda: macro_f1(t))
    # sklearn's nan-aware macro mean skips an undefined class; ours is undefined then (docs/statistics.md)
    assert (math.isnan(mine) and np.isnan(want["f1"]).any()) or abs(mine - sk_macro) <= TOL
    assert abs(weighted_f1(t) - sk_weighted) <= TOL


@pytest.mark.parametrize("zero_division", [0.0, 1.0])
def test_explicit_zero_division_is_sklearns_and_does_not_warn(zero_division):
    y, pred = np.array([0, 0, 1, 1, 0]), np.array([0, 0, 0, 0, 0])  # class 2 neither, class 1 never predicted
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedStatisticWarning)
        got = class_scores(tallies(y, pred, 3), zero_division=zero_division)
        mine = macro_f1(tallies(y, pred, 3), zero_division=zero_division)
    want = _sklearn(y, pred, 3, zero_division)
    for name in ("precision", "recall", "f1"):
        np.testing.assert_allclose(got[name], want[name], atol=TOL, err_msg=name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert mine == pytest.approx(
            f1_score(y, pred, labels=range(3), average="macro", zero_division=zero_division), abs=TOL
        )


def test_edge_cases_never_predicted_never_true_and_both():
    # class 0: true and predicted; 1: true, never predicted; 2: predicted, never true; 3: neither
    y, pred = np.array([0, 0, 1, 1]), np.array([0, 2, 0, 2])
    with pytest.warns(UndefinedStatisticWarning, match="undefined"):
        s = class_scores(tallies(y, pred, 4))
    want = _sklearn(y, pred, 4)
    for name in ("precision", "recall", "f1"):
        np.testing.assert_array_equal(np.isnan(s[name]), np.isnan(want[name]), err_msg=name)
        np.testing.assert_allclose(s[name], want[name], atol=TOL, equal_nan=True)
    assert np.isnan(s["precision"][1]) and s["recall"][1] == 0.0 and s["f1"][1] == 0.0  # never predicted
    assert s["precision"][2] == 0.0 and np.isnan(s["recall"][2]) and s["f1"][2] == 0.0  # never true
    assert np.isnan(s["f1"][3])  # neither: no F1
    with pytest.warns(UndefinedStatisticWarning, match="macro-F1 undefined"):
        assert math.isnan(macro_f1(tallies(y, pred, 4)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedStatisticWarning)
        assert macro_f1(tallies(y, pred, 3)) == pytest.approx(f1_score(y, pred, average="macro"), abs=TOL)


def test_batches_equal_one_table_at_a_time():
    """Resample tallies, confusion matrices and 2 x 2 tables: one call for a batch, the same numbers."""
    rng = np.random.default_rng(3)
    k, n = 3, 40
    y, pred = rng.integers(0, k, n), rng.integers(0, k, n)
    draws = [rng.integers(0, n, n) for _ in range(5)]
    one = np.array([_quiet(lambda: macro_f1(tallies(y[d], pred[d], k))) for d in draws])
    cms = np.stack([confusion_matrix(y[d], pred[d], labels=range(k)) for d in draws])
    batch = _quiet(lambda: macro_f1(confusion_tallies(cms)))
    np.testing.assert_allclose(batch, one, atol=TOL, equal_nan=True)
    assert batch.shape == (5,)
    # two classes from tp, fp, fn, tn: class 1 positive, class 0 its mirror
    yb, pb = rng.integers(0, 2, (6, n)), rng.integers(0, 2, (6, n))
    tp, fp = (yb & pb).sum(1), ((1 - yb) & pb).sum(1)
    fn, tn = (yb & (1 - pb)).sum(1), ((1 - yb) & (1 - pb)).sum(1)
    got = macro_f1(binary_tallies(tp, fp, fn, tn))
    want = [f1_score(a, b, labels=[0, 1], average="macro") for a, b in zip(yb, pb)]
    np.testing.assert_allclose(got, want, atol=TOL)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="lie in"):
        tallies([0, 3], [0, 1], 3)
    with pytest.raises(ValueError, match="one prediction per label"):
        tallies([0, 1], [0], 2)
    with pytest.raises(ValueError, match="non-negative"):
        macro_f1(binary_tallies(-1, 0, 0, 1))
    with pytest.raises(ValueError, match="zero_division"):
        macro_f1(tallies([0, 1], [0, 1], 2), zero_division=0.5)
