"""The label model for binary tasks: FlyingSquid's closed-form triplet method (Fu et al. 2020).

Sources are conditionally independent given the true class Y in {-1, +1}, each votes lambda_s in
{-1, +1} (class 0 -> -1, class 1 -> +1) or abstains (0), and is right with the same probability whatever
the class (its accuracy acc_s; a_s = 2 acc_s - 1 = E[lambda_s Y | s votes]). Then, on the items two sources
both vote on, E[lambda_i lambda_j] = a_i a_j, and for any third source k

    |a_i| = sqrt(|M_ij M_ik / M_jk|),    M_ij = mean of lambda_i lambda_j over the items i and j co-vote.

Each source's |a_i| is the median (or `average="mean"`) over all its triplets (i, j, k) whose three pairs
co-vote on at least one item and M_jk != 0. The signs come from the rank-one structure M ~ a a^T (the
leading eigenvector of M with |a|^2 on its diagonal), flipped as a whole so the sources are better than
random on average (mean a > 0). A noisy |a| above 1 is clipped to 1 (noted).

Class balance: `class_balance` given, or estimated from the first moments, E[lambda_s | s votes] = a_s mu
with mu = E[Y]: mu by least squares weighted by each source's votes, P(class 1) = (1 + mu) / 2 (clipped to
[0, 1], noted). Item posteriors by naive Bayes (the Dawid–Skene joint with symmetric confusion matrices);
a source without a triplet is left out of them (its accuracy NaN, noted).

This module imports nothing from the rest of mhaudit but `mhaudit.stats`.
"""

from __future__ import annotations

import numpy as np

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

__all__ = ["triplet_accuracies", "triplet_label_model"]


def _second_moments(patterns: VotePatterns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Signed votes per row (p, m), co-vote counts (m, m) and M_ij (NaN where i and j never co-vote)."""
    signed = np.where(patterns.votes == ABSTAIN, 0.0, 2.0 * patterns.votes - 1.0)
    voted = (signed != 0).astype(float)
    weighted = patterns.weights[:, None]
    co_votes = (voted * weighted).T @ voted
    products = (signed * weighted).T @ signed
    moments = np.full(co_votes.shape, np.nan)
    np.divide(products, co_votes, out=moments, where=co_votes > 0)
    return signed, co_votes, moments


def triplet_accuracies(moments: np.ndarray, average: str = "median") -> np.ndarray:
    """|a_s| of each source from the second moments M (m, m) by triplets; NaN for a source without one."""
    n_sources = moments.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.abs(moments[:, :, None] * moments[:, None, :] / moments[None, :, :])  # [i, j, k]
    index = np.arange(n_sources)
    distinct = (index[:, None, None] != index[None, :, None]) & (index[:, None, None] != index[None, None, :])
    distinct &= index[None, :, None] != index[None, None, :]
    valid = distinct & np.isfinite(ratios) & (moments[None, :, :] != 0)
    estimates = np.sqrt(np.where(valid, ratios, np.nan)).reshape(n_sources, -1)
    has_triplet = valid.reshape(n_sources, -1).any(axis=1)
    out = np.full(n_sources, np.nan)
    if has_triplet.any():
        pick = np.nanmedian if average == "median" else np.nanmean
        out[has_triplet] = pick(estimates[has_triplet], axis=1)
    return out


def _signs(moments: np.ndarray, magnitudes: np.ndarray) -> np.ndarray:
    """Signs of a from M ~ a a^T: the leading eigenvector, flipped so that mean a > 0."""
    known = np.isfinite(magnitudes)
    filled = np.nan_to_num(moments[np.ix_(known, known)], nan=0.0)
    np.fill_diagonal(filled, magnitudes[known] ** 2)
    _, vectors = np.linalg.eigh(filled)
    signs = np.where(vectors[:, -1] < 0, -1.0, 1.0)
    if signs @ magnitudes[known] < 0:
        signs = -signs
    out = np.full(magnitudes.shape, np.nan)
    out[known] = signs
    return out


def _class_balance(signed, weights, a, given) -> tuple[np.ndarray, tuple[str, ...]]:
    if given is not None:
        balance = np.asarray(given, dtype=float)
        if balance.shape != (2,) or not np.isfinite(balance).all() or (balance < 0).any():
            raise ValueError(f"class_balance must be two non-negative shares, got {given!r}")
        if not np.isclose(balance.sum(), 1.0):
            raise ValueError(f"class_balance must sum to 1, got {balance.sum():g}")
        return balance, ()
    known = np.isfinite(a)
    n_votes = weights @ (signed != 0)
    sums = weights @ signed  # n_s * E[lambda_s | votes]
    mu = float(sums[known] @ a[known] / (n_votes[known] @ a[known] ** 2))
    notes: tuple[str, ...] = ()
    if abs(mu) > 1:
        notes = (f"the estimated class balance fell outside [0, 1] (E[Y] = {mu:.3f}) and was clipped",)
        mu = float(np.clip(mu, -1, 1))
    return np.array([(1 - mu) / 2, (1 + mu) / 2]), notes


def triplet_label_model(votes, n_classes: int, *, class_balance=None, average: str = "median") -> LabelModelFit:
    """The triplet label model (binary only): accuracies in closed form, class balance, naive-Bayes posteriors.

    ValueError for n_classes > 2 (use Dawid–Skene) and when no three sources co-vote pairwise.
    """
    votes = check_votes(votes, n_classes)
    if n_classes != 2:
        raise ValueError(f"the label model (triplet method) handles two classes, got {n_classes}: use dawid-skene")
    if average not in ("median", "mean"):
        raise ValueError(f"average must be 'median' or 'mean', got {average!r}")
    patterns = vote_patterns(votes, n_classes)
    signed, _, moments = _second_moments(patterns)
    magnitudes = triplet_accuracies(moments, average)
    if not np.isfinite(magnitudes).any():
        raise ValueError("the label model needs at least three sources that each pair of them votes on common items")
    notes: tuple[str, ...] = ()
    if (magnitudes > 1).any():
        notes += (f"source(s) {', '.join(map(str, np.flatnonzero(magnitudes > 1)))} had |2 acc - 1| > 1; clipped",)
    a = _signs(moments, np.minimum(magnitudes, 1.0)) * np.minimum(magnitudes, 1.0)
    lacking = np.flatnonzero(~np.isfinite(a) & ((patterns.votes != ABSTAIN).T @ patterns.weights > 0))
    if lacking.size:
        notes += (f"source(s) {', '.join(map(str, lacking))} share no triplet: accuracy undefined, left out",)
    balance, balance_notes = _class_balance(signed, patterns.weights, a, class_balance)
    accuracy = (1 + a) / 2
    eps = 1e-12  # a source estimated perfect (or perfectly wrong) decides its items without log(0)
    right = np.clip(accuracy, eps, 1 - eps)
    confusion = np.stack([np.stack([right, 1 - right], -1), np.stack([1 - right, right], -1)], 1)
    used = np.where(np.isnan(accuracy)[:, None, None], 1.0, confusion)  # factor 1: a left-out source adds nothing
    posteriors, loglik = pattern_posteriors(log_joint(patterns, balance, used), patterns.weights)
    n_votes = patterns.weights @ (patterns.votes != ABSTAIN)
    confusion[np.isnan(accuracy)] = np.nan
    return finish_fit(
        "label-model",
        patterns,
        votes.shape[0],
        posteriors,
        balance,
        correct=accuracy * n_votes,
        confusion=confusion,
        log_likelihood=loglik,
        n_iter=0,
        converged=True,
        notes=notes + balance_notes,
    )
