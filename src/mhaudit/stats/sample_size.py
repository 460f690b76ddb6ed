"""How many labels a confidence interval of ± tolerance needs, with the finite-population correction.

On a pool of N items, a design-based estimate from n labels drawn without replacement has a variance that
shrinks as (1/n − 1/N), not 1/n: labelling the whole pool leaves no sampling error. A half-width h at n
labels is c·sqrt(1/n − 1/N), so the labels that reach ± tol solve c·sqrt(1/n − 1/N) = tol,

    n* = 1 / (tol² / c² + 1 / N),    c² = h² / (1/n − 1/N),

which is at most N. Leaving the correction out (n* = n (h / tol)²) overstates the labels needed, by more the
larger a share of the pool the sample already is: 330 instead of 245 for h = 0.0908 at 100 labels of a
pool of 655.

What a simple random sample of the same pool would need, estimated from a stratified sample: its variance is
S² (1/n − 1/N), S² the pool variance of the estimate's linearised value u, and S² has a design-unbiased
estimate from any stratified simple random sample with two labels or more per stratum (`pool_variance`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import t as student_t

from mhaudit.stats.ppi import label_coordinates, macro_f1_gradient
from mhaudit.stats.undefined import warn_undefined

__all__ = ["labels_for_tolerance", "pool_variance", "srs_half_width", "srs_labels_for_tolerance", "macro_f1_pool_sd"]


def labels_for_tolerance(half_width: float, n: int, pool_size: int, tolerance: float, *, fpc: bool = True) -> float:
    """The fewest labels, the design kept, for a half-width of at most `tolerance`, from a half-width
    `half_width` at `n` labels on a pool of `pool_size`: the n* solving c·sqrt(1/n* − 1/N) = tolerance, rounded
    up, capped at N. `fpc=False`: the width shrinks as 1/sqrt(n) (a pool taken as a sample of its platform),
    n (h / tol)², still capped at N. NaN (with a warning) when the half-width is not a number."""
    if not 0 < n <= pool_size or not tolerance > 0:
        raise ValueError(f"need 0 < n <= pool size and a positive tolerance, got n={n}, N={pool_size}, {tolerance}")
    if not math.isfinite(half_width):
        warn_undefined("labels needed undefined: the half-width at hand is not a number")
        return math.nan
    if fpc:
        if n == pool_size:
            return float(pool_size)  # a census: no sampling error left to shrink
        c2 = half_width**2 / (1 / n - 1 / pool_size)
        needed = 1 / (tolerance**2 / c2 + 1 / pool_size) if c2 > 0 else 0.0
    else:
        needed = n * (half_width / tolerance) ** 2
    return float(min(pool_size, max(1, math.ceil(needed - 1e-9))))  # 243.0000000001 is 243


def pool_variance(values, strata, sizes) -> float:
    """Design-unbiased estimate of the pool variance S² = Σ_i (u_i − ū)² / (N − 1) from a stratified simple
    random sample: `values` u of the labelled items, `strata` their stratum codes, `sizes` N_h per stratum.
    Σ u² is estimated by Σ_h N_h mean_h(u²) and ū² by ȳ_st² − v̂(ȳ_st), both unbiased, so their combination is
    (clipped at 0). NaN (with a warning) when a stratum has fewer than 2 labelled items."""
    u, strata, sizes = np.asarray(values, dtype=float), np.asarray(strata, dtype=np.int64), np.asarray(sizes, float)
    count = np.bincount(strata, minlength=sizes.size)
    if (count < 2).any():
        warn_undefined("pool variance undefined: a stratum has fewer than 2 labelled items")
        return math.nan
    big_n, w = sizes.sum(), sizes / sizes.sum()
    mean = np.bincount(strata, weights=u, minlength=sizes.size) / count
    square = np.bincount(strata, weights=u**2, minlength=sizes.size) / count
    s2 = (square - mean**2) * count / (count - 1)
    mean_st = (w * mean).sum()
    var_mean = (w**2 * s2 * (1 / count - 1 / sizes)).sum()
    total_square = (sizes * square).sum()
    return float(max(0.0, (total_square - big_n * (mean_st**2 - var_mean)) / (big_n - 1)))


def srs_half_width(sd: float, n: int, pool_size: int, level: float = 0.95, *, fpc: bool = True) -> float:
    """The Student-t (n − 1 df) half-width of a simple random sample's mean of n of N items whose pool standard
    deviation is `sd`: t·sd·sqrt(1/n − 1/N) (`fpc=False`: t·sd/sqrt(n))."""
    return float(student_t.ppf(0.5 + level / 2, n - 1) * sd * math.sqrt(1 / n - (1 / pool_size if fpc else 0)))


def srs_labels_for_tolerance(
    sd: float, pool_size: int, tolerance: float, level: float = 0.95, *, fpc: bool = True
) -> float:
    """The fewest labels n (2..N) whose simple random sample gives a Student-t interval (n − 1 df) of at most
    ± tolerance, `srs_half_width` ≤ tolerance, for a pool standard deviation `sd`; NaN (with a warning) when sd
    is not a number. The half-width falls as n grows, so a bisection finds it."""
    if not math.isfinite(sd):
        warn_undefined("labels needed undefined: the pool's standard deviation is not a number")
        return math.nan

    def fits(n: int) -> bool:
        return n >= pool_size or srs_half_width(sd, n, pool_size, level, fpc=fpc) <= tolerance

    low, high = 2, max(2, pool_size)  # fits(high) always
    if fits(low):
        return float(low)
    while high - low > 1:  # fits(high), not fits(low)
        mid = (low + high) // 2
        low, high = (low, mid) if fits(mid) else (mid, high)
    return float(high)


def macro_f1_pool_sd(y, pred, strata, labelled, k: int) -> float:
    """The pool standard deviation of macro-F1's linearised value under labels-only simple random sampling,
    a·z_i (z the true-positive and true-class indicators, a the gradient at the design-weighted tallies, the
    predicted shares known), estimated from the labelled items of a stratified sample (`strata`: codes of every
    pooled item; `labelled`: a mask; `y`: true classes where labelled). NaN (with a warning) when macro-F1 or
    `pool_variance` is undefined."""
    pred, strata, labelled = np.asarray(pred), np.asarray(strata, dtype=np.int64), np.asarray(labelled, bool)
    sizes = np.bincount(strata).astype(float)
    z = label_coordinates(np.asarray(y)[labelled], pred[labelled], k)
    codes = strata[labelled]
    count = np.bincount(codes, minlength=sizes.size)
    means = np.stack([z[codes == h].mean(axis=0) if count[h] else np.zeros(2 * k) for h in range(sizes.size)])
    mu = (sizes / sizes.sum()) @ means  # design-weighted tallies: true positives, then true class, per class
    grad = macro_f1_gradient(mu[:k], mu[k:], np.bincount(pred, minlength=k) / pred.size)
    if not np.isfinite(grad).all():
        warn_undefined("the pool SD of macro-F1 is undefined: a class has no true and no predicted item")
        return math.nan
    return math.sqrt(pool_variance(z @ grad, codes, sizes))  # NaN (with its warning) stays NaN
