"""CBPE's expected metrics and label draws against brute force and scikit-learn."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, roc_auc_score

from mhaudit.stats.cbpe import draw_metrics, expected_confusion, expected_macro_auc, expected_metrics
from mhaudit.stats.f1 import confusion_tallies, macro_f1
from mhaudit.stats.estimate_draws import reference_draws, target_draws
from mhaudit.stats.label_shift import em_priors, prior_corrected_probs


def realised_draws(p, s, n_draws, rng):
    """n_draws label draws from one posterior, through the kernel the interval uses."""
    return draw_metrics(np.broadcast_to(p, (n_draws, *p.shape)), s, rng)


def _probs(rng, n, k):
    p = rng.dirichlet(np.ones(k), size=n)
    return p, np.log(p) + 0.3 * rng.normal(size=(n, k))  # scores related to, but not equal to, the posteriors


def test_one_hot_posteriors_give_the_realised_metrics():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 200)
    scores = rng.normal(size=(200, 3)) + np.eye(3)[y]
    m = expected_metrics(np.eye(3)[y], scores)
    pred = scores.argmax(1)
    assert m["accuracy"] == pytest.approx(accuracy_score(y, pred), abs=1e-12)
    assert m["macro_f1"] == pytest.approx(f1_score(y, pred, average="macro"), abs=1e-12)
    auc = np.mean([roc_auc_score(y == c, scores[:, c]) for c in range(3)])
    assert m["macro_auc"] == pytest.approx(auc, abs=1e-12)


def test_macro_f1_of_a_confusion_matrix_matches_sklearn():
    rng = np.random.default_rng(1)
    y, pred = rng.integers(0, 4, 300), rng.integers(0, 4, 300)
    cm = confusion_matrix(y, pred, labels=range(4)).astype(float)
    assert macro_f1(confusion_tallies(cm)) == pytest.approx(f1_score(y, pred, average="macro"), abs=1e-12)


def test_expected_confusion_and_auc_by_brute_force():
    rng = np.random.default_rng(2)
    p, s = _probs(rng, 9, 2)
    s[3, 1] = s[5, 1]  # a tie
    pred = s.argmax(1)
    cm = expected_confusion(p, pred)
    for j, i in itertools.product(range(2), range(2)):
        assert cm[j, i] == pytest.approx(p[pred == i, j].sum())
    # E[pairs ranked right] / E[n_pos n_neg] over every pair i != j, class 1 positive
    num = den = 0.0
    for i, j in itertools.permutations(range(9), 2):
        w = p[i, 1] * (1 - p[j, 1])
        den += w
        num += w * (1.0 if s[i, 1] > s[j, 1] else 0.5 if s[i, 1] == s[j, 1] else 0.0)
    num0 = den0 = 0.0
    for i, j in itertools.permutations(range(9), 2):
        w = p[i, 0] * (1 - p[j, 0])
        den0 += w
        num0 += w * (1.0 if s[i, 0] > s[j, 0] else 0.5 if s[i, 0] == s[j, 0] else 0.0)
    assert expected_macro_auc(p, s) == pytest.approx((num / den + num0 / den0) / 2, abs=1e-12)


def test_label_draws_centre_on_the_expectation_and_match_direct_computation():
    rng = np.random.default_rng(3)
    p, s = _probs(rng, 400, 3)
    draws = realised_draws(p, s, 2000, np.random.default_rng(4))
    expected = expected_metrics(p, s)
    assert draws["accuracy"].mean() == pytest.approx(expected["accuracy"], abs=0.003)  # exact in expectation
    sd = np.sqrt(np.sum(p[np.arange(400), s.argmax(1)] * (1 - p[np.arange(400), s.argmax(1)]))) / 400
    assert draws["accuracy"].std() == pytest.approx(sd, rel=0.08)
    assert abs(draws["macro_f1"].mean() - expected["macro_f1"]) < 0.01  # a ratio: close, not exact
    assert abs(draws["macro_auc"].mean() - expected["macro_auc"]) < 0.01
    # one draw recomputed with scikit-learn
    labels = np.random.default_rng(5)
    one = realised_draws(p, s, 1, labels)
    cumulative = np.cumsum(p, axis=1)[:, :-1]
    y = (np.random.default_rng(5).random((1, 400, 1)) > cumulative[None]).sum(2)[0]
    assert one["accuracy"][0] == pytest.approx(accuracy_score(y, s.argmax(1)))
    assert one["macro_f1"][0] == pytest.approx(f1_score(y, s.argmax(1), average="macro"))
    assert one["macro_auc"][0] == pytest.approx(np.mean([roc_auc_score(y == c, s[:, c]) for c in range(3)]))


def test_the_interval_draws_centre_on_the_prior_corrected_expectation():
    rng = np.random.default_rng(6)
    y_ref = rng.integers(0, 2, 1500)
    z_ref = rng.normal(size=(1500, 2)) + 1.5 * np.eye(2)[y_ref]
    y_tgt = (rng.random(1200) < 0.2).astype(int)  # the target's prior moved from 0.5 to 0.2
    z_tgt = rng.normal(size=(1200, 2)) + 1.5 * np.eye(2)[y_tgt]
    reference = reference_draws(y_ref, z_ref, 400, rng)
    calibration = reference.calibration
    pi = np.bincount(y_ref) / 1500
    em = em_priors(calibration.probs(z_tgt), pi).priors
    draws = target_draws(reference, z_tgt, em, rng, adjust_priors=True)
    scores = np.exp(z_tgt) / np.exp(z_tgt).sum(1, keepdims=True)
    expected = expected_metrics(prior_corrected_probs(calibration.probs(z_tgt), pi, em), scores)
    assert draws["cbpe", "accuracy"].mean() == pytest.approx(expected["accuracy"], abs=0.005)
    assert draws["em"].mean(0) == pytest.approx(em, abs=0.01)
