"""Vectorised bootstraps against explicitly materialised resamples scored by sklearn."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from mhaudit.stats import bootstrap
from mhaudit.stats.auc import delong, macro_auc
from mhaudit.stats.bootstrap import bootstrap_macro_auc, count_blocks, resample_counts, summarise, weighted_auc
from mhaudit.stats.undefined import UndefinedStatisticWarning

TOL = 1e-12


def materialised_auc(y, score, row):
    yb, sb = np.repeat(y, row), np.repeat(score, row)
    return roc_auc_score(yb, sb) if 0 < yb.sum() < yb.size else math.nan


def materialised_macro(y, probs, n_classes, row):
    """The macro rule on an explicit resample: mean sklearn AUC over all classes, NaN if one lacks a side."""
    yb, pb = np.repeat(y, row), np.repeat(probs, row, axis=0)
    if any(not 0 < (yb == k).sum() < yb.size for k in range(n_classes)):
        return math.nan
    return float(np.mean([roc_auc_score(yb == k, pb[:, k]) for k in range(n_classes)]))


def close(a: np.ndarray, b: np.ndarray) -> bool:
    return np.array_equal(np.isnan(a), np.isnan(b)) and np.allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=0, atol=TOL)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(2, 25).flatmap(
        lambda n: st.tuples(
            st.lists(st.booleans(), min_size=n, max_size=n),
            st.lists(st.integers(0, 3), min_size=n, max_size=n),  # heavy ties
            st.lists(st.lists(st.integers(0, 3), min_size=n, max_size=n), min_size=1, max_size=6),
        )
    )
)
def test_weighted_auc_equals_sklearn_on_materialised_resamples(case):
    y, score, counts = (np.array(v) for v in case)
    score = score.astype(float)
    expected = np.array([materialised_auc(y, score, row) for row in counts])
    assert close(weighted_auc(y, score, counts), expected)


@pytest.mark.parametrize("stratified", [True, False])
def test_weighted_auc_on_drawn_resamples(stratified):
    rng = np.random.default_rng(1)
    y = np.arange(40) < 3
    score = np.round(rng.normal(size=40) + y, 1)
    counts = resample_counts(y.astype(int), 200, rng, stratified=stratified)
    expected = np.array([materialised_auc(y, score, row) for row in counts])
    got = weighted_auc(y, score, counts)
    assert close(got, expected)
    assert stratified != np.isnan(got).any()  # 3 positives in 40: (37/40)^40 = 4% of draws lose them


@pytest.mark.parametrize("stratified", [True, False])
def test_bootstrap_macro_auc_equals_materialised(stratified):
    rng = np.random.default_rng(7)
    n, k = 30, 4
    y = np.r_[[0] * 18, [1] * 7, [2] * 3, [3] * 2]  # small classes vanish from some unstratified draws
    probs = rng.dirichlet(np.ones(k), size=n)
    probs[:, 2] = np.round(probs[:, 2], 1)  # ties in one column
    counts = resample_counts(y, 120, rng, stratified=stratified)
    if stratified:
        got = bootstrap_macro_auc(y, probs, k, counts)
    else:
        with pytest.warns(UndefinedStatisticWarning, match="lost a class"):
            got = bootstrap_macro_auc(y, probs, k, counts)
    assert stratified != (counts[:, y == 3].sum(axis=1) == 0).any()  # unstratified: class 3 sometimes lost
    assert close(got, np.array([materialised_macro(y, probs, k, row) for row in counts]))
    full = np.ones(n, dtype=int)
    assert bootstrap_macro_auc(y, probs, k, full[None])[0] == pytest.approx(macro_auc(y, probs, k), abs=TOL)
    if stratified:  # every class in every draw: sklearn's own multiclass macro applies
        probs = rng.dirichlet(np.ones(k), size=n)
        got = bootstrap_macro_auc(y, probs, k, counts[:10])
        ref = [roc_auc_score(np.repeat(y, c), np.repeat(probs, c, axis=0), multi_class="ovr") for c in counts[:10]]
        assert np.allclose(got, ref, rtol=0, atol=TOL)


def test_macro_nan_where_a_class_is_lost():
    y = np.array([0, 0, 1, 2])
    probs = np.full((4, 3), 1 / 3)
    counts = np.array([[2, 2, 0, 0], [1, 0, 1, 0], [0, 0, 2, 2], [1, 1, 1, 1]])
    with pytest.warns(UndefinedStatisticWarning, match="3 of 4"):
        got = bootstrap_macro_auc(y, probs, 3, counts)
    assert np.isnan(got[:3]).all() and got[3] == 0.5  # never the mean of the classes that are left


def test_results_do_not_depend_on_the_block_size(monkeypatch):
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 50)
    probs = rng.dirichlet(np.ones(3), size=50)
    counts = resample_counts(y, 97, rng, stratified=False)
    whole = bootstrap_macro_auc(y, probs, 3, counts), weighted_auc(y == 1, probs[:, 1], counts)
    monkeypatch.setattr(bootstrap, "_CHUNK_CELLS", 50 * 7)  # blocks of 7 resamples, the last one short
    blocked = bootstrap_macro_auc(y, probs, 3, counts), weighted_auc(y == 1, probs[:, 1], counts)
    assert np.array_equal(whole[0], blocked[0], equal_nan=True)
    assert np.array_equal(whole[1], blocked[1], equal_nan=True)


@pytest.mark.parametrize("stratified", [True, False])
@pytest.mark.parametrize("max_bytes", [0, 4 * 50 * 7, 4 * 50 * 1000])  # a chunk a block, several, all in one
def test_count_blocks_are_the_one_matrix_in_pieces(monkeypatch, stratified, max_bytes):
    monkeypatch.setattr(bootstrap, "_CHUNK_CELLS", 50 * 3)  # resample_counts' own blocks: 3 resamples
    y = np.random.default_rng(1).integers(0, 3, 50)
    whole = resample_counts(y, 97, np.random.default_rng(5), stratified)
    blocks = list(count_blocks(y, 97, np.random.default_rng(5), stratified, max_bytes=max_bytes))
    assert [start for start, _ in blocks] == np.cumsum([0] + [b.shape[0] for _, b in blocks[:-1]]).tolist()
    assert max(b.shape[0] for _, b in blocks) == min(97, max(3, max_bytes // (4 * 50 * 3) * 3))
    assert np.array_equal(whole, np.vstack([b for _, b in blocks]))
    assert all(b.dtype == np.int8 for _, b in blocks)  # the counts fit: the narrow type


def test_stratified_counts_keep_class_sizes():
    y = np.r_[[2] * 50, [0] * 7, [1] * 3, [2] * 10]  # unsorted, uneven classes
    counts = resample_counts(y, 500, np.random.default_rng(0))
    assert counts.shape == (500, y.size) and counts.dtype == np.int32
    for c, size in zip(*np.unique(y, return_counts=True)):
        assert (counts[:, y == c].sum(axis=1) == size).all()
    # each cell is Binomial(n_c, 1/n_c): mean 1, variance 1 - 1/n_c
    assert counts.mean() == pytest.approx(1.0)
    assert counts[:, y == 1].var() == pytest.approx(2 / 3, rel=0.1)


def test_unstratified_counts_keep_only_the_total():
    y = np.r_[[0] * 20, [1] * 20]
    counts = resample_counts(y, 400, np.random.default_rng(0), stratified=False)
    assert (counts.sum(axis=1) == 40).all()
    assert len(np.unique(counts[:, y == 1].sum(axis=1))) > 5
    assert counts.var() == pytest.approx(1 - 1 / 40, rel=0.1)


def test_seeded_reproducibility():
    y = np.random.default_rng(0).integers(0, 3, 100)
    a = resample_counts(y, 50, 123)
    assert np.array_equal(a, resample_counts(y, 50, np.random.default_rng(123)))
    assert not np.array_equal(a, resample_counts(y, 50, 124))
    assert np.array_equal(resample_counts(y, 50, 9, stratified=False), resample_counts(y, 50, 9, stratified=False))


def test_failed_resamples_counted_on_tiny_unbalanced_input():
    y = np.r_[np.zeros(9, bool), True]
    score = np.arange(10.0)
    counts = resample_counts(y, 2000, 42, stratified=False)
    s = summarise(weighted_auc(y, score, counts))
    lost = int((counts[:, 9] == 0).sum())  # draws without the one positive
    assert s["n_failed"] == lost and s["n_boot"] == 2000
    assert lost / 2000 == pytest.approx(0.9**10, abs=0.04)  # P(never drawn) = (9/10)^10 = 0.349
    assert summarise(weighted_auc(y, score, resample_counts(y, 2000, 42)))["n_failed"] == 0


def test_summarise_numbers():
    est = np.array([0.6, 0.7, np.nan, 0.8, 0.9, 0.75, np.inf])
    ok = est[np.isfinite(est)]
    s = summarise(est)
    assert s == {
        "se": pytest.approx(np.std(ok, ddof=1)),
        "ci_low": pytest.approx(np.percentile(ok, 2.5)),
        "ci_high": pytest.approx(np.percentile(ok, 97.5)),
        "n_boot": 7,
        "n_failed": 2,
    }
    empty = summarise([np.nan, np.nan])
    assert math.isnan(empty["se"]) and math.isnan(empty["ci_low"]) and empty["n_failed"] == 2
    assert math.isnan(summarise([0.5])["se"]) and summarise([0.5])["ci_low"] == 0.5


def test_bootstrap_se_agrees_with_delong():
    rng = np.random.default_rng(10)
    y = rng.random(400) < 0.4
    score = rng.normal(size=400) + y
    boot = summarise(weighted_auc(y, score, resample_counts(y.astype(int), 2000, rng)))
    assert boot["se"] == pytest.approx(math.sqrt(delong(y, score)[1]), rel=0.1)
    assert boot["n_failed"] == 0 and boot["ci_low"] < delong(y, score)[0] < boot["ci_high"]


def test_bad_counts_raise():
    y, s = np.array([0, 1, 1]), np.array([0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="integers"):
        weighted_auc(y, s, np.ones((2, 3)))
    with pytest.raises(ValueError, match="non-negative"):
        weighted_auc(y, s, -np.ones((2, 3), dtype=int))
    with pytest.raises(ValueError, match="shape"):
        weighted_auc(y, s, np.ones((2, 4), dtype=int))
    with pytest.raises(ValueError, match="shape"):
        bootstrap_macro_auc(y, np.ones((3, 2)), 2, np.ones(3, dtype=int))


def test_docstring_examples():
    result = doctest.testmod(bootstrap)
    assert result.attempted > 0 and result.failed == 0


def test_the_draws_are_the_stream_they_were():
    """The counts a seed gives are pinned (they decide every bootstrap number in the reports and the golden file):
    a faster tally must make the same draws in the same order."""
    y = [0, 0, 1, 1, 1, 2, 0, 1]
    assert resample_counts(y, 3, rng=0).tolist() == [
        [0, 2, 0, 0, 2, 1, 1, 2],
        [3, 0, 0, 0, 3, 1, 0, 1],
        [3, 0, 0, 1, 2, 1, 0, 1],
    ]
    assert resample_counts(y, 2, rng=0, stratified=False).tolist() == [
        [3, 0, 2, 0, 1, 1, 1, 0],
        [0, 1, 0, 0, 2, 2, 1, 2],
    ]


@pytest.mark.parametrize("stratified", [True, False])
def test_grouped_blocks_are_count_blocks_in_the_draws_column_order(monkeypatch, stratified):
    monkeypatch.setattr(bootstrap, "_CHUNK_CELLS", 60 * 4)
    rng = np.random.default_rng(2)
    y = rng.integers(0, 4, 60)
    probs = rng.dirichlet(np.ones(4), size=60)
    layout, grouped = bootstrap.grouped_count_blocks(y, 50, np.random.default_rng(8), stratified, max_bytes=4 * 60 * 8)
    blocks = list(count_blocks(y, 50, np.random.default_rng(8), stratified, max_bytes=4 * 60 * 8))
    assert sorted(layout.column.tolist()) == list(range(60))
    for (start, g), (same_start, b) in zip(grouped, blocks, strict=True):
        assert start == same_start and g.dtype == b.dtype == np.int8
        assert np.array_equal(g[:, layout.column], b)
        # the statistics gather through the columns: the same floats as from the row-ordered block
        assert np.array_equal(
            bootstrap.macro_auc_of_counts(y, probs, 4, layout.column)(g),
            bootstrap.macro_auc_of_counts(y, probs, 4)(b),
            equal_nan=True,
        )


class _AllZeros:
    """A generator whose every draw is the stratum's first member: that member's count is the stratum's size."""

    def integers(self, low, high, size):
        return np.zeros(size, dtype=np.int64)


def test_a_count_above_int8_widens_the_block():
    y = np.r_[np.zeros(200, dtype=int), np.ones(3, dtype=int)]
    layout = bootstrap._Layout(y, stratified=True)
    counts = bootstrap._tally(layout, 2, _AllZeros(), np.empty((2, 203), dtype=np.int8))
    assert counts.dtype == np.int32 and counts[:, layout.column[0]].tolist() == [200, 200]
    assert counts[:, layout.column[200]].tolist() == [3, 3] and counts.sum() == 2 * 203
