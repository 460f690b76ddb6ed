"""stats.neyman: the allocation against a brute force over every integer allocation of small problems."""

import itertools

import numpy as np
import pytest

from mhaudit.stats.neyman import neyman_allocation, stratified_variance


def _brute_force(sizes, sds, budget, minimum):
    best = None
    for alloc in itertools.product(*[range(min(minimum, n), n + 1) for n in sizes]):
        if sum(alloc) == budget:
            v = stratified_variance(sizes, sds, alloc)
            best = v if best is None else min(best, v)
    return best


@pytest.mark.parametrize("seed", range(12))
def test_within_one_percent_of_the_best_integer_allocation(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 30, size=4)
    sds = rng.uniform(0.0, 0.5, size=4)
    budget = int(rng.integers(8, sizes.sum()))
    alloc = neyman_allocation(sizes, sds, budget)
    assert alloc.sum() == budget and (alloc >= np.minimum(sizes, 2)).all() and (alloc <= sizes).all()
    assert stratified_variance(sizes, sds, alloc) <= _brute_force(sizes, sds, budget, 2) * 1.01 + 1e-12


def test_proportional_to_size_times_sd_away_from_the_bounds():
    alloc = neyman_allocation([1000, 1000, 2000], [0.1, 0.3, 0.2], 300)  # 37.5, 112.5, 150
    assert alloc.tolist() in ([38, 112, 150], [37, 113, 150])


def test_a_small_stratum_is_taken_whole_and_the_rest_reshared():
    alloc = neyman_allocation([5, 1000, 1000], [5.0, 0.1, 0.1], 100)  # Neyman asks 11 of the 5
    assert sorted(alloc.tolist()) == [5, 47, 48] and alloc[0] == 5
    assert neyman_allocation([5, 1000, 1000], [0.5, 0.1, 0.1], 100)[0] == 2  # asks 1.2: the minimum


def test_budget_outside_the_bounds_is_refused():
    with pytest.raises(ValueError, match="between"):
        neyman_allocation([3, 3], [0.1, 0.1], 7)
    with pytest.raises(ValueError, match="between"):
        neyman_allocation([3, 3, 3], [0.1, 0.1, 0.1], 5)
