"""Temperature scaling (Guo et al. 2017): softmax of logits / T, and the T that minimises the mean NLL, on all
rows or cross-fitted over stratified folds so that no row's own label informs its temperature.

The names here are also importable from stats.calibration, where they were first documented.
"""

from __future__ import annotations

import warnings

import numpy as np

from mhaudit.stats.brent import bounded_minimum
from mhaudit.stats.calibration_inputs import check_labels, check_matrix, check_temperature

__all__ = ["softmax", "log_softmax", "fit_temperature", "stratified_folds", "cross_fitted_temperature"]


def log_softmax(logits, temperature: float = 1.0) -> np.ndarray:
    """Row-wise log softmax of logits / temperature (max-shifted, so large logits do not overflow)."""
    from scipy.special import logsumexp  # here: the audits never need scipy.special's import (~0.1 s)

    z = check_matrix(logits, "logits") / check_temperature(temperature)
    return z - logsumexp(z, axis=1, keepdims=True)


def softmax(logits, temperature: float = 1.0) -> np.ndarray:
    """Row-wise softmax of logits / temperature, computed stably."""
    z = check_matrix(logits, "logits") / check_temperature(temperature)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _mean_nll_logits(z: np.ndarray, y: np.ndarray, temperature: float) -> float:
    s = z / temperature
    top = s.max(axis=1, keepdims=True)  # plain log-sum-exp: scipy's costs ~1 ms a call in this hot loop
    lse = np.log(np.exp(s - top).sum(axis=1)) + top[:, 0]
    return float(np.mean(lse - s[np.arange(len(y)), y]))


def _nll_of_temperature(z: np.ndarray, y: np.ndarray):
    """T -> _mean_nll_logits(z, y, T), the same floats, with what does not depend on T computed once."""
    if z.shape[1] >= 8:  # numpy sums 8+ terms of a row pairwise; only the plain form keeps that order
        return lambda t: _mean_nll_logits(z, y, t)
    zt = np.ascontiguousarray(z.T)  # classes as rows: max and sum over classes become whole-row passes
    z_y = z[np.arange(len(y)), y]  # (z / T)[i, y_i] is z[i, y_i] / T

    def loss(temperature: float) -> float:
        s = zt / temperature
        top = s.max(axis=0)
        return float(np.mean(np.log(np.exp(s - top).sum(axis=0)) + top - z_y / temperature))

    return loss


def fit_temperature(logits, y, bounds: tuple[float, float] = (-5.0, 5.0)) -> float:
    """Temperature T* > 0 minimising the mean NLL of softmax(logits / T); bounds are on log T.

    Mean NLL is convex in 1/T, hence unimodal in log T, so the bounded Brent search finds the global
    minimum inside [exp(lo), exp(hi)]; a RuntimeWarning says when it sits at a bound (e.g. separable
    data, where NLL keeps falling as T -> 0). Log-probabilities work as logits (softmax(log p) = p);
    pass np.log(np.clip(p, 1e-15, 1)) since log 0 = -inf is rejected.

    Three rows with logits [2, 0], two labelled 0: the NLL is least at p(0) = 2/3, i.e. 2/T = log 2.

    >>> z = np.array([[2.0, 0.0], [2.0, 0.0], [2.0, 0.0]])
    >>> T = fit_temperature(z, np.array([0, 0, 1]))
    >>> round(T, 4), round(float(softmax(z, T)[0, 0]), 4)  # calibrated p = 2/3: T = 2 / log 2
    (2.8854, 0.6667)
    """
    z = check_matrix(logits, "logits")
    y = check_labels(y, *z.shape)
    lo, hi = (float(b) for b in bounds)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds on log T must be finite with lower < upper; got {bounds}")

    nll_at = _nll_of_temperature(z, y)  # ~7x faster per call: the search makes ~40 of them

    loss = lambda log_t: nll_at(np.exp(log_t))  # noqa: E731
    best, f_best = bounded_minimum(loss, lo, hi, xatol=1e-10, maxiter=500)  # scipy's bounded Brent, step for step
    # Brent never evaluates the end points, and a loss flat in floating point (separable data) can stop
    # it inside; so compare with the bounds themselves and say when the minimum is there.
    f_lo, f_hi = loss(lo), loss(hi)
    edge = lo if f_lo <= f_hi else hi
    if min(f_lo, f_hi) <= f_best:
        warnings.warn(
            f"the NLL is least at the bound log T = {edge:g} of {bounds} and may keep falling "
            "beyond it; T is returned at that bound",
            RuntimeWarning,
            stacklevel=2,
        )
        return float(np.exp(edge))
    return float(np.exp(best))


def stratified_folds(y, k: int = 5, seed: int = 0) -> np.ndarray:
    """Fold index in [0, k) for each row: each class shuffled (seeded) and dealt round-robin.

    The deal continues across classes, so fold sizes differ by at most one and every class is
    split as evenly as its count allows.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D; got shape {y.shape}")
    if int(k) != k or k < 2 or k > len(y):
        raise ValueError(f"k must be an integer in [2, n = {len(y)}]; got {k}")
    rng = np.random.default_rng(seed)
    dealt = np.concatenate([rng.permutation(np.flatnonzero(y == cls)) for cls in np.unique(y)])
    fold = np.empty(len(y), dtype=np.int64)
    fold[dealt] = np.arange(len(y)) % k
    return fold


def cross_fitted_temperature(
    logits, y, k: int = 5, seed: int = 0, bounds: tuple[float, float] = (-5.0, 5.0)
) -> tuple[np.ndarray, np.ndarray]:
    """Calibrated probs (n, c) where each row uses the T fitted on the other k-1 folds; and the k temperatures.

    Folds are stratified_folds(y, k, seed), so a row's own label never informs its temperature.
    """
    z = check_matrix(logits, "logits")
    y = check_labels(y, *z.shape)
    fold = stratified_folds(y, k, seed)
    probs = np.empty_like(z)
    temps = np.empty(k)
    for f in range(k):
        held = fold == f
        temps[f] = fit_temperature(z[~held], y[~held], bounds)
        probs[held] = softmax(z[held], temps[f])
    return probs, temps
