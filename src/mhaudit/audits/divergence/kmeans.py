"""Many K-means fits at once: the phenotype bootstrap, each resample fitted as scikit-learn's KMeans fits it.

The phenotype stability check refits K-means on 100 bootstrap resamples of ~15,000 rows, 3 restarts each.
One fit at a time, every Lloyd step streams all rows through a rows x 3 distance product, which is bound by
memory, not arithmetic (25 of the old robustness stage's 74 s). Here the restarts of all resamples step
together: one matrix product gives every row's distance to every centre of every restart, another every
centre's sum (full-width BLAS), and a restart leaves the batch when it converges.

Per resample this reproduces `KMeans(k, n_init=n_init, random_state=seed).fit(x[rows]).predict(x)`:
- the initial centres are scikit-learn's k-means++ (its `_kmeans_plusplus`, step for step) with the same
  RandomState draws, over the resample's rows in their drawn order, and the tolerance is KMeans's (tol x
  mean feature variance of the resample);
- Lloyd's steps stop as KMeans's do: labels unchanged (strict), else summed squared centre shift <= tol,
  else max_iter; without strict convergence a last assignment step follows;
- the best restart is the first with the lowest inertia, replaced only by a different clustering;
- every row of x is labelled by its nearest final centre.
A row drawn m times counts m times in a centre's sum and size, as its m copies do in KMeans. Distances are
taken in x's coordinates (KMeans centres the resample first) and summed in another floating-point order
than scikit-learn's Cython loop, so a row equidistant from two centres up to rounding could go either way
(tests/audits/test_divergence_kmeans.py compares labels with KMeans). A resample whose
restart empties a cluster (KMeans then moves a far row into it) is fitted by KMeans itself.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans

__all__ = ["bootstrap_kmeans"]


def _sq_distances(x: np.ndarray, norms: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Squared distances (centres x rows), clipped at 0, as scikit-learn's euclidean_distances computes them."""
    dist = np.einsum("ij,ij->i", centres, centres)[:, None] + norms[None, :] - 2.0 * (centres @ x.T)
    return np.maximum(dist, 0.0, out=dist)


def _uniform_choice(draws: np.ndarray, n: int) -> np.ndarray:
    """`RandomState.choice(n, p=np.ones(n) / n)` for each uniform draw it makes (its cdf, its searchsorted)."""
    cdf = (np.ones(n) / n).cumsum()
    cdf /= cdf[-1]
    return cdf.searchsorted(draws, side="right")


def _kmeans_plusplus(x: np.ndarray, norms: np.ndarray, rows: np.ndarray, k: int, draws: np.ndarray) -> np.ndarray:
    """scikit-learn's k-means++ seeding (greedy, 2 + log k trials per centre) of many restarts at once.

    rows: restarts x resample rows (x's rows in the resample's drawn order); draws: restarts x (1 + (k - 1) x
    trials), the uniform draws each restart's KMeans makes from its RandomState: one for `choice` of the first
    centre, then `uniform(size=trials)` for each further centre. Returns restarts x k x features."""
    runs, n = rows.shape
    trials = 2 + int(np.log(k))
    at = np.arange(runs)
    centres = np.empty((runs, k, x.shape[1]))
    first = rows[at, _uniform_choice(draws[:, 0], n)]
    centres[:, 0] = x[first]
    closest = np.take_along_axis(_sq_distances(x, norms, x[first]), rows, axis=1)
    potential = closest.sum(axis=1)
    for c in range(1, k):
        cumulative = np.cumsum(closest, axis=1)
        targets = draws[:, 1 + (c - 1) * trials : 1 + c * trials] * potential[:, None]
        candidates = (cumulative[:, None, :] < targets[:, :, None]).sum(axis=2)  # searchsorted, row by row
        np.clip(candidates, None, n - 1, out=candidates)
        ids = np.take_along_axis(rows, candidates, axis=1)  # restarts x trials
        far = _sq_distances(x, norms, x[ids.ravel()]).reshape(runs, trials, -1)
        dist = np.minimum(closest[:, None, :], np.take_along_axis(far, rows[:, None, :], axis=2))
        potentials = dist.sum(axis=2)
        best = np.argmin(potentials, axis=1)
        potential, closest = potentials[at, best], dist[at, best]
        centres[:, c] = x[ids[at, best]]
    return centres


def _starts(
    x: np.ndarray,
    norms: np.ndarray,
    resamples: list[np.ndarray],
    seeds: list[int],
    k: int,
    n_init: int,
    chunk: int = 60,
) -> np.ndarray:
    """The k-means++ starts of every restart (resample-major), `chunk` restarts at a time to bound memory.
    Each resample's RandomState is drawn from restart after restart, as in KMeans.fit."""
    per_restart = 1 + (k - 1) * (2 + int(np.log(k)))
    draws = np.concatenate(
        [np.random.RandomState(seed).random_sample(n_init * per_restart).reshape(n_init, -1) for seed in seeds]
    )
    rows = np.repeat(np.stack(resamples), n_init, axis=0)
    return np.concatenate(
        [
            _kmeans_plusplus(x, norms, rows[i : i + chunk], k, draws[i : i + chunk])
            for i in range(0, rows.shape[0], chunk)
        ]
    )


def _nearest(x: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centre of every row for each run (centres: runs x k x features) and its ||c||^2 - 2 x.c, both
    runs x rows: KMeans ranks centres by this and takes the first of equals."""
    runs, k, p = centres.shape
    flat = centres.reshape(-1, p)
    dist = (np.einsum("ij,ij->i", flat, flat)[:, None] - 2.0 * (flat @ x.T)).reshape(runs, k, x.shape[0])
    label, best = np.zeros((runs, x.shape[0]), dtype=np.int64), dist[:, 0].copy()
    for j in range(1, k):  # a strictly closer centre only: the first of equals stays
        closer = dist[:, j] < best
        label[closer] = j
        np.minimum(best, dist[:, j], out=best)
    return label, best


def _lloyd(x: np.ndarray, weights: np.ndarray, centres: np.ndarray, tol: np.ndarray, max_iter: int):
    """Lloyd's algorithm for every run at once (weights: runs x rows; tol: per run). Returns the final centres,
    the labels of every row, the inertia of each run and which runs emptied a cluster."""
    runs, k, p = centres.shape
    centres = centres.copy()
    labels = np.full((runs, x.shape[0]), -1)
    empty = np.zeros(runs, dtype=bool)
    active = np.arange(runs)
    for _ in range(max_iter):
        new = _nearest(x, centres[active])[0]
        w = weights[active]
        member = np.zeros((active.size, k, x.shape[0]))  # run, centre, row: the row's weight in its centre
        np.put_along_axis(member, new[:, None, :], w[:, None, :], axis=1)
        size = np.bincount(
            (np.arange(active.size)[:, None] * k + new).ravel(), weights=w.ravel(), minlength=active.size * k
        ).reshape(active.size, k)
        sums = (member.reshape(-1, x.shape[0]) @ x).reshape(active.size, k, p)
        empty[active] |= (size == 0).any(axis=1)
        moved = sums / np.where(size > 0, size, 1.0)[:, :, None]
        shift = ((moved - centres[active]) ** 2).sum(axis=(1, 2))
        same = ((new == labels[active]) | (w == 0)).all(axis=1)  # KMeans compares the resample's rows only
        centres[active], labels[active] = moved, new
        active = active[~same & ~(shift <= tol[active]) & ~empty[active]]
        if active.size == 0:
            break
    # The last assignment step: KMeans runs it when a run stopped on the tolerance or max_iter; a strictly
    # converged run's centres are (up to rounding) those its labels were assigned with: the same labels.
    labels, gap = _nearest(x, centres)
    inertia = (weights * (gap + np.einsum("ij,ij->i", x, x)[None, :])).sum(axis=1)
    return centres, labels, inertia, empty


def _same_clustering(a: np.ndarray, b: np.ndarray, k: int) -> bool:
    """KMeans's test: every label of `a` goes with a single label of `b`."""
    pairs = np.unique(a * k + b)
    return np.unique(pairs // k).size == pairs.size


def bootstrap_kmeans(
    x: np.ndarray,
    resamples: list[np.ndarray],
    seeds: list[int],
    *,
    k: int = 3,
    n_init: int = 3,
    max_iter: int = 300,
    tol: float = 1e-4,
) -> np.ndarray:
    """Labels of every row of x (resamples x rows) by each resample's K-means: row b is
    KMeans(k, n_init=n_init, random_state=seeds[b], max_iter=max_iter, tol=tol).fit(x[resamples[b]]).predict(x)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    n = x.shape[0]
    counts = np.stack([np.bincount(rows, minlength=n) for rows in resamples]).astype(np.float64)
    mean = counts @ x / n  # each resample's feature means and variances, from its row counts
    variance = counts @ (x * x) / n - mean**2
    norms = np.einsum("ij,ij->i", x, x)
    weights = np.repeat(counts, n_init, axis=0)
    centres, labels, inertia, empty = _lloyd(
        x,
        weights,
        _starts(x, norms, resamples, seeds, k, n_init),
        np.repeat(variance.mean(axis=1) * tol, n_init),
        max_iter,
    )
    out = np.empty((len(resamples), n), dtype=np.int64)
    for b, (rows, seed) in enumerate(zip(resamples, seeds)):
        runs = range(b * n_init, (b + 1) * n_init)
        if empty[runs.start : runs.stop].any():  # KMeans would relocate a far row into the empty cluster
            out[b] = KMeans(k, n_init=n_init, random_state=seed, max_iter=max_iter, tol=tol).fit(x[rows]).predict(x)
            continue
        drawn, best = counts[b] > 0, runs.start
        for r in runs[1:]:
            if inertia[r] < inertia[best] and not _same_clustering(labels[r][drawn], labels[best][drawn], k):
                best = r
        out[b] = _nearest(x, centres[best : best + 1])[0][0]
    return out
