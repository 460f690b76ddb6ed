"""Batched clustering agreement against scikit-learn, one call at a time."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_mutual_info_score, adjusted_rand_score, mutual_info_score

from mhaudit.stats.cluster_agreement import adjusted_rand_indices, contingency_tables, mutual_informations


def labelings(n: int, k: int, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A reference and `count` noisy copies, with the edge cases first: equal, relabelled, one cluster."""
    rng = np.random.default_rng(seed)
    reference = rng.integers(0, k, n)
    noisy = np.where(rng.random((count, n)) < 0.7, reference, rng.integers(0, k, (count, n)))
    noisy[0], noisy[1], noisy[2] = reference, (reference + 1) % k, 0
    return reference, noisy


@pytest.mark.parametrize("n, k", [(2, 2), (9, 3), (500, 4), (15_000, 3)])
def test_adjusted_rand_indices_equal_scikit_learn_exactly(n, k):
    reference, noisy = labelings(n, k, 25, seed=n)
    want = np.array([adjusted_rand_score(reference, labels) for labels in noisy])
    np.testing.assert_array_equal(adjusted_rand_indices(reference, noisy), want)
    assert adjusted_rand_indices(reference, noisy)[:2].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("n, k", [(9, 3), (500, 4), (15_000, 3)])
def test_mutual_informations_equal_scikit_learn(n, k):
    reference, noisy = labelings(n, k, 25, seed=n + 1)
    names = np.array(["reddit", "twitter", "bluesky", "forum"], dtype=object)[noisy]  # strings, as data-set names
    want = np.array([mutual_info_score(labels, reference) for labels in names])
    np.testing.assert_allclose(mutual_informations(names, reference), want, rtol=1e-12, atol=1e-15)
    assert mutual_informations(names, reference)[2] == 0.0  # one class: no information


def test_contingency_tables_count_pairs():
    tables = contingency_tables(np.array([0, 0, 1, 2]), np.array([[1, 1, 0, 0], [0, 1, 0, 1]]))
    assert tables.shape == (2, 3, 2)
    np.testing.assert_array_equal(tables[0], [[0, 2], [1, 0], [1, 0]])
    np.testing.assert_array_equal(tables[1], [[1, 1], [1, 0], [0, 1]])


@pytest.mark.parametrize("seed", range(5))
def test_permutation_ranks_of_mutual_information_are_those_of_ami(seed):
    """A permutation keeps both marginals, so AMI and MI order the permuted labelings alike."""
    rng = np.random.default_rng(seed)
    datasets = rng.integers(0, 3, 300)
    clusters = np.where(rng.random(300) < 0.15 * seed, datasets, rng.integers(0, 3, 300))
    shuffled = np.stack([datasets, *(datasets[rng.permutation(300)] for _ in range(60))])
    ami = np.array([adjusted_mutual_info_score(labels, clusters) for labels in shuffled])
    mi = mutual_informations(shuffled, clusters)
    assert np.count_nonzero(ami[1:] >= ami[0]) == np.count_nonzero(mi[1:] >= mi[0])
    np.testing.assert_array_equal(np.argsort(ami, kind="stable"), np.argsort(mi, kind="stable"))
