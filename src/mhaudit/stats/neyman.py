"""Neyman allocation of a labelling budget over strata, in whole items.

The variance of a stratified mean, Σ_h W_h² S_h² (1/n_h − 1/N_h), is smallest for n_h ∝ N_h S_h (Neyman
1934). Here each stratum also gets at least `minimum` items (two, so its variance can be estimated) and at
most its size; the rest is shared by Neyman's rule among the strata not at a bound, and the whole items by
largest remainder. `shrink` pulls each S_h toward the pool-wide mean S̄ = Σ N_h S_h / N, S_h ← shrink S̄ +
(1 − shrink) S_h: the allocation then mixes proportional (share `shrink`) and Neyman allocation, a
compromise that stays near proportional allocation's variance when the anticipated SDs are wrong.
"""

from __future__ import annotations

import numpy as np

__all__ = ["neyman_allocation", "stratified_variance"]


def neyman_allocation(sizes, sds, budget: int, *, minimum: int = 2, shrink: float = 0.0) -> np.ndarray:
    """Items to label per stratum (ints summing to `budget`). ValueError if the budget cannot be met."""
    sizes, sds = np.asarray(sizes, dtype=np.int64), np.asarray(sds, dtype=float)
    sds = shrink * (sizes * sds).sum() / sizes.sum() + (1 - shrink) * sds
    low = np.minimum(sizes, minimum)
    if budget > sizes.sum() or budget < low.sum():
        raise ValueError(f"a budget of {budget} must lie between {low.sum()} and the {sizes.sum()} items")
    # A stratum whose anticipated SD is 0 still gets its minimum; a tiny floor keeps the shares defined.
    share = sizes * np.maximum(sds, 1e-9)
    alloc = low.astype(float)
    free = np.ones(sizes.size, dtype=bool)
    for _ in range(sizes.size + 1):  # each pass fixes at least one stratum at a bound, or ends
        left = budget - alloc[~free].sum()
        target = np.where(free, left * share / share[free].sum(), alloc)
        over, under = free & (target > sizes), free & (target < low)
        if not over.any() and not under.any():
            alloc = target
            break
        bound = over if over.any() else under
        alloc[bound] = np.where(over, sizes, low)[bound]
        free &= ~bound
    whole = np.floor(alloc).astype(np.int64)
    room = whole < sizes
    order = np.argsort(-(alloc - whole) + np.where(room, 0, 2), kind="stable")  # largest remainder first
    whole[order[: budget - whole.sum()]] += 1
    return whole


def stratified_variance(sizes, sds, alloc) -> float:
    """Σ_h W_h² S_h² (1/n_h − 1/N_h): the variance of the stratified mean under the allocation."""
    sizes, sds, alloc = (np.asarray(a, dtype=float) for a in (sizes, sds, alloc))
    w = sizes / sizes.sum()
    return float((w**2 * sds**2 * (1 / alloc - 1 / sizes)).sum())
