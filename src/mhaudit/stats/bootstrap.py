"""Vectorised bootstraps of AUCs: resamples as count matrices, AUCs from one sort and cumulative sums.

A resample is a row of counts: how many times each example was drawn. The AUC of a resample is then
a weighted Mann-Whitney statistic. With the negatives sorted by score once, the weight of negatives
below (or tied with) each positive is a cumulative sum looked up by `searchsorted` positions, so a
block of resamples costs a few array passes and no Python loop over resamples. Counts are integers
and the pair counts are kept in int64, so each AUC is an exact fraction rounded once: it equals
`roc_auc_score` on the explicitly resampled arrays to rounding.

Resamples are processed in blocks of about `_CHUNK_CELLS` counts, which bounds the working memory
(a few MB) whatever the number of resamples. `count_blocks` draws the counts themselves a block at a time,
so no (resamples x examples) matrix need ever be held (16 GB for 2,000 resamples of 1M examples).
"""

from __future__ import annotations

import numpy as np

from mhaudit.stats.delong import check_binary, check_codes, check_scores
from mhaudit.stats.undefined import divide, warn_undefined

__all__ = [
    "resample_counts",
    "count_blocks",
    "resample_clusters",
    "weighted_auc",
    "bootstrap_macro_auc",
    "summarise",
    "bias_corrected",
    "macro_auc_of_counts",
    "grouped_count_blocks",
]

# Resamples x examples per block: 2 MB per int64 work array. Cache-sized blocks ran twice as fast as
# 16 MB ones (benchmarks/bootstrap_speed.py) and keep the working memory to a few MB.
_CHUNK_CELLS = 1 << 18
# Counts per block that count_blocks yields: 16 MB of int32, a few dozen resamples of 100k examples
_BLOCK_BYTES = 1 << 24


def _rows_per_chunk(n: int) -> int:
    return max(1, _CHUNK_CELLS // max(n, 1))


class _Layout:
    """Where the tallies put each example: the strata one after another, each in row order. Counts are drawn in
    this order (a stratum's tally is one contiguous block of columns); `column[i]` is example i's column, and
    statistics gather through it instead of putting every block back in row order."""

    def __init__(self, y: np.ndarray, stratified: bool):
        members = [np.flatnonzero(y == c) for c in np.unique(y)] if stratified else [np.arange(y.size)]
        self.sizes = [m.size for m in members if m.size]
        order = np.concatenate(members) if members else np.arange(0)
        self.column = np.empty_like(order)
        self.column[order] = np.arange(order.size)


def _tally(layout: _Layout, n_boot: int, rng: np.random.Generator, out: np.ndarray) -> np.ndarray:
    """Draw `n_boot` resamples into `out` (n_boot, n) in `layout`'s column order; returns `out`, or a wider copy
    when a count does not fit its dtype. The draws are resample_counts' own, in its order: chunks of
    `_rows_per_chunk` resamples, stratum after stratum."""
    step = _rows_per_chunk(out.shape[1])
    top = np.iinfo(out.dtype).max
    for start in range(0, n_boot, step):  # chunks of resamples bound the int64 draws' memory
        rows = min(n_boot, start + step) - start
        offset = 0
        for k in layout.sizes:
            # Multinomial(k, 1/k) counts, as the tally of k uniform draws with replacement: one bincount
            # over the chunk (each row offset into its own k bins) is ~7x faster than rng.multinomial.
            draws = rng.integers(0, k, size=(rows, k))
            draws += (np.arange(rows) * k)[:, None]
            counts = np.bincount(draws.ravel(), minlength=rows * k).reshape(rows, k)
            if k > top and counts.max() > top:  # a count above k cannot be: small strata never widen
                out = out.astype(np.int32)
                top = np.iinfo(np.int32).max
            out[start : start + rows, offset : offset + k] = counts
            offset += k
    return out


def resample_counts(y_codes, n_boot: int, rng=None, stratified: bool = True) -> np.ndarray:
    """How many times each example is drawn in each of `n_boot` resamples: shape (n_boot, n), int32.

    Stratified: a multinomial draw within each class, so every resample keeps the class sizes (and
    never loses a class). Otherwise one multinomial draw of n over all rows. `rng` is a
    `numpy.random.Generator` or a seed.

    >>> counts = resample_counts([0, 0, 0, 1, 1], n_boot=3, rng=7)
    >>> counts.shape, counts[:, :3].sum(axis=1).tolist(), counts[:, 3:].sum(axis=1).tolist()
    ((3, 5), [3, 3, 3], [2, 2, 2])
    """
    y = np.asarray(y_codes)
    if y.ndim != 1:
        raise ValueError(f"y_codes must be 1-D, got shape {y.shape}")
    if n_boot < 0:
        raise ValueError(f"n_boot must be non-negative, got {n_boot}")
    layout = _Layout(y, stratified)
    grouped = _tally(layout, n_boot, np.random.default_rng(rng), np.empty((n_boot, y.size), dtype=np.int32))
    return np.take(grouped, layout.column, axis=1)


def count_blocks(y_codes, n_boot: int, rng, stratified: bool = True, max_bytes: int | None = None):
    """Yield (first resample, counts block): `resample_counts(y_codes, n_boot, rng, stratified)` about
    `max_bytes` (default `_BLOCK_BYTES`) of counts at a time. The blocks are whole multiples of
    resample_counts' own, so the rows are the very draws one call would return, and the memory stays bounded
    whatever n_boot x n. A block is int8 when its counts fit (a draw rarely takes a row more than a dozen
    times): the same integers, and the gathers of the statistics over 1M-row resamples stay in cache (AUC and
    ECE 2-3x faster than from int32).

    >>> a = resample_counts([0, 1, 1, 0, 1], 7, rng=3)
    >>> b = np.vstack([block for _, block in count_blocks([0, 1, 1, 0, 1], 7, rng=3, max_bytes=0)])
    >>> bool((a == b).all())
    True
    """
    y = np.asarray(y_codes)
    layout, blocks = grouped_count_blocks(y, n_boot, rng, stratified, max_bytes)
    for start, counts in blocks:
        yield start, np.take(counts, layout.column, axis=1)


def grouped_count_blocks(y: np.ndarray, n_boot: int, rng, stratified: bool = True, max_bytes: int | None = None):
    """`count_blocks`' counts with the columns in the draw's own order (`_Layout`): (layout, blocks). The same
    integers without the pass that puts each block back in row order; statistics gather through
    `layout.column` (`macro_auc_of_counts`, calibration's `ece_of_counts`)."""
    rng = np.random.default_rng(rng)
    layout = _Layout(y, stratified)
    step = _rows_per_chunk(y.size)
    budget = _BLOCK_BYTES if max_bytes is None else max_bytes
    rows = max(1, budget // (4 * step * max(y.size, 1))) * step

    def blocks():
        for start in range(0, n_boot, rows):
            size = min(n_boot, start + rows) - start
            yield start, _tally(layout, size, rng, np.empty((size, y.size), dtype=np.int8))

    return layout, blocks()


def resample_clusters(contributions, clusters, n_boot: int, rng=None, strata=None) -> np.ndarray:
    """The cluster bootstrap of additive tallies: (n_boot, k) sums of resampled clusters' contributions.

    `contributions` (n, k): what each item adds to the tallies a statistic is computed from (a one-hot row of
    its confusion cell, a weighted one, its coincidences). `clusters` (n,): items of one cluster (one author)
    are drawn together, so items that are not independent widen the interval as they should (Field & Welsh
    2007). With `strata` the clusters are drawn within each stratum (the unit is then stratum x cluster: an
    author in two strata is a cluster in each), so the strata keep their number of clusters. Each cluster's
    tally is summed once; the resamples are count matrices over clusters (`resample_counts`) times that table.

    >>> c = np.eye(2)[[0, 0, 1, 1]]  # four items, two cells; items 0-1 and 2-3 are one author each
    >>> t = resample_clusters(c, ["a", "a", "b", "b"], n_boot=200, rng=0)
    >>> sorted({tuple(row) for row in t.tolist()})  # both authors, or one of them twice
    [(0.0, 4.0), (2.0, 2.0), (4.0, 0.0)]
    """
    import pandas as pd  # only the cluster path needs factorize

    rng = np.random.default_rng(rng)  # one stream over the blocks
    values = np.asarray(contributions, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"contributions must be 2-D (items, tallies), got shape {values.shape}")
    keys = np.asarray(clusters, dtype=object)
    if keys.shape != (values.shape[0],):
        raise ValueError(f"clusters must hold one label per item ({values.shape[0]}), got shape {keys.shape}")
    units = (
        pd.MultiIndex.from_arrays([np.zeros(keys.size, dtype=int) if strata is None else np.asarray(strata), keys])
        if keys.size
        else pd.MultiIndex.from_arrays([[], []])
    )
    codes, uniques = pd.factorize(units)
    per_unit = np.zeros((len(uniques), values.shape[1]))
    np.add.at(per_unit, codes, values)
    unit_strata = pd.factorize(uniques.get_level_values(0))[0] if len(uniques) else np.zeros(0, dtype=int)
    return resampled_sums(unit_strata, per_unit, n_boot, rng, block_cells=_CHUNK_CELLS)


def resampled_sums(
    codes, table: np.ndarray, n_boot: int, rng, *, stratified: bool = True, block_cells: int = 1 << 20
) -> np.ndarray:
    """(n_boot, k): each resample's draw counts (`resample_counts` of `codes`) times `table` (n, k), drawn in
    blocks of about `block_cells` counts (4 MB of int32 by default). The block size fixes the generator's draws."""
    out = np.empty((n_boot, table.shape[1]))
    step = max(1, block_cells // max(len(codes), 1))
    for start in range(0, n_boot, step):
        rows = min(n_boot, start + step) - start
        out[start : start + rows] = resample_counts(codes, rows, rng, stratified) @ table
    return out


class _Sorted:
    """One binary problem prepared once: the smaller side (positives or negatives) sorted by score, and each
    example of the other side's place among them. `columns[i]` is example i's column in the counts (default i).

    The running weights are summed over the smaller side, the cost that dominates (a running sum is a serial
    pass): for the other side, the pairs it wins, loses or ties come from where it falls in those sums, and the
    pairs positives win follow by complement when the positives are the side summed. Exact integers either way."""

    def __init__(self, y: np.ndarray, score: np.ndarray, columns: np.ndarray | None = None):
        pos, neg = np.flatnonzero(y), np.flatnonzero(~y)
        self.flip = pos.size < neg.size  # the positives are summed: S below counts pairs they lose
        run, look = (pos, neg) if self.flip else (neg, pos)
        run = run[np.argsort(score[run], kind="stable")]
        ranked = score[run]
        self.below = np.searchsorted(ranked, score[look], side="left")  # run-side examples strictly below
        self.upto = np.searchsorted(ranked, score[look], side="right")  # ... or tied
        self.tied = np.flatnonzero(self.below != self.upto)  # look-side examples tied with some run-side one (few)
        self.run = run if columns is None else columns[run]
        self.look = look if columns is None else columns[look]

    def auc(self, counts: np.ndarray, cum_dtype=np.int64, totals: np.ndarray | None = None) -> np.ndarray:
        """AUC of each row of `counts` (a block of resamples); NaN where a class has zero weight.

        `cum_dtype` holds the running weight of the summed side: int32 (several times faster to
        accumulate) when a row's total weight cannot overflow it. `totals`: the rows' sums, when the caller
        has them (one pass for every class of a macro-AUC)."""
        cum = np.empty((counts.shape[0], self.run.size + 1), dtype=cum_dtype)
        cum[:, 0] = 0
        # np.take is ~4x faster than fancy column indexing on (resamples, n) matrices (numpy 2.4)
        np.cumsum(np.take(counts, self.run, axis=1), axis=1, dtype=cum_dtype, out=cum[:, 1:])
        w_look = np.take(counts, self.look, axis=1)
        totals = counts.sum(axis=1, dtype=np.int64) if totals is None else totals
        w_run = cum[:, -1].astype(np.int64)
        # S = 2 x (weighted pairs with the summed side below) + (tied pairs): each look-side weight times (run
        # side below + run side up to and including ties); ties thereby count a half, and everything stays an
        # exact integer. Written as 2 x (weight x below) plus the tied examples' (upto - below): one gather of
        # `cum`, not two, and einsum's row sums, ~2x faster than one product matrix and its sum. The sums are at
        # most (look weight) x (run weight) <= total^2 / 4: in int32 (~20% faster) while that fits.
        dot = np.int32 if totals.max(initial=0) < 92_681 else np.int64
        s = 2 * np.einsum("ij,ij->i", w_look, np.take(cum, self.below, axis=1), dtype=dot, casting="unsafe").astype(
            np.int64
        )  # unsafe: every count and sum is below the bound
        if self.tied.size:
            ties = np.take(cum, self.upto[self.tied], axis=1) - np.take(cum, self.below[self.tied], axis=1)
            s += np.einsum("ij,ij->i", np.take(w_look, self.tied, axis=1), ties, dtype=dot, casting="unsafe")
        pairs = 2 * (totals - w_run) * w_run
        twice_won = pairs - s if self.flip else s  # the positives lose S / 2 pairs (ties a half): won by complement
        return divide(twice_won, pairs)


def check_counts(counts, n: int) -> np.ndarray:
    """`counts` as a (n_boot, n) matrix of non-negative integers (how often each example is drawn)."""
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] != n:
        raise ValueError(f"counts must have shape (n_boot, {n}), got {counts.shape}")
    if not np.issubdtype(counts.dtype, np.integer) or (counts.size and counts.min() < 0):
        raise ValueError(f"counts must hold non-negative integers (times each example is drawn), got {counts.dtype}")
    return counts


def _cum_dtype(counts: np.ndarray, n: int) -> type:
    """The narrowest safe dtype for the counts' running sums along a row."""
    small = not counts.size or int(counts.max()) * n < np.iinfo(np.int32).max
    return np.int32 if small else np.int64


def weighted_auc(y_bin, score, counts) -> np.ndarray:
    """AUC of each resample given its counts (rows of `counts`, shape (n_boot, n)): shape (n_boot,).

    Equal to `roc_auc_score(np.repeat(y, c), np.repeat(score, c))` for each row c (ties count a
    half); NaN for a resample without positives or without negatives (one UndefinedStatisticWarning
    per call).

    >>> weighted_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], [[1, 1, 1, 1], [0, 2, 1, 1], [2, 2, 0, 0]])
    array([0.75, 0.5 ,  nan])
    """
    y = check_binary(y_bin, "y_bin")
    score = check_scores(score, y.size)
    counts = check_counts(counts, y.size)
    cum_dtype, problem = _cum_dtype(counts, y.size), _Sorted(y, score)
    out = np.empty(counts.shape[0])
    step = _rows_per_chunk(y.size)
    for start in range(0, counts.shape[0], step):
        out[start : start + step] = problem.auc(counts[start : start + step], cum_dtype)
    _warn_lost(out, "bootstrap AUC")
    return out


def _warn_lost(out: np.ndarray, what: str) -> None:
    undefined = int(np.count_nonzero(np.isnan(out)))
    if undefined:
        warn_undefined(f"{what}: {undefined} of {out.size} resample(s) lost a class; NaN returned", stacklevel=4)


def bootstrap_macro_auc(y_codes, probs, n_classes: int, counts) -> np.ndarray:
    """Macro one-vs-rest AUC of each resample: shape (n_boot,).

    Per resample, `macro_auc` on the resampled arrays: the mean AUC over all classes, NaN where a
    class drew no positive or no negative (one UndefinedStatisticWarning per call). Stratified
    counts (`resample_counts`) keep every class, so none is lost.

    >>> y, probs = [0, 1, 2, 2], [[.6, .3, .1], [.2, .3, .5], [.1, .2, .7], [.5, .1, .4]]
    >>> bootstrap_macro_auc(y, probs, 3, [[1, 1, 1, 1], [0, 2, 1, 1], [2, 1, 0, 1]]).round(4)
    array([0.8611,    nan, 0.7778])
    """
    y, probs = check_codes(y_codes, probs, n_classes, "probs")
    out = macro_auc_of_counts(y, probs, n_classes)(check_counts(counts, y.size))
    _warn_lost(out, "bootstrap macro-AUC")
    return out


def macro_auc_of_counts(y: np.ndarray, probs: np.ndarray, n_classes: int, columns: np.ndarray | None = None):
    """Each resample's macro-AUC as a function of its draw counts, `bootstrap_macro_auc` for inputs validated at the
    door (no checks, no warning: NaN where a resample lost a class), sorted once: for counts that come a block at a time
    (`count_blocks`). Each resample's AUC depends on its own row alone (exact integers), so blocks give the
    same floats as one matrix. `columns`: each example's column in the counts (`grouped_count_blocks`)."""
    problems = [_Sorted(y == k, probs[:, k], columns) for k in range(n_classes)]
    step = _rows_per_chunk(y.size)

    def macro_auc(counts: np.ndarray) -> np.ndarray:
        cum_dtype = _cum_dtype(counts, y.size)
        out = np.empty(counts.shape[0])
        for start in range(0, counts.shape[0], step):
            block = counts[start : start + step]
            totals = block.sum(axis=1, dtype=np.int64)
            # (n_classes, rows); NaN: a side not drawn
            aucs = np.stack([p.auc(block, cum_dtype, totals) for p in problems])
            out[start : start + step] = aucs.mean(axis=0)
        return out

    return macro_auc


def summarise(estimates, alpha: float = 0.05) -> dict:
    """Bootstrap SE (sample SD, ddof=1) and percentile (1 - alpha) CI over the finite resamples.

    Returns `se, ci_low, ci_high, n_boot, n_failed`; `n_failed` counts the NaN (or infinite) resamples (for
    AUCs, draws that lost a class). All NaN when no resample succeeded.

    >>> summarise([0.5, 0.75, 1.0, float("nan")])
    {'se': 0.25, 'ci_low': 0.5125, 'ci_high': 0.9875, 'n_boot': 4, 'n_failed': 1}
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    est = np.asarray(estimates, dtype=float).ravel()
    ok = est[np.isfinite(est)]
    se = float(np.std(ok, ddof=1)) if ok.size >= 2 else float("nan")
    if ok.size:
        low, high = (float(v) for v in np.percentile(ok, [100 * alpha / 2, 100 * (1 - alpha / 2)]))
    else:
        low = high = float("nan")
    return {"se": se, "ci_low": low, "ci_high": high, "n_boot": int(est.size), "n_failed": int(est.size - ok.size)}


def bias_corrected(point: float, estimates, alpha: float = 0.05, floor: float | None = None) -> dict:
    """The bootstrap bias correction of a statistic (Efron & Tibshirani 1993, sec. 10.6) and its interval.

    bias = mean(resamples) - point; estimate = point - bias; the percentile (1 - alpha) interval shifted by
    -bias, so it is centred where the estimate is and holds it whenever the resamples' mean lies inside
    their own percentile interval. A statistic biased upward (the plug-in ECE: |.| of a noisy bin gap is
    positive on average) has a percentile interval biased twice over, since each resample adds its own bias
    on top of the point's; the shift removes one of the two. `floor` clips the estimate and both bounds
    from below (0 for a statistic that cannot be negative, keeping the estimate inside its interval).

    Returns `estimate, bias, se, ci_low, ci_high, n_boot, n_failed` (se and n_* as in `summarise`); the
    estimate is NaN, with the interval, when no resample succeeded.

    >>> r = bias_corrected(0.10, [0.11, 0.12, 0.13, 0.14], floor=0.0)
    >>> round(r["estimate"], 3), round(r["bias"], 3), round(r["ci_low"], 3), round(r["ci_high"], 3)
    (0.075, 0.025, 0.086, 0.114)
    """
    summary = summarise(estimates, alpha)
    est = np.asarray(estimates, dtype=float).ravel()
    ok = est[np.isfinite(est)]
    bias = float(ok.mean() - point) if ok.size else float("nan")
    values = [point - bias, summary["ci_low"] - bias, summary["ci_high"] - bias]
    if floor is not None:
        values = [max(floor, v) if np.isfinite(v) else v for v in values]
    return {
        "estimate": values[0],
        "bias": bias,
        "se": summary["se"],
        "ci_low": values[1],
        "ci_high": values[2],
        "n_boot": summary["n_boot"],
        "n_failed": summary["n_failed"],
    }
