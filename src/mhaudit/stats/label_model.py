"""Several weak labelers combined into one label, each source's accuracy learnt from how they agree.

Input: a vote matrix (n_items, n_sources) of class indices 0..k-1 or `ABSTAIN` (-1) (`stats.label_votes`).
Three methods (docs/labels.md, "The label models"):

* **majority** (`majority_vote`): an item's probabilities are the shares of its votes per class; an item
  nobody voted on gets the class balance, the share of all votes per class. A source's accuracy is its
  agreement with the majority label on the items it votes on (its own vote included, so it is biased:
  the majority label is itself noisy). No likelihood (NaN).
* **dawid-skene** (`dawid_skene`): each source has a full confusion matrix P(vote j | true class i, it
  votes), the classes a prior; EM from the majority-vote probabilities (as crowd-kit's `DawidSkene`),
  without smoothing (maximum likelihood, as Dawid & Skene 1979; crowd-kit clips entries at 1e-10, a
  difference below 1e-9 in the posteriors). It stops when the log-likelihood changes by less than
  `tol` relative to its size; EM never lowers it (`log_likelihood_trace`). An abstention carries no
  information about the class: the model is of the votes given, and the prior is learnt from the items
  with at least one vote (an item with none adds 0 to the log-likelihood and gets the prior).
  A source's accuracy is the expected share of its votes that are correct under the posteriors,
  (1 / n_s) sum over the n_s items s votes on of P(true class = its vote | all votes); at EM's fixed
  point this is sum_c q_sc * confusion[s, c, c], q_sc the mean posterior of class c over s's items
  (the prior's weighting, restricted to the items the source votes on).
* **label-model** (`triplet_label_model`, `stats.label_model_triplet`): FlyingSquid's closed-form triplet
  method for binary tasks with conditionally independent sources.

All methods work on the matrix's distinct rows weighted by their counts (`stats.label_votes`), which gives
exactly the per-item numbers: EM is vectorised over rows and sources, never a loop over items.

This module imports nothing from the rest of mhaudit but `mhaudit.stats`.
"""

from __future__ import annotations

import numpy as np

from mhaudit.stats.label_model_triplet import triplet_label_model
from mhaudit.stats.label_votes import (
    ABSTAIN,
    LabelModelFit,
    VotePatterns,
    check_votes,
    finish_fit,
    log_joint,
    pattern_posteriors,
    vote_patterns,
)

__all__ = ["ABSTAIN", "LabelModelFit", "METHODS", "combine_votes", "majority_vote", "dawid_skene", "log_likelihood"]
__all__ += ["triplet_label_model"]

METHODS = ("majority", "dawid-skene", "label-model")


def combine_votes(
    votes, n_classes: int, method: str = "dawid-skene", *, seed: int = 0, max_iter: int = 200, tol: float = 1e-7
) -> LabelModelFit:
    """One label per item from a vote matrix by `method` ("majority", "dawid-skene" or "label-model").

    `seed` is accepted for a stable signature; every method here is deterministic and does not use it.
    `max_iter` and `tol` are Dawid–Skene's EM limits.
    """
    del seed  # deterministic methods: nothing is drawn
    if method == "majority":
        return majority_vote(votes, n_classes)
    if method == "dawid-skene":
        return dawid_skene(votes, n_classes, max_iter=max_iter, tol=tol)
    if method == "label-model":
        return triplet_label_model(votes, n_classes)
    raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")


def _majority_probabilities(patterns: VotePatterns) -> tuple[np.ndarray, np.ndarray]:
    """Each row's shares of votes per class (rows without votes: the class balance) and the class balance
    (the share of all votes per class; NaN when there are no votes at all)."""
    per_class = patterns.onehot.sum(axis=1)
    n_votes = per_class.sum(axis=1, keepdims=True)
    total = patterns.weights @ per_class
    balance = total / total.sum() if total.sum() > 0 else np.full(total.shape, np.nan)
    shares = np.where(n_votes > 0, per_class / np.maximum(n_votes, 1), balance)
    return shares, balance


def majority_vote(votes, n_classes: int) -> LabelModelFit:
    """Majority vote: per item the share of its votes per class, ties to the lower class.

    An item without votes gets the class balance (the share of all votes per class); accuracy of a source
    is its agreement with the majority label on the items it votes on (NaN where it never votes).
    """
    votes = check_votes(votes, n_classes)
    patterns = vote_patterns(votes, n_classes)
    shares, balance = _majority_probabilities(patterns)
    labels = np.argmax(shares, axis=1)
    voted = patterns.votes != ABSTAIN
    agree = voted & (patterns.votes == labels[:, None])
    notes = () if np.isfinite(balance).all() else ("no source votes on any item: the class balance is undefined",)
    return finish_fit(
        "majority",
        patterns,
        votes.shape[0],
        shares,
        balance,
        correct=patterns.weights @ agree,
        confusion=None,
        log_likelihood=float("nan"),
        n_iter=0,
        converged=True,
        notes=notes,
    )


def _m_step(patterns: VotePatterns, posteriors: np.ndarray, smoothing: float) -> tuple[np.ndarray, np.ndarray]:
    """The prior (from rows with a vote) and confusion[s, i, j] = P(vote j | true i, s votes) from posteriors.

    A confusion row with no expected items (a source that never votes, or a class with no mass among its
    items) is NaN.
    """
    n_patterns, n_sources, n_classes = patterns.onehot.shape
    weighted = posteriors * patterns.weights[:, None]
    has_vote = (patterns.votes != ABSTAIN).any(axis=1)
    prior = weighted[has_vote].sum(axis=0) / patterns.weights[has_vote].sum()
    flat = weighted.T @ patterns.onehot.reshape(n_patterns, n_sources * n_classes)  # (true i, s * j)
    counts = flat.reshape(n_classes, n_sources, n_classes).transpose(1, 0, 2) + smoothing
    rows = counts.sum(axis=2, keepdims=True)
    confusion = np.full(counts.shape, np.nan)
    np.divide(counts, rows, out=confusion, where=rows > 0)
    return prior, confusion


def log_likelihood(votes, class_balance, confusion) -> float:
    """Marginal log-likelihood of the votes under the Dawid–Skene model (natural log):

        sum over items of log sum_c class_balance[c] * prod_{s votes} confusion[s, c, vote_s]

    An item with no votes adds log 1 = 0. `confusion` is (n_sources, k, k), rows P(vote | true class).
    """
    class_balance = np.asarray(class_balance, dtype=float)
    confusion = np.asarray(confusion, dtype=float)
    if class_balance.ndim != 1:
        raise ValueError(f"class_balance must be one share per class (1-D), got shape {class_balance.shape}")
    n_classes = class_balance.shape[0]
    votes = check_votes(votes, n_classes)
    if confusion.shape != (votes.shape[1], n_classes, n_classes):
        raise ValueError(f"confusion must have shape {(votes.shape[1], n_classes, n_classes)}, got {confusion.shape}")
    if not (np.isfinite(class_balance).all() and np.isfinite(confusion).all()):
        raise ValueError("class_balance and confusion must be finite probabilities")
    if (class_balance < 0).any() or (confusion < 0).any():
        raise ValueError("class_balance and confusion must be non-negative probabilities")
    patterns = vote_patterns(votes, n_classes)
    return pattern_posteriors(log_joint(patterns, class_balance, confusion), patterns.weights)[1]


def dawid_skene(
    votes, n_classes: int, *, max_iter: int = 200, tol: float = 1e-7, smoothing: float = 0.0
) -> LabelModelFit:
    """Dawid–Skene by EM from majority vote; stops when the log-likelihood's relative change is below `tol`.

    The first M-step is taken from the majority-vote probabilities and its E-step gives the starting
    posteriors; each of at most `max_iter` iterations is one M-step and one E-step (`max_iter=0`: the first
    E-step only). Iteration for iteration this is crowd-kit's `DawidSkene(n_iter=max_iter + 1)`.

    `smoothing` is a pseudo-count added to every confusion count in the M-step (0: maximum likelihood, and
    the log-likelihood never decreases; with smoothing EM climbs the smoothed objective instead).
    """
    votes = check_votes(votes, n_classes)
    if isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer) or max_iter < 0:
        raise ValueError(f"max_iter must be a non-negative integer, got {max_iter!r}")
    if not (tol >= 0 and smoothing >= 0):
        raise ValueError(f"tol and smoothing must be non-negative numbers, got {tol!r} and {smoothing!r}")
    patterns = vote_patterns(votes, n_classes)
    if not (patterns.votes != ABSTAIN).any():
        fit = majority_vote(votes, n_classes)
        return _with_method(fit, "dawid-skene")
    posteriors, _ = _majority_probabilities(patterns)
    prior, confusion = _m_step(patterns, posteriors, smoothing)
    posteriors, current = pattern_posteriors(log_joint(patterns, prior, confusion), patterns.weights)
    trace, converged, n_iter = [current], False, 0
    while n_iter < max_iter and not converged:
        n_iter += 1
        prior, confusion = _m_step(patterns, posteriors, smoothing)
        posteriors, latest = pattern_posteriors(log_joint(patterns, prior, confusion), patterns.weights)
        trace.append(latest)
        converged = abs(latest - current) <= tol * abs(current)
        current = latest
    voted = patterns.votes != ABSTAIN
    # expected correct votes per source: sum over its rows of P(true class == its vote)
    correct = patterns.weights @ (voted * np.take_along_axis(posteriors, np.where(voted, patterns.votes, 0), axis=1))
    notes = () if converged else (f"EM stopped after {max_iter} iterations before converging (tol {tol:g})",)
    return finish_fit(
        "dawid-skene",
        patterns,
        votes.shape[0],
        posteriors,
        prior,
        correct=correct,
        confusion=confusion,
        log_likelihood=current,
        n_iter=n_iter,
        converged=converged,
        notes=notes,
        trace=np.array(trace),
    )


def _with_method(fit: LabelModelFit, method: str) -> LabelModelFit:
    from dataclasses import replace

    return replace(fit, method=method)
