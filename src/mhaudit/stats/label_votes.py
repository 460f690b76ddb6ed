"""The vote matrix every label model reads, its checks, and what a fit returns.

A vote matrix is an int array (n_items, n_sources): each entry a class index 0..k-1, or `ABSTAIN` (-1)
where the source did not vote on the item. Every label model (`stats.label_model`) works on the distinct
rows of the matrix, each weighted by how many items share it (`vote_patterns`): items with the same votes
get the same probabilities, so a million items with 8 binary sources are at most 3**8 = 6,561 rows.

Per-source statistics that need no model (`coverage`, `conflict`) are defined here:

* coverage = share of items the source votes on (not ABSTAIN);
* conflict = share of the source's votes on items where another voting source votes another class
  (NaN for a source that never votes: there is nothing to share out).

This module imports nothing from the rest of mhaudit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["ABSTAIN", "LabelModelFit", "VotePatterns", "check_votes", "vote_patterns", "source_coverage_conflict"]
__all__ += ["log_joint", "pattern_posteriors", "finish_fit"]

ABSTAIN = -1


@dataclass(frozen=True)
class LabelModelFit:
    """One label model fitted to a vote matrix: item probabilities, labels and per-source estimates.

    `labels` is the argmax of `probabilities`, ties going to the lower class index (numpy's argmax);
    an item whose probabilities are undefined (NaN: no source voted anywhere) gets `ABSTAIN`.
    `accuracy`, `coverage` and `conflict` are per source (columns of the vote matrix); `confusion[s, i, j]`
    is P(source s votes j | true class i, s votes) where the method has one (else None). NaN means
    undefined, and `notes` says why; `notes` also records non-convergence and clipped estimates.
    `log_likelihood_trace` is the log-likelihood after each EM iteration (Dawid–Skene; empty otherwise).
    """

    method: str
    probabilities: np.ndarray
    labels: np.ndarray
    accuracy: np.ndarray
    coverage: np.ndarray
    conflict: np.ndarray
    class_balance: np.ndarray
    confusion: np.ndarray | None
    log_likelihood: float
    n_iter: int
    converged: bool
    notes: tuple[str, ...]
    log_likelihood_trace: np.ndarray = field(default_factory=lambda: np.zeros(0))


def check_votes(votes, n_classes: int) -> np.ndarray:
    """The vote matrix as int64 (n_items, n_sources), or a ValueError saying what is wrong.

    Entries must be whole numbers in -1..n_classes-1 (floats holding whole numbers are accepted).
    """
    if isinstance(n_classes, bool) or not isinstance(n_classes, int | np.integer) or n_classes < 2:
        raise ValueError(f"n_classes must be an integer of at least 2, got {n_classes!r}")
    arr = np.asarray(votes)
    if arr.ndim != 2:
        raise ValueError(f"votes must be a 2-D array (items x sources), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"votes needs at least one item and one source, got shape {arr.shape}")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"votes must hold integer class indices, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
            raise ValueError("votes must hold whole class indices (or -1 for abstain), found a fraction or NaN")
    out = arr.astype(np.int64)
    bad = (out < ABSTAIN) | (out >= n_classes)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(
            f"votes[{row}, {col}] = {out[row, col]} is not a class index 0..{n_classes - 1} or {ABSTAIN} (abstain)"
        )
    return out


@dataclass(frozen=True)
class VotePatterns:
    """The distinct rows of a vote matrix: `votes` (n_patterns, n_sources), `weights` (how many items share
    each row), `inverse` (each item's row in `votes`) and `onehot` (n_patterns, n_sources, n_classes)."""

    votes: np.ndarray
    weights: np.ndarray
    inverse: np.ndarray
    onehot: np.ndarray


def vote_patterns(votes: np.ndarray, n_classes: int) -> VotePatterns:
    """The distinct rows of a checked vote matrix, in a fixed order (sorted), with their counts.

    Rows are coded as base-(k+1) integers when that fits in int64 (one 1-D `np.unique`), else compared
    whole (`np.unique(axis=0)`); both give the rows sorted, so the result does not depend on row order.
    """
    n_items, n_sources = votes.shape
    base = n_classes + 1
    if n_sources * np.log2(base) < 62:
        codes = (votes + 1) @ (base ** np.arange(n_sources - 1, -1, -1, dtype=np.int64))
        _, first, inverse, weights = np.unique(codes, return_index=True, return_inverse=True, return_counts=True)
        rows = votes[first]
    else:
        rows, inverse, weights = np.unique(votes, axis=0, return_inverse=True, return_counts=True)
    onehot = (rows[:, :, None] == np.arange(n_classes)).astype(float)
    return VotePatterns(rows, weights.astype(float), inverse.ravel(), onehot)


def source_coverage_conflict(patterns: VotePatterns, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """Each source's coverage (share of items it votes on) and conflict (share of its votes where another
    voting source votes another class; NaN for a source that never votes)."""
    voted = patterns.votes != ABSTAIN  # (p, m)
    per_class = patterns.onehot.sum(axis=1)  # (p, k): votes per class in each row
    same = np.take_along_axis(per_class, np.where(voted, patterns.votes, 0), axis=1)  # votes equal to the source's
    disagreed = voted & (voted.sum(axis=1, keepdims=True) - same > 0)
    n_votes = patterns.weights @ voted
    n_conflicts = patterns.weights @ disagreed
    conflict = np.full(n_votes.shape, np.nan)
    np.divide(n_conflicts, n_votes, out=conflict, where=n_votes > 0)
    return n_votes / n_items, conflict


def log_joint(patterns: VotePatterns, prior: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """log P(true c, the row's votes) per row (n_patterns, k) under priors and confusion[s, i, j] (the
    Dawid–Skene model); an undefined (NaN) or zero confusion entry counts as (nearly) impossible."""
    tiny = np.finfo(float).tiny  # log(0) would make 0 * -inf = NaN for sources that did not vote
    log_conf = np.log(np.maximum(np.nan_to_num(confusion, nan=0.0), tiny))
    n_patterns, n_sources, n_classes = patterns.onehot.shape
    stacked = log_conf.transpose(0, 2, 1).reshape(n_sources * n_classes, n_classes)  # (s * j, true c)
    return np.log(np.maximum(prior, tiny)) + patterns.onehot.reshape(n_patterns, -1) @ stacked


def pattern_posteriors(joint: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, float]:
    """Posteriors P(true c | row's votes) from log P(c, votes) per row, and the weighted log-likelihood
    sum_rows weight * log sum_c P(c, votes) (log-sum-exp, shifted by each row's largest term)."""
    top = joint.max(axis=1, keepdims=True)
    scaled = np.exp(joint - top)
    total = scaled.sum(axis=1, keepdims=True)
    return scaled / total, float(weights @ (top[:, 0] + np.log(total[:, 0])))


def finish_fit(
    method: str,
    patterns: VotePatterns,
    n_items: int,
    row_probabilities: np.ndarray,
    class_balance: np.ndarray,
    *,
    correct: np.ndarray,
    confusion: np.ndarray | None,
    log_likelihood: float,
    n_iter: int,
    converged: bool,
    notes: tuple[str, ...],
    trace: np.ndarray | None = None,
) -> LabelModelFit:
    """The fit record: rows' probabilities spread back to items, labels, and per-source numbers.

    `correct` is each source's (expected) number of correct votes; accuracy = correct / its votes, NaN
    (with a note) for a source that never votes, or never votes where another source does.
    """
    coverage, conflict = source_coverage_conflict(patterns, n_items)
    n_votes = coverage * n_items
    accuracy = np.full(n_votes.shape, np.nan)
    np.divide(correct, n_votes, out=accuracy, where=n_votes > 0)
    silent = np.flatnonzero(n_votes == 0)
    if silent.size:
        notes = notes + (
            f"source(s) {', '.join(map(str, silent))} never vote: their accuracy and conflict are undefined (NaN)",
        )
    voted = patterns.votes != ABSTAIN
    alone = np.flatnonzero((n_votes > 0) & (patterns.weights @ (voted & (voted.sum(axis=1, keepdims=True) > 1)) == 0))
    if alone.size:  # its votes meet no other vote: agreement would be with itself, a made-up 1
        accuracy[alone] = np.nan
        notes = notes + (
            f"source(s) {', '.join(map(str, alone))} never vote on an item another source votes on: "
            "their accuracy is undefined (NaN)",
        )
    probabilities = row_probabilities[patterns.inverse]
    labels = np.argmax(probabilities, axis=1)  # ties: the lower class index
    labels[np.isnan(probabilities).any(axis=1)] = ABSTAIN
    return LabelModelFit(
        method=method,
        probabilities=probabilities,
        labels=labels,
        accuracy=accuracy,
        coverage=coverage,
        conflict=conflict,
        class_balance=np.asarray(class_balance, dtype=float),
        confusion=confusion,
        log_likelihood=float(log_likelihood),
        n_iter=int(n_iter),
        converged=bool(converged),
        notes=tuple(notes),
        log_likelihood_trace=np.zeros(0) if trace is None else trace,
    )
