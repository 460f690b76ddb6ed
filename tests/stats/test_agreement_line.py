"""Agreement-on-the-line (stats.agreement_line) against a brute force, a loop over explicit resamples, and
SYNTHETIC simulations where each run's target accuracy is known."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from scipy.stats import norm

from mhaudit.stats import agreement_line as aline_module
from mhaudit.stats.agreement_line import Z95, agreement_line, line_trust
from mhaudit.synthetic import simulate_runs as simulate


def gaussian_runs(**kwargs):
    """SYNTHETIC (mhaudit.synthetic.simulate_runs): predicted classes on both sides, the labels, the truth."""
    runs = simulate.gaussian_runs(**kwargs)
    return (runs["margin_ref"] > 0).astype(int), runs["y_ref"], (runs["margin_tgt"] > 0).astype(int), runs["truth"]


def brute_force(pred_ref, y_ref, pred_tgt):
    """ALine-S and ALine-D written out: np.polyfit for the line, np.linalg.lstsq for ALine-D's system."""
    runs, n_ref, n_tgt = len(pred_ref), pred_ref.shape[1], pred_tgt.shape[1]
    probit = lambda p, n: norm.ppf(np.clip(p, 0.5 / n, 1 - 0.5 / n))  # noqa: E731
    acc = np.array([probit((pred_ref[i] == y_ref).mean(), n_ref) for i in range(runs)])
    pairs = list(combinations(range(runs), 2))
    a_ref = np.array([probit((pred_ref[i] == pred_ref[j]).mean(), n_ref) for i, j in pairs])
    a_tgt = np.array([probit((pred_tgt[i] == pred_tgt[j]).mean(), n_tgt) for i, j in pairs])
    slope, intercept = np.polyfit(a_ref, a_tgt, 1)
    design = np.zeros((len(pairs), runs))
    rhs = np.zeros(len(pairs))
    for p, (i, j) in enumerate(pairs):
        design[p, [i, j]] = 0.5
        rhs[p] = a_tgt[p] + slope * ((acc[i] + acc[j]) / 2 - a_ref[p])
    x = np.linalg.lstsq(design, rhs, rcond=None)[0]
    return {"aline-s": norm.cdf(slope * acc + intercept), "aline-d": norm.cdf(x), "slope": slope}


def test_point_estimates_equal_the_brute_force():
    pred_ref, y_ref, pred_tgt, _ = gaussian_runs(n_runs=6, n_ref=500, n_tgt=400, shrink=0.7, seed=3)
    line = agreement_line(pred_ref, y_ref, pred_tgt, n_boot=100, rng=0)
    expected = brute_force(pred_ref, y_ref, pred_tgt)
    assert line.slope == pytest.approx(expected["slope"], abs=1e-12)
    for method in ("aline-s", "aline-d"):
        np.testing.assert_allclose(line.estimates[method], expected[method], atol=1e-12)


def test_the_interval_equals_a_loop_over_explicit_resamples():
    """The batched bootstrap against one brute force per resample, drawn with the same counts."""
    pred_ref, y_ref, pred_tgt, _ = gaussian_runs(n_runs=5, n_ref=300, n_tgt=200, seed=1)
    n_boot = 60
    line = agreement_line(pred_ref, y_ref, pred_tgt, n_boot=n_boot, rng=11)
    rng = np.random.default_rng(11)  # the function draws the reference counts, then the target's, in one block
    c_ref = rng.multinomial(300, np.full(300, 1 / 300), size=n_boot)
    c_tgt = rng.multinomial(200, np.full(200, 1 / 200), size=n_boot)
    draws = {"aline-s": [], "aline-d": []}
    for b in range(n_boot):
        i_ref, i_tgt = np.repeat(np.arange(300), c_ref[b]), np.repeat(np.arange(200), c_tgt[b])
        est = brute_force(pred_ref[:, i_ref], y_ref[i_ref], pred_tgt[:, i_tgt])
        for m in draws:
            draws[m].append(est[m])
    probit = lambda p: norm.ppf(np.clip(p, 0.5 / 200, 1 - 0.5 / 200))  # noqa: E731
    misfit = Z95 * line.residual_sd
    for m, d in draws.items():
        x = probit(line.estimates[m])
        low, high = probit(np.quantile(d, 0.025, axis=0)), probit(np.quantile(d, 0.975, axis=0))
        np.testing.assert_allclose(line.ci_low[m], norm.cdf(x - np.hypot(np.maximum(x - low, 0), misfit)), atol=1e-9)
        np.testing.assert_allclose(line.ci_high[m], norm.cdf(x + np.hypot(np.maximum(high - x, 0), misfit)), atol=1e-9)


def test_no_shift_gives_the_reference_accuracies():
    pred_ref, y_ref, pred_tgt, truth = gaussian_runs(shrink=1.0, noise=1.0, seed=0)
    line = agreement_line(pred_ref, y_ref, pred_tgt, n_boot=200, rng=0)
    assert line.slope == pytest.approx(1.0, abs=0.05) and abs(line.intercept) < 0.03
    assert np.abs(line.estimates["aline-d"] - truth).max() < 0.02
    assert line_trust(line) == {}


@pytest.mark.parametrize("seed", range(4))
def test_a_margin_shift_on_the_line_is_trusted_and_close(seed):
    """Class means shrunk by 0.8: every run's probit accuracy scales alike, so the truth lies on the line."""
    pred_ref, y_ref, pred_tgt, truth = gaussian_runs(shrink=0.8, noise=1.0, seed=seed)
    line = agreement_line(pred_ref, y_ref, pred_tgt, n_boot=300, rng=seed)
    assert line_trust(line) == {}
    for method in ("aline-s", "aline-d"):
        error = np.abs(line.estimates[method] - truth)
        assert error.mean() < 0.02 and error.max() < 0.04
        covered = (line.ci_low[method] <= truth) & (truth <= line.ci_high[method])
        assert covered.mean() >= 0.8


@pytest.mark.parametrize("seed", range(4))
def test_a_shift_off_the_line_is_untrusted(seed):
    """Means halved at the same noise: the line bends (R² 0.87-0.91 here) and the estimates miss by 0.03-0.08."""
    pred_ref, y_ref, pred_tgt, truth = gaussian_runs(shrink=0.5, noise=1.0, seed=seed)
    line = agreement_line(pred_ref, y_ref, pred_tgt, n_boot=200, rng=seed)
    failed = line_trust(line)
    assert 0.85 < failed["r2"] == line.r2 < 0.93
    assert np.abs(line.estimates["aline-d"] - truth).mean() > 0.025


def test_too_few_and_too_similar_runs_are_named():
    pred_ref, y_ref, pred_tgt, _ = gaussian_runs(n_runs=3, seed=2)
    assert line_trust(agreement_line(pred_ref, y_ref, pred_tgt, n_boot=100, rng=0))["n_runs"] == 3
    same = np.repeat(pred_ref[:1], 4, axis=0)
    same[1, :3] = 1 - same[1, :3]  # four runs that differ on three rows of 4,000
    line = agreement_line(same, y_ref, np.repeat(pred_tgt[:1], 4, axis=0), n_boot=100, rng=0)
    agreement, spread = line_trust(line)["too_similar"]
    assert agreement == pytest.approx(1 - 3 / 8000) and spread == line.spread  # 3 pairs of 6 differ on 3 rows


def test_identical_runs_have_no_line_and_say_why():
    pred_ref, y_ref, pred_tgt, _ = gaussian_runs(n_runs=1, n_ref=50, n_tgt=40)
    line = agreement_line(np.repeat(pred_ref, 3, axis=0), y_ref, np.repeat(pred_tgt, 3, axis=0), n_boot=100)
    assert np.isnan(line.slope) and np.isnan(line.estimates["aline-d"]).all() and "no line" in line.note
    assert line_trust(line).keys() >= {"r2", "method_gap"} and np.isnan(line.method_gap)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="runs >= 3"):
        agreement_line(np.zeros((2, 5), int), np.zeros(5, int), np.zeros((2, 4), int))


def test_row_blocks_and_bool_indicators_give_the_one_float32_product(monkeypatch):
    """The bootstrap's product over blocks of rows, from bool indicators (bounded memory at 1M rows), equals the
    one float32 product counts @ indicators it replaced, and the whole estimate is unchanged to the last bit."""
    rng = np.random.default_rng(2)
    pred, y = rng.integers(0, 3, (5, 300)), rng.integers(0, 3, 300)
    pairs = list(combinations(range(5), 2))
    ind = aline_module._indicators(pred, y, pairs)
    assert ind.dtype == bool and ind.shape == (300, 5 + 10)
    assert np.array_equal(ind[:, :5], (pred == y).T) and np.array_equal(ind[:, 5 + 3], pred[0] == pred[4])
    one = (
        np.random.default_rng(7).multinomial(300, np.full(300, 1 / 300), size=4).astype(np.float32)
        @ ind.astype(np.float32)
    ) / 300
    runs = simulate.gaussian_runs(n_runs=5, n_ref=300, n_tgt=200, seed=3)
    pred_ref, pred_tgt = (runs["margin_ref"] > 0).astype(int), (runs["margin_tgt"] > 0).astype(int)
    whole = agreement_line(pred_ref, runs["y_ref"], pred_tgt, n_boot=50, rng=1)
    monkeypatch.setattr(aline_module, "_ROW_BLOCK_BYTES", 4 * 15 * 7)  # blocks of 7 rows, the last one short
    assert np.array_equal(aline_module._resampled_means(ind, 4, np.random.default_rng(7)), one)
    blocked = agreement_line(pred_ref, runs["y_ref"], pred_tgt, n_boot=50, rng=1)
    for m in ("aline-s", "aline-d"):
        for got, want in (
            (blocked.estimates, whole.estimates),
            (blocked.ci_low, whole.ci_low),
            (blocked.ci_high, whole.ci_high),
        ):
            assert np.array_equal(got[m], want[m])
