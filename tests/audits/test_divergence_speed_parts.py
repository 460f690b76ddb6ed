"""The faster robustness stage gives the numbers of the one-at-a-time code it replaced: batched K-means
against scikit-learn's KMeans, the phenotype table against the loop it replaced, `fit_many` against fitting
each channel alone, and the shared feature memo against fresh featurisation. (The whole audit is checked by
tests/test_golden_demo.py, whose tables the previous code wrote, and on the real data by
benchmarks/divergence_real.py.)"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_mutual_info_score, adjusted_rand_score

from mhaudit.audits.divergence.extras import phenotypes
from mhaudit.audits.divergence.fitting import (
    ChannelFit,
    _best_threshold,
    _configs,
    _fit,
    _held_out_prob,
    combine,
    fit_many,
)
from mhaudit.audits.divergence.kmeans import _kmeans_plusplus, _same_clustering, _uniform_choice, bootstrap_kmeans


def blobs(n: int, seed: int, spread: float = 1.0) -> np.ndarray:
    """tanh-squashed features in three overlapping groups, like channel C's."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, 12)) * spread
    return np.tanh(centres[rng.integers(0, 3, n)] + rng.normal(size=(n, 12)))


def resamples(n: int, count: int, seed: int) -> tuple[list[np.ndarray], list[int]]:
    rng = np.random.default_rng(seed)
    rows, seeds = [], []
    for _ in range(count):
        rows.append(rng.integers(0, n, size=n))
        seeds.append(int(rng.integers(1 << 31)))
    return rows, seeds


def test_seeding_is_scikit_learns_kmeans_plusplus():
    x = blobs(400, seed=1)
    rows = np.random.default_rng(2).integers(0, 400, 400)
    sample = x[rows] - x[rows].mean(axis=0)  # KMeans seeds on the centred resample
    theirs = np.random.RandomState(7)
    draws = np.random.RandomState(7).random_sample(3 * 7).reshape(3, 7)  # one state, restart after restart
    got = _kmeans_plusplus(x, np.einsum("ij,ij->i", x, x), np.stack([rows] * 3), 3, draws)
    for restart in range(3):
        want = kmeans_plusplus(sample, 3, random_state=theirs)[0] + x[rows].mean(axis=0)
        np.testing.assert_allclose(got[restart], want, rtol=0, atol=1e-12)


def test_uniform_choice_is_random_states():
    for seed in range(50):
        n = 1 + 97 * seed
        want = np.random.RandomState(seed).choice(n, p=np.ones(n) / n)
        assert _uniform_choice(np.random.RandomState(seed).random_sample(1), n)[0] == want


@pytest.mark.parametrize("n, spread, k", [(600, 1.0, 3), (900, 0.3, 3), (300, 2.0, 4)])
def test_bootstrap_kmeans_labels_equal_kmeans_on_each_resample(n, spread, k):
    x = blobs(n, seed=n, spread=spread)
    rows, seeds = resamples(n, 12, seed=3)
    ours = bootstrap_kmeans(x, rows, seeds, k=k, n_init=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for b in range(len(rows)):
            want = KMeans(k, n_init=3, random_state=seeds[b]).fit(x[rows[b]]).predict(x)
            np.testing.assert_array_equal(ours[b], want)


def test_max_iter_and_tolerance_stops_as_kmeans():
    x = blobs(500, seed=4, spread=0.2)  # hardly separated: many steps, some runs stop on max_iter
    rows, seeds = resamples(500, 6, seed=5)
    for max_iter, tol in ((2, 1e-4), (300, 1e-1)):
        ours = bootstrap_kmeans(x, rows, seeds, max_iter=max_iter, tol=tol)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for b in range(len(rows)):
                want = KMeans(3, n_init=3, random_state=seeds[b], max_iter=max_iter, tol=tol).fit(x[rows[b]]).predict(x)
                np.testing.assert_array_equal(ours[b], want)


def test_same_clustering_is_kmeans_test():
    assert _same_clustering(np.array([0, 0, 1, 2]), np.array([2, 2, 0, 1]), 3)
    assert not _same_clustering(np.array([0, 0, 1, 2]), np.array([2, 1, 0, 1]), 3)
    assert _same_clustering(np.array([0, 1, 2]), np.array([1, 1, 1]), 3)  # KMeans only maps a's labels


def old_phenotypes(features, datasets, *, k=3, n_boot=100, n_perm=200, seed=0):
    """The implementation `phenotypes` replaced: one KMeans per resample, AMI on the names."""
    rng = np.random.default_rng(seed)
    labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit(features).labels_
    ari = np.empty(n_boot)
    for b in range(n_boot):
        rows = rng.integers(0, features.shape[0], size=features.shape[0])
        refit = KMeans(n_clusters=k, n_init=3, random_state=int(rng.integers(1 << 31))).fit(features[rows])
        ari[b] = adjusted_rand_score(labels, refit.predict(features))
    ami = adjusted_mutual_info_score(datasets, labels)
    perm = np.array([adjusted_mutual_info_score(rng.permutation(datasets), labels) for _ in range(n_perm)])
    return ari, ami, (np.count_nonzero(perm >= ami) + 1) / (n_perm + 1)


@pytest.mark.parametrize("spread", [1.5, 0.0])  # clusters tied to the data sets, and none at all
def test_phenotype_table_equals_the_replaced_loop(spread):
    x = blobs(450, seed=9, spread=1.0)
    rng = np.random.default_rng(10)
    datasets = np.array(["forum", "tweets", "tweets_auto"], dtype=object)[rng.integers(0, 3, 450)]
    x = x + spread * (datasets == "forum")[:, None]
    summary, sizes = phenotypes(x, datasets, n_boot=20, n_perm=50, seed=3)
    ari, ami, ami_p = old_phenotypes(x, datasets, n_boot=20, n_perm=50, seed=3)
    row = summary.iloc[0]
    assert row["bootstrap_ari_mean"] == ari.mean() and row["ari_ci_low"] == np.percentile(ari, 2.5)
    assert row["ari_ci_high"] == np.percentile(ari, 97.5)
    assert row["ami_dataset"] == ami and row["ami_p"] == ami_p
    assert sizes.drop(columns="cluster").to_numpy().sum() == 450


def test_fit_many_equals_each_channel_fitted_alone():
    """Out-of-fold fits in a shared pool, finals in this process: every threshold, config, weight and score
    as one fit_channel at a time (OOF fits, best tuned Macro-F1, final fit) gives them."""
    rng = np.random.default_rng(11)
    fits = []
    for n in (240, 180):  # two training sets, as leave-one-domain-out has
        y = rng.integers(0, 2, n)
        blocks = {
            "A": rng.random((n, 30)) + 0.3 * y[:, None],
            "B": rng.normal(size=(n, 6)) + 0.5 * y[:, None],
            "C": np.tanh(rng.normal(size=(n, 15)) + 0.2 * y[:, None]),
        }
        fits += [ChannelFit(name, blocks, y, np.arange(n) % 5) for name in ("A", "C", "BC", "AB")]
    for f, model in zip(fits, fit_many(fits, n_jobs=2)):
        x = combine(f.blocks, model.letters)
        best = None
        for config in _configs(model.letters):
            prob = np.empty(f.y.size)
            for k in range(5):
                prob[f.folds == k] = _held_out_prob(x, f.y, f.folds == k, config)
            threshold, score = _best_threshold(f.y, prob)
            if best is None or score > best[2] + 1e-12:
                best = (config, threshold, score)
        assert (model.config, model.threshold, model.oof_macro_f1) == best
        _, alone = _fit(x, f.y, best[0])
        np.testing.assert_array_equal(model.model.coef_, alone.coef_)
        np.testing.assert_array_equal(model.train_mean, x.mean(axis=0))


def test_fit_many_of_nothing():
    assert fit_many([]) == []


def test_memo_features_equal_fresh_ones():
    """A view built with the audit's memo (after another view filled it) equals one built from scratch."""
    pytest.importorskip("spacy")
    from mhaudit.audits.divergence.design import build_design
    from mhaudit.audits.divergence.fitting import stratified_folds
    from mhaudit.audits.divergence.views import FeatureMemo, build_view
    from mhaudit.synthetic.simulate_divergence import DivergenceConfig, simulate_divergence

    corpus = simulate_divergence(
        DivergenceConfig(n_forum=240, n_tweets_gold=60, n_tweets_auto=60, n_forum_auto=60, seed=4)
    )
    design = build_design(
        corpus.frame,
        corpus.classes,
        ["synthetic_forum", "synthetic_tweets_gold"],
        ["synthetic_tweets_auto", "synthetic_forum_auto"],
    )
    folds = stratified_folds(design.y_train, 5, 0)
    memo = FeatureMemo()
    build_view(design, ("A", "C"), "none", design.human + design.auto, folds, memo=memo)
    rows = np.arange(len(design.train)) % 3 != 0  # a subset of the same texts, as leave-one-domain-out fits
    sub = type(design)(
        design.train_dataset,
        design.positive,
        design.train[rows].reset_index(drop=True),
        {d: design.evaluation[d] for d in design.human},
        {d: "human" for d in design.human},
    )
    sub_folds = stratified_folds(sub.y_train, 5, 0)
    shared = build_view(sub, ("A", "B", "C"), "none", sub.human, sub_folds, memo=memo)
    fresh = build_view(sub, ("A", "B", "C"), "none", sub.human, sub_folds)
    for letter in ("A", "B", "C"):
        np.testing.assert_array_equal(shared.train[letter], fresh.train[letter])
        for d in sub.human:
            np.testing.assert_array_equal(shared.evaluation[d][letter], fresh.evaluation[d][letter])
    assert shared.feature_names == fresh.feature_names
