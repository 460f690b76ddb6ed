"""Calibration statistics checked against brute-force definitions, scikit-learn and (if present) fairscope."""

from __future__ import annotations

import doctest
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

from mhaudit.stats import calibration as cal
from mhaudit.stats import temperature
from mhaudit.stats.calibration import (
    bootstrap_classwise_ece,
    bootstrap_ece,
    brier,
    classwise_ece,
    cross_fitted_temperature,
    ece,
    fit_temperature,
    log_softmax,
    mce,
    nll,
    reliability,
    softmax,
    stratified_folds,
)


def random_probs(rng, n, c, conc=1.0):
    p = rng.dirichlet(np.full(c, conc), size=n)
    y = np.array([rng.choice(c, p=row) for row in p])  # calibrated-ish labels
    return p, y


def brute_bins(score, hit, n_bins):
    """(count, mean score, mean hit) per bin by an explicit loop over [lo, hi) intervals, last closed."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    out = []
    for m in range(n_bins):
        lo, hi = edges[m], edges[m + 1]
        inside = [(s, h) for s, h in zip(score, hit) if lo <= s < hi or (m == n_bins - 1 and s == hi)]
        if inside:
            s, h = zip(*inside)
            out.append((len(inside), sum(s) / len(s), sum(h) / len(h)))
        else:
            out.append((0, np.nan, np.nan))
    return out


def brute_ece_mce(score, hit, n_bins):
    bins = brute_bins(score, hit, n_bins)
    gaps = [(c, abs(h - s)) for c, s, h in bins if c]
    return sum(c * g for c, g in gaps) / len(score), max(g for _, g in gaps)


def top_label(p, y):
    return p.max(axis=1), (p.argmax(axis=1) == y).astype(float)


# --- ECE / MCE / reliability --------------------------------------------------------------------


@pytest.mark.parametrize("n_bins", [1, 5, 10, 15])
def test_ece_mce_match_brute_force(n_bins):
    rng = np.random.default_rng(1)
    p, y = random_probs(rng, 300, 4, conc=0.5)
    want_ece, want_mce = brute_ece_mce(*top_label(p, y), n_bins)
    assert ece(p, y, n_bins) == pytest.approx(want_ece, abs=1e-12)
    assert mce(p, y, n_bins) == pytest.approx(want_mce, abs=1e-12)
    for k in range(4):
        want_k, _ = brute_ece_mce(p[:, k], (y == k).astype(float), n_bins)
        assert classwise_ece(p, y, n_bins)[k] == pytest.approx(want_k, abs=1e-12)


def test_ece_worked_numbers():
    p = np.array([[0.85, 0.15], [0.15, 0.85], [0.4, 0.6]])
    y = np.array([0, 0, 1])
    assert ece(p, y) == pytest.approx(2 / 3 * 0.35 + 1 / 3 * 0.4, abs=1e-12)
    assert mce(p, y) == pytest.approx(0.4, abs=1e-12)
    # class 1 one-vs-rest: 0.15 (bin 1, y!=1), 0.85 (bin 8, y!=1), 0.6 (bin 6, y==1)
    assert classwise_ece(p, y)[1] == pytest.approx((0.15 + 0.85 + 0.4) / 3, abs=1e-12)


def test_argmax_tie_goes_to_lowest_index():
    p = np.array([[0.5, 0.5], [0.5, 0.5]])
    assert ece(p, np.array([0, 0])) == pytest.approx(0.5)  # both counted correct: |1 - 0.5|
    assert ece(p, np.array([1, 1])) == pytest.approx(0.5)  # both counted wrong: |0 - 0.5|
    assert ece(p, np.array([0, 1])) == pytest.approx(0.0)


def test_reliability_matches_brute_force_and_sklearn_calibration_curve():
    rng = np.random.default_rng(2)
    p, y = random_probs(rng, 500, 3, conc=0.7)
    for cls in [None, 0, 1, 2]:
        score, hit = top_label(p, y) if cls is None else (p[:, cls], (y == cls).astype(float))
        r = reliability(p, y, 10, cls=cls)
        brute = brute_bins(score, hit, 10)
        np.testing.assert_array_equal(r["count"], [b[0] for b in brute])
        np.testing.assert_allclose(r["confidence"], [b[1] for b in brute], atol=1e-12, equal_nan=True)
        np.testing.assert_allclose(r["accuracy"], [b[2] for b in brute], atol=1e-12, equal_nan=True)
        prob_true, prob_pred = calibration_curve(hit.astype(int), score, n_bins=10, pos_label=1)
        full = r["count"] > 0
        np.testing.assert_allclose(r["accuracy"][full], prob_true, atol=1e-12)
        np.testing.assert_allclose(r["confidence"][full], prob_pred, atol=1e-12)
        # ECE rebuilt from sklearn's per-bin numbers
        sk_ece = np.sum(r["count"][full] * np.abs(prob_true - prob_pred)) / len(y)
        got = ece(p, y) if cls is None else classwise_ece(p, y)[cls]
        assert got == pytest.approx(sk_ece, abs=1e-12)
    np.testing.assert_allclose(r["lower"], np.arange(10) / 10)
    np.testing.assert_allclose(r["upper"], np.arange(1, 11) / 10)
    assert np.isnan(r["confidence"][r["count"] == 0]).all()


def test_edge_values_follow_the_convention():
    # one-vs-rest scores exactly on edges: [lo, hi) and the last bin closed at 1.0
    p1 = np.array([0.0, 0.1, 0.5, 1.0, 0.3])
    p = np.column_stack([1 - p1, p1])
    r = reliability(p, np.zeros(5, int), 10, cls=1)
    assert np.flatnonzero(r["count"]).tolist() == [0, 1, 2, 5, 9]  # 0.3 < linspace's 0.30000000000000004
    # top label: uniform over 10 classes (conf 0.1), a 2-class tie (0.5), a certain row (1.0)
    top = np.zeros((3, 10))
    top[0] = 0.1
    top[1, :2] = 0.5
    top[2, 0] = 1.0
    r = reliability(top, np.zeros(3, int), 10)
    assert np.flatnonzero(r["count"]).tolist() == [1, 5, 9]
    # sklearn 1.9's calibration_curve puts an interior edge one bin lower ((lo, hi]): 0.45 and 0.5 share
    # a bin there, while here they are apart. Away from exact edges the two agree (test above).
    _, prob_pred = calibration_curve([0, 1], [0.45, 0.5], n_bins=10)
    np.testing.assert_allclose(prob_pred, [0.475])
    ours = reliability(np.array([[0.55, 0.45], [0.5, 0.5]]), np.array([0, 1]), 10, cls=1)
    assert ours["count"][4] == 1 and ours["count"][5] == 1


prob_rows = st.integers(1, 40).flatmap(
    lambda n: st.integers(2, 6).flatmap(lambda c: arrays(np.float64, (n, c), elements=st.floats(1e-3, 1.0)))
)


@settings(max_examples=60, deadline=None)
@given(raw=prob_rows, data=st.data(), n_bins=st.integers(1, 20))
def test_property_bounds(raw, data, n_bins):
    p = raw / raw.sum(axis=1, keepdims=True)
    y = np.array(data.draw(st.lists(st.integers(0, p.shape[1] - 1), min_size=len(p), max_size=len(p))))
    e, m = ece(p, y, n_bins), mce(p, y, n_bins)
    assert 0.0 <= e <= 1.0
    assert m >= e - 1e-12 and m <= 1.0
    cw = classwise_ece(p, y, n_bins)
    assert np.all((cw >= 0) & (cw <= 1))
    assert 0.0 <= brier(p, y) <= 2.0
    ones = np.ones((1, len(y)), dtype=int)
    assert bootstrap_ece(p, y, ones, n_bins)[0] == pytest.approx(e, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(tenths=st.lists(st.integers(5, 10), min_size=1, max_size=6), reps=st.integers(1, 5))
def test_property_perfectly_calibrated_gives_zero(tenths, reps):
    # per confidence c = j/10: 10*reps rows predicting class 0 with p = c, exactly j*reps of them correct
    rows, labels = [], []
    for j in tenths:
        c = j / 10
        rows += [[c, 1 - c]] * (10 * reps)
        labels += [0] * (j * reps) + [1] * ((10 - j) * reps)
    p, y = np.array(rows), np.array(labels)
    assert ece(p, y) == pytest.approx(0.0, abs=1e-12)
    assert mce(p, y) == pytest.approx(0.0, abs=1e-12)


# --- Brier and NLL ------------------------------------------------------------------------------


def test_brier_brute_force_and_sklearn():
    rng = np.random.default_rng(3)
    p, y = random_probs(rng, 200, 4)
    brute = sum(sum((p[i, k] - (y[i] == k)) ** 2 for k in range(4)) for i in range(len(y))) / len(y)
    assert brier(p, y) == pytest.approx(brute, abs=1e-12)
    assert brier(p, y) == pytest.approx(brier_score_loss(y, p, labels=range(4), scale_by_half=False), abs=1e-12)
    # two classes: sklearn's binary Brier (p1 - y)^2 is half the multi-class sum over both columns
    p2, y2 = random_probs(rng, 200, 2)
    assert brier(p2, y2) == pytest.approx(2 * brier_score_loss(y2, p2[:, 1]), abs=1e-12)


def test_nll_matches_sklearn_log_loss_and_clips():
    rng = np.random.default_rng(4)
    p, y = random_probs(rng, 200, 5)
    assert nll(p, y) == pytest.approx(log_loss(y, p, labels=range(5)), abs=1e-12)
    zero = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert nll(zero, np.array([1, 0])) == pytest.approx((-np.log(1e-15) - np.log(0.5)) / 2, abs=1e-12)


# --- softmax ------------------------------------------------------------------------------------


def test_softmax_is_stable_and_consistent():
    z = np.array([[1000.0, 999.0, -1000.0], [0.0, 0.0, 0.0]])
    p = softmax(z)
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p[0, :2], [1 / (1 + np.exp(-1)), np.exp(-1) / (1 + np.exp(-1))], rtol=1e-12)
    np.testing.assert_allclose(p[1], [1 / 3] * 3)
    np.testing.assert_allclose(np.exp(log_softmax(z, 2.0)), softmax(z, 2.0), atol=1e-15)
    np.testing.assert_allclose(softmax(z, 2.0), softmax(z / 2.0), rtol=1e-12)
    with pytest.raises(ValueError, match="temperature"):
        softmax(z, 0.0)


# --- temperature scaling ------------------------------------------------------------------------


def planted(n=20000, c=4, t0=2.5, seed=5):
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 3.0, size=(n, c))
    cum = np.cumsum(softmax(z, t0), axis=1)
    y = np.minimum((rng.random((n, 1)) > cum).sum(axis=1), c - 1)
    return z, y


def test_fit_temperature_recovers_planted_and_minimises_nll():
    z, y = planted()
    t = fit_temperature(z, y)
    assert abs(t - 2.5) < 0.1
    grid = np.linspace(0.5 * t, 2 * t, 301)
    losses = [nll(softmax(z, g), y) for g in grid]
    assert nll(softmax(z, t), y) <= min(losses) + 1e-12
    assert abs(grid[int(np.argmin(losses))] - t) <= grid[1] - grid[0]
    # log-probabilities are logits up to a per-row shift, so they give the same temperature
    assert fit_temperature(log_softmax(z), y) == pytest.approx(t, rel=1e-7)
    assert fit_temperature(np.log(softmax(z)), y) == pytest.approx(t, rel=1e-7)


def test_fit_temperature_warns_at_bound():
    z = np.array([[5.0, 0.0], [0.0, 5.0]])
    with pytest.warns(RuntimeWarning, match="bound"):
        t = fit_temperature(z, np.array([0, 1]))  # separable: NLL falls as T -> 0
    assert t == np.exp(-5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an interior optimum is silent
        fit_temperature(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]), np.array([0, 1, 1]))


def test_temperature_keeps_accuracy_but_can_change_macro_ovr_auc():
    # Row A (class 1) is flat; row B (class 0) leans to class 0 with class 1 second. At T=1 B's
    # p_1 = 0.269 < A's 1/3; at T=3 the flatter softmax lifts it to 0.413 > 1/3, so in class 1's
    # one-vs-rest ranking the negative B passes the positive A: AUC_1 falls from 1 to 1/2.
    z = np.array([[0.0, 0.0, 0.0], [2.0, 1.0, -10.0], [-10.0, -10.0, 5.0]])
    y = np.array([1, 0, 2])
    p1, p3 = softmax(z), softmax(z, 3.0)
    np.testing.assert_array_equal(p1.argmax(axis=1), p3.argmax(axis=1))
    assert roc_auc_score(y, p1, multi_class="ovr", average="macro") == pytest.approx(1.0)
    assert roc_auc_score(y == 1, p3[:, 1]) == pytest.approx(0.5)
    assert roc_auc_score(y, p3, multi_class="ovr", average="macro") == pytest.approx(5 / 6)
    # with two classes p_1 = sigmoid((z1 - z0) / T) is monotone in the margin: binary AUC cannot move
    zb, yb = planted(n=300, c=2)
    assert roc_auc_score(yb, softmax(zb)[:, 1]) == roc_auc_score(yb, softmax(zb, 3.0)[:, 1])


def test_nll_of_temperature_is_the_plain_form():
    rng = np.random.default_rng(12)
    for k in (2, 4, 7, 8, 11):  # 8+ classes keep numpy's pairwise row sums
        z, y = rng.normal(size=(500, k)) * 3, rng.integers(0, k, 500)
        loss = temperature._nll_of_temperature(z, y)
        for t in (0.05, 0.7, 1.0, 3.3, 90.0):
            assert loss(t) == temperature._mean_nll_logits(z, y, t)


def test_stratified_folds_are_balanced_and_seeded():
    y = np.repeat([0, 1, 2], [37, 12, 51])
    f = stratified_folds(y, 5, seed=3)
    sizes = np.bincount(f, minlength=5)
    assert sizes.max() - sizes.min() <= 1
    for cls in range(3):
        per = np.bincount(f[y == cls], minlength=5)
        assert per.max() - per.min() <= 1
    np.testing.assert_array_equal(f, stratified_folds(y, 5, seed=3))
    assert not np.array_equal(f, stratified_folds(y, 5, seed=4))


def test_cross_fitted_temperature_excludes_own_fold():
    z, y = planted(n=2000, seed=6)
    probs, temps = cross_fitted_temperature(z, y, k=5, seed=1)
    fold = stratified_folds(y, 5, seed=1)
    for f in [0, 3]:
        held = fold == f
        t = fit_temperature(z[~held], y[~held])
        assert temps[f] == t
        np.testing.assert_allclose(probs[held], softmax(z[held], t), rtol=1e-12)
    # perturbing fold 2's logits moves every temperature except fold 2's own
    z2 = z.copy()
    z2[fold == 2] *= 4.0
    probs2, temps2 = cross_fitted_temperature(z2, y, k=5, seed=1)
    assert temps2[2] == temps[2]
    assert all(temps2[f] != temps[f] for f in [0, 1, 3, 4])
    np.testing.assert_allclose(probs2[fold == 2], softmax(z2[fold == 2], temps[2]), rtol=1e-12)


# --- bootstrap ----------------------------------------------------------------------------------


@pytest.mark.parametrize("block_rows", [None, 3])  # 3 rows a block: 40 resamples in 14 blocks, last one short
def test_bootstrap_equals_explicit_resamples(monkeypatch, block_rows):
    if block_rows:
        monkeypatch.setattr(cal, "_BLOCK_BYTES", 1)
        monkeypatch.setattr(cal, "_MIN_BLOCK_ROWS", block_rows)
    rng = np.random.default_rng(7)
    p, y = random_probs(rng, 120, 3, conc=0.6)
    counts = rng.multinomial(len(y), np.full(len(y), 1 / len(y)), size=40)
    counts[0] = 0
    counts[0, :5] = 1  # a resample smaller than n is weighted by its own size
    got, got_cw = bootstrap_ece(p, y, counts, 10), bootstrap_classwise_ece(p, y, counts, 10)
    assert got.shape == (40,) and got_cw.shape == (40, 3)
    for b in range(40):
        idx = np.repeat(np.arange(len(y)), counts[b])
        assert got[b] == pytest.approx(ece(p[idx], y[idx], 10), abs=1e-12)
        np.testing.assert_allclose(got_cw[b], classwise_ece(p[idx], y[idx], 10), atol=1e-12)


def test_bootstrap_rejects_bad_counts():
    p, y = np.array([[0.6, 0.4], [0.3, 0.7]]), np.array([0, 1])
    with pytest.raises(ValueError, match="draws no example"):
        bootstrap_ece(p, y, np.array([[1, 1], [0, 0]]))
    with pytest.raises(ValueError, match="non-negative integers"):
        bootstrap_ece(p, y, np.array([[0.5, 1.5]]))
    with pytest.raises(ValueError, match=r"\(n_boot, 2\)"):
        bootstrap_ece(p, y, np.ones((3, 5), dtype=int))


# --- input validation ---------------------------------------------------------------------------


def test_validation_messages():
    good = np.array([[0.2, 0.8], [0.5, 0.5], [1.0, 0.0], [0.3, 0.7]])
    y = np.array([0, 1, 0, 1])
    bad = good.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="probs contain NaN or inf.*row 1"):
        ece(bad, y)
    with pytest.raises(ValueError, match="logits contain NaN or inf"):
        fit_temperature(np.array([[0.0, np.inf], [1.0, 0.0]]), np.array([0, 1]))
    with pytest.raises(ValueError, match="logits contain NaN or inf"):
        softmax(np.array([[0.0, np.nan]]))
    off = good.copy()
    off[3] = [0.3, 0.70001]
    with pytest.raises(ValueError, match=r"within 1e-06.*first is row 3"):
        brier(off, y)
    off[3] = [0.3, 0.7000005]  # inside the tolerance
    assert np.isfinite(brier(off, y))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        nll(np.array([[1.2, -0.2]]), np.array([0]))
    with pytest.raises(ValueError, match="class indices"):
        ece(good, np.array([0, 1, 2, 0]))
    with pytest.raises(ValueError, match="one per row"):
        ece(good, np.array([0, 1]))


# --- references outside scikit-learn ------------------------------------------------------------


def test_doctests():
    for module in (cal, temperature):  # fit_temperature's example moved to stats.temperature
        result = doctest.testmod(module, raise_on_error=False)
        assert result.attempted >= 2 and result.failed == 0


def test_ece_equals_fairscope_multiclass_ece():
    try:
        from fairscope.nlp.metrics import multiclass_ece
    except ImportError:
        pytest.skip("fairscope (not a dependency) is not installed; pip install fairscope==0.3.0 to run")
    rng = np.random.default_rng(8)
    for n, c, n_bins in [(50, 2, 10), (400, 4, 10), (1000, 6, 15), (3, 3, 5)]:
        p, y = random_probs(rng, n, c, conc=0.5)
        assert ece(p, y, n_bins) == pytest.approx(multiclass_ece(y, p, n_bins=n_bins), abs=1e-12)
    edge = np.array([[0.5, 0.5], [1.0, 0.0], [0.9, 0.1], [0.6, 0.4], [0.45, 0.55]])
    ye = np.array([1, 0, 0, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ece(edge, ye) == pytest.approx(multiclass_ece(ye, edge), abs=1e-12)
