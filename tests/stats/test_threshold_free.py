"""Threshold-free companions of Macro-F1 (stats.threshold_free) against scikit-learn on resampled arrays."""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, balanced_accuracy_score, roc_auc_score

from mhaudit.stats.binary import bootstrap_macro_f1
from mhaudit.stats.threshold_free import bootstrap_panel, pr_auc_gain, weighted_average_precision


def _data(seed, n=120):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    scores = np.stack(
        [
            np.round(np.clip(y * 0.3 + rng.uniform(size=n) * 0.7, 0, 1), 2),  # ties
            rng.uniform(size=n),
        ]
    )
    preds = (scores >= 0.5).astype(int)
    return y, preds, scores


@pytest.mark.parametrize("seed", range(4))
def test_weighted_average_precision_is_sklearns_with_sample_weight(seed):
    y, _, scores = _data(seed)
    counts = np.random.default_rng(seed).multinomial(y.size, np.full(y.size, 1 / y.size), size=20)
    got = weighted_average_precision(y, scores[0], counts)
    want = [average_precision_score(y, scores[0], sample_weight=c) for c in counts]
    assert got == pytest.approx(want, abs=1e-12)


def test_panel_matches_sklearn_on_explicit_resamples_and_keeps_the_macro_f1_draws():
    y, preds, scores = _data(7)
    panel = bootstrap_panel(y, preds, scores, n_boot=300, rng=5, n_boot_scores=40)
    assert panel["macro_f1"] == pytest.approx(bootstrap_macro_f1(y, preds, 300, rng=5), nan_ok=True)
    assert panel["auc"].shape == (40, 2)
    # the same resamples, drawn explicitly: regenerate them from the same generator state
    from mhaudit.stats.binary import _count_blocks

    counts = np.vstack([c for _, c in _count_blocks(y.astype(bool), 300, np.random.default_rng(5), False)])[:40]
    for b in (0, 17, 39):
        idx = np.repeat(np.arange(y.size), counts[b])
        yb = y[idx]
        for j in range(2):
            assert panel["auc"][b, j] == pytest.approx(roc_auc_score(yb, scores[j][idx]), abs=1e-12)
            assert panel["balanced_accuracy"][b, j] == pytest.approx(balanced_accuracy_score(yb, preds[j][idx]))
            pi = yb.mean()
            ap = average_precision_score(yb, scores[j][idx])
            assert panel["pr_auc_gain"][b, j] == pytest.approx((ap - pi) / (1 - pi), abs=1e-12)
    assert panel["point_auc"] == pytest.approx([roc_auc_score(y, s) for s in scores])


def test_pr_auc_gain_is_zero_for_no_information_and_one_for_perfect():
    y = np.array([0, 0, 0, 1] * 50)
    assert pr_auc_gain(average_precision_score(y, y), y.mean()) == pytest.approx(1.0)
    assert pr_auc_gain(average_precision_score(y, np.zeros(y.size)), y.mean()) == pytest.approx(0.0)
    assert np.isnan(pr_auc_gain(0.5, 1.0))
