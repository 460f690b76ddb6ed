"""The author-clustered bootstrap (stats.bootstrap.resample_clusters) and the agreement statistics using it."""

import numpy as np
import pandas as pd
import pytest

from mhaudit.stats.agreement import bootstrap_kappa, cohen_kappa, krippendorff_alpha
from mhaudit.stats.bootstrap import resample_clusters
from mhaudit.stats.weak_metrics import weak_vs_reference


def authored(rng, n_authors=40, per_author=8):
    """Two annotators' labels of posts whose class and difficulty depend on the author (synthetic): an
    author's posts share a positive rate (Beta(0.5, 0.5)), and 30% of authors are hard to read (35% of
    labels flipped, against 3%)."""
    rate = rng.beta(0.5, 0.5, n_authors)
    flip = np.where(rng.uniform(size=n_authors) < 0.3, 0.35, 0.03)
    author = np.repeat(np.arange(n_authors), per_author)
    truth = (rng.uniform(size=author.size) < rate[author]).astype(int)

    def annotate():
        return np.where(rng.uniform(size=author.size) < flip[author], 1 - truth, truth)

    return annotate(), annotate(), author


def test_cluster_bootstrap_se_matches_the_true_sampling_sd_where_the_item_bootstrap_is_too_narrow():
    rng = np.random.default_rng(0)
    true_sd = np.std([cohen_kappa(*authored(rng)[:2]) for _ in range(1000)], ddof=1)
    item_se, cluster_se = [], []
    for _ in range(40):
        a, b, author = authored(rng)
        item_se.append(bootstrap_kappa(a, b, n_boot=500, rng=rng)["se"])
        cluster_se.append(bootstrap_kappa(a, b, n_boot=500, rng=rng, clusters=author)["se"])
    # seen: true SD 0.070, item-bootstrap SE 0.043, cluster-bootstrap SE 0.069
    assert 0.85 < np.mean(cluster_se) / true_sd < 1.15
    assert np.mean(item_se) / true_sd < 0.75


def test_clusters_are_drawn_whole_with_multinomial_frequencies():
    c = np.eye(2)[[0, 0, 1, 1, 1]]  # author a wrote two items of cell 0, author b three of cell 1
    tables = resample_clusters(c, ["a", "a", "b", "b", "b"], n_boot=8000, rng=1)
    seen = pd.Series([tuple(t) for t in tables.tolist()]).value_counts(normalize=True)
    assert set(seen.index) == {(4.0, 0.0), (2.0, 3.0), (0.0, 6.0)}  # aa, ab, bb
    assert seen[(2.0, 3.0)] == pytest.approx(0.5, abs=0.02) and seen[(4.0, 0.0)] == pytest.approx(0.25, abs=0.02)


def test_strata_keep_their_number_of_clusters():
    strata = np.repeat([0, 1], 12)
    author = np.repeat(np.arange(8), 3)  # 4 authors per stratum, 3 items each
    tables = resample_clusters(np.eye(2)[strata], author, n_boot=500, rng=2, strata=strata)
    assert (tables == 12).all()  # each stratum draws its 4 authors' worth of items every time
    # An author in two strata is a cluster in each: the strata still keep their sizes.
    tables = resample_clusters(np.eye(2)[strata], np.zeros(24, dtype=int), n_boot=200, rng=2, strata=strata)
    assert (tables == 12).all()


def test_one_item_per_cluster_is_the_item_bootstrap():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2, 300)
    b = np.where(rng.uniform(size=300) < 0.8, a, 1 - a)
    item = bootstrap_kappa(a, b, n_boot=4000, rng=4)
    single = bootstrap_kappa(a, b, n_boot=4000, rng=5, clusters=np.arange(300))
    assert single["estimate"] == item["estimate"]
    assert single["se"] == pytest.approx(item["se"], rel=0.08)
    assert single["ci_low"] == pytest.approx(item["ci_low"], abs=0.02)


def test_weak_metrics_and_alpha_use_the_same_clusters():
    rng = np.random.default_rng(6)
    a, b, author = authored(rng)
    metrics, _ = weak_vs_reference(a, b, n_boot=300, rng=7, clusters=author)
    kappa = bootstrap_kappa(a, b, labels=[0, 1], n_boot=300, rng=7, clusters=author)
    row = metrics.set_index("metric").loc["kappa"]
    assert row["estimate"] == pytest.approx(kappa["estimate"])
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((kappa["ci_low"], kappa["ci_high"]))  # same draws
    weighted, _ = weak_vs_reference(a, b, n_boot=300, rng=7, clusters=author, weights=np.full(a.size, 2.0), strata=a)
    assert weighted.set_index("metric").loc["kappa", "estimate"] == pytest.approx(kappa["estimate"])
    item = krippendorff_alpha(np.vstack([a, b]), n_boot=500, rng=8)
    clustered = krippendorff_alpha(np.vstack([a, b]), n_boot=500, rng=8, clusters=author)
    assert clustered["estimate"] == item["estimate"] and clustered["se"] > 1.2 * item["se"]
