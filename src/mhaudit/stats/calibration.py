"""Calibration: ECE/MCE, reliability data, Brier, NLL, temperature scaling, vectorised bootstrap ECE.

Inputs are `probs` (n, c) rows summing to 1, or `logits` (n, c), and integer labels `y` in [0, c).

Binning convention (every binned statistic here): M equal-width bins with edges
``np.linspace(0, 1, M + 1)``; a score s goes to bin ``np.digitize(s, edges[1:-1])``, i.e. bins are
[lo, hi) and the last one is closed at 1.0. A score exactly on an interior edge goes UP: 0.1 is in
bin 1 (of 10), 0.5 in bin 5, 1.0 in bin 9, 0.0 in bin 0. "Exactly" means equal to the float edge:
linspace gives 0.30000000000000004, so the literal 0.3 stays in bin 2.
This is the rule of fairscope 0.3.0's ``multiclass_ece`` (its numbers agree to 1e-12). It is NOT
scikit-learn's: ``calibration_curve`` (1.9.1) uses ``np.searchsorted(edges[1:-1], s)`` (side='left'),
i.e. (lo, hi] with the first bin closed at 0 (also the interval written in Guo et al. 2017). The two
agree unless a score equals an interior edge, where sklearn puts it one bin lower; the tests pin both.

Top-label quantities use conf = max prob and correct = (argmax == y), argmax ties going to the lowest
class index (numpy's rule). ECE = sum_m (|B_m|/n) |acc(B_m) - conf(B_m)| = sum_m |sum_{i in B_m}
(correct_i - conf_i)| / n, which is the form the bootstrap uses: a resample with draw counts w gives
sum_m |sum_{i in B_m} w_i d_i| / sum(w) for the gap d, per-bin sums over the rows in bin order.
"""

from __future__ import annotations

import warnings

import numpy as np

from mhaudit.stats.bootstrap import check_counts
from mhaudit.stats.brent import bounded_minimum

ROW_SUM_TOL = 1e-6
NLL_CLIP = 1e-15

__all__ = [
    "softmax",
    "log_softmax",
    "ece",
    "mce",
    "classwise_ece",
    "brier",
    "nll",
    "reliability",
    "bootstrap_ece",
    "bootstrap_classwise_ece",
    "fit_temperature",
    "stratified_folds",
    "cross_fitted_temperature",
    "ece_unchecked",
    "mce_unchecked",
    "classwise_ece_unchecked",
    "reliability_unchecked",
    "ece_of_counts",
]


# --- validation ---------------------------------------------------------------------------------


def _check_matrix(a, name: str) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] < 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n_samples >= 1, n_classes >= 2); got shape {a.shape}")
    bad = ~np.isfinite(a)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(f"{name} contain NaN or inf ({int(bad.sum())} values; first at row {row}, column {col})")
    return a


def _check_probs(probs) -> np.ndarray:
    p = _check_matrix(probs, "probs")
    if p.min() < 0 or p.max() > 1:
        row = int(np.flatnonzero(((p < 0) | (p > 1)).any(axis=1))[0])
        raise ValueError(f"probs must lie in [0, 1]; row {row} does not")
    off = np.abs(p.sum(axis=1) - 1.0) > ROW_SUM_TOL
    if off.any():
        row = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"probs rows must sum to 1 within {ROW_SUM_TOL:g}; {int(off.sum())} rows do not, "
            f"the first is row {row} (sum {p[row].sum():.9g})"
        )
    return p


def _check_labels(y, n: int, c: int) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n:
        raise ValueError(f"y must be a 1-D array of {n} labels (one per row); got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        if not (np.issubdtype(y.dtype, np.floating) and np.all(y == np.round(y))):
            raise ValueError(f"y must hold integer class indices in [0, {c}); got dtype {y.dtype}")
        y = y.astype(np.int64)
    if y.min() < 0 or y.max() >= c:
        row = int(np.flatnonzero((y < 0) | (y >= c))[0])
        raise ValueError(f"y must hold class indices in [0, {c}); row {row} has {y[row]}")
    return y


def _check_bins(n_bins: int) -> int:
    if int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer; got {n_bins}")
    return int(n_bins)


def _check_temperature(temperature: float) -> float:
    if not np.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be a finite number > 0; got {temperature}")
    return float(temperature)


# --- softmax ------------------------------------------------------------------------------------


def log_softmax(logits, temperature: float = 1.0) -> np.ndarray:
    """Row-wise log softmax of logits / temperature (max-shifted, so large logits do not overflow)."""
    from scipy.special import logsumexp  # here: the audits never need scipy.special's import (~0.1 s)

    z = _check_matrix(logits, "logits") / _check_temperature(temperature)
    return z - logsumexp(z, axis=1, keepdims=True)


def softmax(logits, temperature: float = 1.0) -> np.ndarray:
    """Row-wise softmax of logits / temperature, computed stably."""
    z = _check_matrix(logits, "logits") / _check_temperature(temperature)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# --- binned statistics --------------------------------------------------------------------------


def _edges(n_bins: int) -> np.ndarray:
    return np.linspace(0.0, 1.0, n_bins + 1)


def _bin_index(score: np.ndarray, n_bins: int) -> np.ndarray:
    return np.digitize(score, _edges(n_bins)[1:-1])  # [lo, hi), last bin closed at 1.0


def _top_label(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return p.max(axis=1), (p.argmax(axis=1) == y).astype(float)


def _one_vs_rest(p: np.ndarray, y: np.ndarray, cls: int) -> tuple[np.ndarray, np.ndarray]:
    return p[:, cls], (y == cls).astype(float)


def _bin_sums(score, hit, n_bins):
    idx = _bin_index(score, n_bins)
    count = np.bincount(idx, minlength=n_bins)
    return count, np.bincount(idx, weights=score, minlength=n_bins), np.bincount(idx, weights=hit, minlength=n_bins)


def _ece(score, hit, n_bins) -> float:
    idx = _bin_index(score, n_bins)
    return float(np.abs(np.bincount(idx, weights=hit - score, minlength=n_bins)).sum() / len(score))


def _inputs(probs, y, n_bins):
    p = _check_probs(probs)
    return p, _check_labels(y, *p.shape), _check_bins(n_bins)


def ece(probs, y, n_bins: int = 10) -> float:
    """Top-label expected calibration error: sum_m (|B_m|/n) |acc(B_m) - conf(B_m)|.

    Rows 1-2 land in bin [0.8, 0.9) with confidence 0.85 and one correct (accuracy 0.5); row 3
    lands in [0.6, 0.7) with confidence 0.6 and is correct:
    ECE = (2/3)|0.5 - 0.85| + (1/3)|1 - 0.6| = 0.3667.

    >>> p = np.array([[0.85, 0.15], [0.15, 0.85], [0.4, 0.6]])
    >>> round(ece(p, np.array([0, 0, 1])), 4)
    0.3667
    """
    return ece_unchecked(*_inputs(probs, y, n_bins))


def ece_unchecked(p: np.ndarray, y: np.ndarray, n_bins: int) -> float:
    """Top-label ECE (`ece`) for inputs validated at the door (probabilities, class codes, a bin count): no checks."""
    return _ece(*_top_label(p, y), n_bins)


def mce(probs, y, n_bins: int = 10) -> float:
    """Top-label maximum calibration error: max over non-empty bins of |acc(B_m) - conf(B_m)|."""
    return mce_unchecked(*_inputs(probs, y, n_bins))


def mce_unchecked(p: np.ndarray, y: np.ndarray, n_bins: int) -> float:
    """Top-label MCE (`mce`) for inputs validated at the door: no checks."""
    count, s_score, s_hit = _bin_sums(*_top_label(p, y), n_bins)
    full = count > 0
    return float(np.max(np.abs(s_hit[full] - s_score[full]) / count[full]))


def classwise_ece(probs, y, n_bins: int = 10) -> np.ndarray:
    """One-vs-rest ECE per class: ECE of probs[:, k] against 1[y == k], shape (c,).

    Defined for every class, also one absent from y (then it measures how far probs[:, k] is from 0).
    """
    return classwise_ece_unchecked(*_inputs(probs, y, n_bins))


def classwise_ece_unchecked(p: np.ndarray, y: np.ndarray, n_bins: int) -> np.ndarray:
    """One-vs-rest ECE per class (`classwise_ece`) for inputs validated at the door: no checks."""
    return np.array([_ece(*_one_vs_rest(p, y, k), n_bins) for k in range(p.shape[1])])


def reliability(probs, y, n_bins: int = 10, cls: int | None = None) -> dict[str, np.ndarray]:
    """Per-bin data for a reliability diagram, each array of length n_bins.

    Keys: lower, upper (bin edges), count, confidence (mean score), accuracy (observed frequency);
    confidence and accuracy are NaN in empty bins. cls=None uses the top label (max prob vs correct);
    cls=k uses probs[:, k] vs 1[y == k], the one-vs-rest curve sklearn's calibration_curve draws.
    """
    p, y, n_bins = _inputs(probs, y, n_bins)
    if cls is not None and not 0 <= cls < p.shape[1]:
        raise ValueError(f"cls must be None or a class index in [0, {p.shape[1]}); got {cls}")
    return reliability_unchecked(p, y, n_bins, cls)


def reliability_unchecked(p: np.ndarray, y: np.ndarray, n_bins: int, cls: int | None = None) -> dict[str, np.ndarray]:
    """Reliability-diagram bins (`reliability`) for inputs validated at the door: no checks."""
    score, hit = _top_label(p, y) if cls is None else _one_vs_rest(p, y, cls)
    count, s_score, s_hit = _bin_sums(score, hit, n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf, acc = s_score / count, s_hit / count
    edges = _edges(n_bins)
    return {"lower": edges[:-1], "upper": edges[1:], "count": count, "confidence": conf, "accuracy": acc}


# --- proper scores ------------------------------------------------------------------------------


def brier(probs, y) -> float:
    """Multi-class Brier score (Brier 1950): mean over rows of sum_k (p_k - 1[y = k])^2, in [0, 2].

    For two classes this is twice sklearn's binary brier_score_loss(y, probs[:, 1]).
    """
    p = _check_probs(probs)
    y = _check_labels(y, *p.shape)
    d = p.copy()
    d[np.arange(len(y)), y] -= 1.0
    return float(np.mean(np.sum(d * d, axis=1)))


def nll(probs, y) -> float:
    """Mean negative log-likelihood -log p_y, with p_y clipped below at 1e-15 (a zero costs 34.54, not inf).

    sklearn's log_loss clips at machine epsilon instead, so the two differ only where p_y < 1e-15.
    """
    p = _check_probs(probs)
    y = _check_labels(y, *p.shape)
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y], NLL_CLIP, 1.0))))


# --- vectorised bootstrap -----------------------------------------------------------------------

# Resamples are weighted a block at a time: extra memory stays ~1 MiB and the block stays in cache.
_BLOCK_BYTES = 2**20
_MIN_BLOCK_ROWS = 8


def _check_counts(counts, n: int) -> np.ndarray:
    w = check_counts(counts, n)
    empty = w.sum(axis=1) == 0
    if empty.any():
        raise ValueError(f"counts row {int(np.flatnonzero(empty)[0])} draws no example; a resample needs at least one")
    return w


def _bins(score, hit, n_bins) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows in bin order, where each non-empty bin starts in that order, and the gaps hit - score there."""
    idx = _bin_index(score, n_bins)
    order = np.argsort(idx, kind="stable")
    starts = np.flatnonzero(np.diff(idx[order], prepend=-1))
    return order, starts, (hit - score)[order]


def _weighted_abs_bins(w: np.ndarray, groups: list[tuple]) -> np.ndarray:
    """For each resample b and group g (`_bins` of one score): sum over bins of |sum_{i in bin} w_bi gap_i| / sum(w_b).

    Sums per bin with np.add.reduceat over the rows in bin order, not a BLAS product with a one-hot matrix:
    on 2 cores OpenBLAS threads spin against any other load (seen: 9 s instead of 0.4 s for 40 groups), and
    the last digit no longer depends on the BLAS thread count."""
    n_boot, n = w.shape
    out = np.empty((n_boot, len(groups)))
    step = max(_MIN_BLOCK_ROWS, _BLOCK_BYTES // (8 * n))
    for start in range(0, n_boot, step):
        wb = w[start : start + step]
        total = wb.sum(axis=1, keepdims=True)
        for g, (order, starts, gaps) in enumerate(groups):
            per_bin = np.add.reduceat(np.take(wb, order, axis=1) * gaps, starts, axis=1)
            out[start : start + step, g] = (np.abs(per_bin) / total).sum(axis=1)
    return out


def bootstrap_ece(probs, y, counts, n_bins: int = 10) -> np.ndarray:
    """Top-label ECE of each resample given its draw counts, shape (n_boot,).

    counts[b, i] is how often row i is drawn in resample b (e.g. one multinomial(n, 1/n) row);
    the result equals ece(probs[idx_b], y[idx_b]) for idx_b = np.repeat(np.arange(n), counts[b]),
    computed without materialising the resamples.
    """
    p, y, n_bins = _inputs(probs, y, n_bins)
    return ece_of_counts(p, y, n_bins)(_check_counts(counts, len(y)))


def ece_of_counts(p: np.ndarray, y: np.ndarray, n_bins: int, columns: np.ndarray | None = None):
    """Each resample's top-label ECE as a function of its draw counts, `bootstrap_ece` on checked inputs binned
    once, for blocks of counts whose column `columns[i]` is example i's (default i; bootstrap.grouped_count_blocks)."""
    order, starts, gaps = _bins(*_top_label(p, y), n_bins)
    bins = [(order if columns is None else columns[order], starts, gaps)]
    return lambda counts: _weighted_abs_bins(counts, bins)[:, 0]


def bootstrap_classwise_ece(probs, y, counts, n_bins: int = 10) -> np.ndarray:
    """One-vs-rest ECE of every class for each resample, shape (n_boot, c); see bootstrap_ece."""
    p, y, n_bins = _inputs(probs, y, n_bins)
    w = _check_counts(counts, len(y))
    return _weighted_abs_bins(w, [_bins(*_one_vs_rest(p, y, k), n_bins) for k in range(p.shape[1])])


# --- temperature scaling ------------------------------------------------------------------------


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
    z = _check_matrix(logits, "logits")
    y = _check_labels(y, *z.shape)
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
    z = _check_matrix(logits, "logits")
    y = _check_labels(y, *z.shape)
    fold = stratified_folds(y, k, seed)
    probs = np.empty_like(z)
    temps = np.empty(k)
    for f in range(k):
        held = fold == f
        temps[f] = fit_temperature(z[~held], y[~held], bounds)
        probs[held] = softmax(z[held], temps[f])
    return probs, temps
