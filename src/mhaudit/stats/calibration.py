"""Calibration: ECE/MCE, reliability data, Brier, NLL, vectorised bootstrap ECE; temperature scaling lives in
stats.temperature (its names are importable from here too) and the input checks in stats.calibration_inputs.

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

import numpy as np

from mhaudit.stats.bootstrap import check_counts
from mhaudit.stats.calibration_inputs import check_bins, check_labels, check_probs

# documented here first: softmax and the temperature fit stay importable from stats.calibration
from mhaudit.stats.temperature import cross_fitted_temperature, fit_temperature, log_softmax, softmax, stratified_folds

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
    p = check_probs(probs)
    return p, check_labels(y, *p.shape), check_bins(n_bins)


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
    p = check_probs(probs)
    y = check_labels(y, *p.shape)
    d = p.copy()
    d[np.arange(len(y)), y] -= 1.0
    return float(np.mean(np.sum(d * d, axis=1)))


def nll(probs, y) -> float:
    """Mean negative log-likelihood -log p_y, with p_y clipped below at 1e-15 (a zero costs 34.54, not inf).

    sklearn's log_loss clips at machine epsilon instead, so the two differ only where p_y < 1e-15.
    """
    p = check_probs(probs)
    y = check_labels(y, *p.shape)
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
