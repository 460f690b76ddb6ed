"""Label shift: estimating a target platform's class priors and correcting posteriors for them.

Both estimators assume label shift only: p(x | y) is the same on source and target, only p(y) moves.

- `em_priors`: Saerens, Latinne & Decaestecker (2002), "Adjusting the outputs of a classifier to new
  a priori probabilities", Neural Computation 14(1). EM on the target's unlabelled posteriors; it is
  the maximum-likelihood estimate of the priors and needs calibrated source posteriors.
- `bbse_priors`: black-box shift estimation, Lipton, Wang & Smola (2018), ICML. Needs only hard
  predictions and the source confusion matrix; consistent even for a miscalibrated classifier as long
  as that matrix is invertible.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

__all__ = [
    "prior_corrected_probs",
    "em_priors",
    "bbse_priors",
    "em_priors_resampled",
    "bbse_priors_resampled",
    "bbse_draws",
    "em_batch",
    "em_chord",
    "EMResult",
    "BBSEResult",
]


class EMResult(NamedTuple):
    """Saerens et al.'s EM: the target's priors, its posteriors corrected to them, the iterations run."""

    priors: np.ndarray  # estimated target priors
    probs: np.ndarray  # target posteriors corrected to those priors
    n_iter: int


class BBSEResult(NamedTuple):
    """BBSE's target priors, its clipped importance weights, and a note ('' when nothing was amiss)."""

    priors: np.ndarray  # estimated target priors (NaN when no estimate exists; see note)
    weights: np.ndarray  # importance weights q/pi_src after clipping
    note: str  # '' when C was invertible and no weight was clipped


def _priors(values, n_classes: int, name: str, *, positive: bool = False) -> np.ndarray:
    p = np.asarray(values, dtype=float)
    if p.shape != (n_classes,) or not np.all(np.isfinite(p)) or p.min() < 0 or p.sum() <= 0:
        raise ValueError(f"{name} must be {n_classes} non-negative finite numbers with a positive sum")
    if positive and p.min() == 0:
        raise ValueError(f"{name} has a zero prior for class {int(np.argmin(p))}; the correction divides by it")
    return p / p.sum()


def _probs(values) -> np.ndarray:
    p = np.asarray(values, dtype=float)
    if p.ndim != 2 or p.shape[0] == 0:
        raise ValueError(f"probs must be a non-empty 2-D array (rows x classes), got shape {p.shape}")
    if not np.all(np.isfinite(p)) or p.min() < 0 or not np.allclose(p.sum(axis=1), 1, atol=1e-6):
        raise ValueError("each row of probs must hold non-negative probabilities summing to 1")
    return p


def prior_corrected_probs(probs, priors_src, priors_tgt) -> np.ndarray:
    """Bayes correction of posteriors to new priors: p'(k|x) = p(k|x) q_k / pi_k, renormalised per row.

    A row whose corrected mass is zero (all its probability on classes given target prior 0) is NaN.

    >>> prior_corrected_probs([[0.5, 0.5]], [0.5, 0.5], [0.2, 0.8]).round(6).tolist()
    [[0.2, 0.8]]
    """
    p = _probs(probs)
    k = p.shape[1]
    return _corrected(p, _priors(priors_src, k, "priors_src", positive=True), _priors(priors_tgt, k, "priors_tgt"))


def _corrected(p: np.ndarray, pi: np.ndarray, q: np.ndarray) -> np.ndarray:
    out = p * (q / pi)
    total = out.sum(axis=1, keepdims=True)
    return np.divide(out, total, out=np.full_like(out, np.nan), where=total > 0)


def em_priors(probs_tgt, priors_src, tol: float = 1e-8, max_iter: int = 1000) -> EMResult:
    """Saerens-Latinne-Decaestecker EM: q <- mean over target rows of p(.|x) corrected to q, from q = pi_src.

    Stops when no prior moves by `tol` or more; warns if `max_iter` is reached first. The result is a
    fixed point: correcting `probs_tgt` to the returned priors gives posteriors whose mean is those priors.
    """
    if max_iter < 1 or not tol > 0:
        raise ValueError(f"need max_iter >= 1 and tol > 0, got max_iter={max_iter}, tol={tol}")
    p = _probs(probs_tgt)
    pi = _priors(priors_src, p.shape[1], "priors_src", positive=True)
    q = pi
    for n_iter in range(1, max_iter + 1):
        q_new = _corrected(p, pi, q).mean(axis=0)  # inputs checked once above, not per iteration
        moved = np.max(np.abs(q_new - q))
        q = q_new
        if moved < tol:
            break
    else:
        warnings.warn(
            f"EM prior estimate did not converge in {max_iter} iterations (last change {moved:.3g} >= tol {tol:g})",
            RuntimeWarning,
            stacklevel=2,
        )
    return EMResult(q, prior_corrected_probs(p, pi, q), n_iter)


def bbse_priors(y_src, pred_src, pred_tgt, n_classes: int) -> BBSEResult:
    """Black-box shift estimation: solve C w = mu for the importance weights w_j = q_j / pi_src,j.

    C[i, j] = P_src(pred = i, y = j) (the joint confusion matrix of held-out source data) and
    mu[i] = P_tgt(pred = i). Negative weights (sampling noise) are clipped to 0 and q = w * pi_src is
    renormalised. A singular C (a class never predicted, two classes confused alike, a class absent
    from the source) leaves q unidentified: the minimum-norm least-squares w is used and `note` says so.

    >>> r = bbse_priors([0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 0], [0, 0, 0, 1, 1, 1, 1, 1], 2)
    >>> r.priors.round(6).tolist(), r.note
    ([0.25, 0.75], '')
    """
    codes = [np.asarray(a) for a in (y_src, pred_src, pred_tgt)]
    for name, a in zip(("y_src", "pred_src", "pred_tgt"), codes):
        if a.ndim != 1 or a.size == 0 or a.min() < 0 or a.max() >= n_classes or np.any(np.mod(a, 1) != 0):
            raise ValueError(f"{name} must be a non-empty 1-D array of class codes 0..{n_classes - 1}")
    y, ps, pt = (a.astype(np.int64) for a in codes)
    if len(y) != len(ps):
        raise ValueError(f"y_src has {len(y)} rows but pred_src has {len(ps)}")
    joint = np.bincount(ps * n_classes + y, minlength=n_classes**2).reshape(n_classes, n_classes) / len(y)
    mu = np.bincount(pt, minlength=n_classes) / len(pt)
    pi = joint.sum(axis=0)
    notes = []
    rank = np.linalg.matrix_rank(joint)
    if rank == n_classes:
        w = np.linalg.solve(joint, mu)
    else:
        w = np.linalg.lstsq(joint, mu, rcond=None)[0]
        notes.append(
            f"source confusion matrix is singular (rank {rank} of {n_classes}): minimum-norm "
            "least-squares solution used; the target priors are not identified"
        )
        absent = np.flatnonzero(pi == 0).tolist()
        if absent:
            notes.append(f"class(es) {', '.join(map(str, absent))} absent from the source: target prior set to 0")
    negative = np.flatnonzero(w < 0).tolist()
    if negative:
        notes.append(f"negative weight(s) for class(es) {', '.join(map(str, negative))} clipped to 0")
    w = np.clip(w, 0, None)
    q = w * pi
    if q.sum() <= 0:
        notes.append("every weight is zero after clipping: no prior estimate")
        return BBSEResult(np.full(n_classes, np.nan), w, "; ".join(notes))
    return BBSEResult(q / q.sum(), w, "; ".join(notes))


def em_priors_resampled(
    probs_tgt, priors_src, counts, start=None, tol: float = 1e-6, max_iter: int = 500, chunk: int = 50
) -> np.ndarray:
    """EM priors of B bootstrap resamples at once: row b of `counts` (B, n) is how often each target row
    was drawn. Each resample starts from `start` (e.g. the full-data estimate, so few iterations are needed)
    and stops with the rest of its chunk when no prior of any of them moves by `tol`. Returns (B, k)."""
    p = _probs(probs_tgt)
    pi = _priors(priors_src, p.shape[1], "priors_src", positive=True)
    counts = np.asarray(counts, dtype=float)
    q0 = pi if start is None else _priors(start, p.shape[1], "start")
    p = np.ascontiguousarray(p.T)[None]
    return np.concatenate(
        [
            em_batch(
                p, pi[None], counts[lo : lo + chunk], np.tile(q0, (len(counts[lo : lo + chunk]), 1)), tol, max_iter
            )
            for lo in range(0, len(counts), chunk)
        ]
    )


def em_batch(
    p: np.ndarray,
    pi: np.ndarray,
    w: np.ndarray,
    q: np.ndarray,
    tol: float = 1e-6,
    max_iter: int = 500,
    chord: np.ndarray | None = None,
) -> np.ndarray:
    """The EM iteration for B problems at once: posteriors p class-major (B or 1, k, n) from source priors pi
    (B or 1, k), row weights w (B, n), starting priors q (B, k). Inputs are trusted (checked by the callers).
    Each problem stops when none of its priors moves by `tol`; the others go on without it.

    With r = q / pi, a step is q <- r * sum_n w_n p_n / (p_n . r) / sum w: two matrix products per step
    (BLAS), never the corrected (B, k, n) posteriors. With `chord` = (I - M)^-1, M the Jacobian of that step at
    a nearby problem's fixed point (`em_chord`), a step is instead q <- q + (EM step - q) (I - M)^-T: Newton's
    method on the fixed-point equation with the Jacobian held (a chord method), which reaches the same fixed
    point in a few steps where plain EM, linear, takes many (5 against 16 on a bootstrap draw). Where a class's
    prior is near 0 the held Jacobian no longer fits: a problem whose chord step would leave the simplex, or
    move more than its last step, takes plain EM steps from then on (EM's steps keep every prior positive)."""
    q = np.array(q, dtype=float)
    total = w.sum(axis=1, keepdims=True)
    shared, same_pi = len(p) == 1, len(pi) == 1
    batch = np.arange(len(q))  # the problems the arrays below hold: every one still moving, and some done
    moving = np.ones(len(q), bool)
    p_a, pi_a, w_a, total_a = p, pi, w, total
    chordal = np.full(len(q), chord is not None)
    last = np.full(len(q), np.inf)
    for _ in range(max_iter):
        q_a = q[batch]
        r = q_a / pi_a
        if shared:  # one set of posteriors for every resample: plain matrix products
            q_new = r * ((w_a / (r @ p_a[0])) @ p_a[0].T) / total_a
        else:
            v = w_a / np.matmul(r[:, None], p_a)[:, 0]
            q_new = r * np.matmul(p_a, v[..., None])[..., 0] / total_a
        if chord is not None:
            proposal = q_a + (q_new - q_a) @ chord.T
            step = np.max(np.abs(proposal - q_a), axis=1)
            chordal[batch] &= (proposal > 0).all(axis=1) & (step <= last[batch])
            q_new = np.where(chordal[batch, None], proposal, q_new)
        moved = np.max(np.abs(q_new - q_a), axis=1)
        still = moving[batch]
        q[batch[still]], last[batch[still]] = q_new[still], moved[still]
        moving[batch[still & (moved < tol)]] = False
        if not moving.any():
            break
        keep = moving[batch]
        if keep.sum() <= len(batch) // 2:  # half the batch is done: the rest goes on alone, in smaller arrays
            batch = batch[keep]
            p_a = p_a if shared else p_a[keep]
            pi_a = pi_a if same_pi else pi_a[keep]
            w_a, total_a = w_a[keep], total_a[keep]
    return q


def em_chord(probs: np.ndarray, pi: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(I - M)^-1 for `em_batch`'s chord steps, M the Jacobian of the EM step at the fixed point q of the
    posteriors `probs` (n, k) from source priors pi: dF_c/dq_d = [c = d] A_c / pi_c - r_c mean(p_c p_d / s^2) / pi_d
    with r = q / pi, s = p . r and A_c = mean(p_c / s). I - M is invertible where EM converges (M's eigenvalues are
    0, along q, and EM's rates, below 1)."""
    r = q / pi
    s = probs @ r
    a = (probs / s[:, None]).mean(axis=0)
    m = np.diag(a / pi) - r[:, None] * ((probs / s[:, None] ** 2).T @ probs / len(probs)) / pi[None, :]
    return np.linalg.inv(np.eye(len(q)) - m)


def bbse_priors_resampled(y_src, pred_src, pred_tgt, n_classes: int, counts_src, counts_tgt) -> np.ndarray:
    """BBSE priors of B joint bootstrap resamples (draw counts of source and target rows), (B, k): `bbse_draws` of
    their tallies."""
    k = n_classes
    y, ps, pt = (np.asarray(a, dtype=np.int64) for a in (y_src, pred_src, pred_tgt))
    ws, wt = np.asarray(counts_src, dtype=float), np.asarray(counts_tgt, dtype=float)
    joint = (ws @ np.eye(k * k)[ps * k + y]).reshape(len(ws), k, k) / ws.sum(axis=1)[:, None, None]
    return bbse_draws(joint, (wt @ np.eye(k)[pt]) / wt.sum(axis=1, keepdims=True))


def bbse_draws(joint: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """BBSE priors (B, k) from each draw's source confusion matrix `joint` (B, k, k) = P(pred = i, y = j) and target
    predicted shares `mu` (B, k). The pseudo-inverse stands in for the solve, so a draw whose confusion matrix is
    singular gets the minimum-norm solution (as `bbse_priors`); negative weights are clipped and q renormalised
    (NaN if all 0)."""
    w = np.clip(np.einsum("bij,bj->bi", np.linalg.pinv(joint), mu), 0, None)
    q = w * joint.sum(axis=1)
    total = q.sum(axis=1, keepdims=True)
    return np.divide(q, total, out=np.full_like(q, np.nan), where=total > 0)
