"""Bias-corrected temperature scaling (BCTS): softmax(z / T + b), fitted by maximum likelihood.

Alexandari, Kundaje & Shrikumar (2020), "Maximum likelihood with bias-corrected calibration is hard-to-beat
at label shift adaptation", ICML: the class biases b let the calibrated posteriors match the source priors,
which EM prior estimation needs. The NLL is convex in (1/T, b) (a multinomial logistic regression on the
logits with one shared slope), so L-BFGS finds the global minimum; b_0 = 0 fixes the softmax's free shift.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_softmax

__all__ = ["BCTS", "fit_bcts", "fit_bcts_resampled"]


class BCTS(NamedTuple):
    slope: float  # 1 / T
    bias: np.ndarray  # one per class, bias[0] = 0

    def log_probs(self, logits) -> np.ndarray:
        return log_softmax(np.asarray(logits, dtype=float) * self.slope + self.bias, axis=1)

    def probs(self, logits) -> np.ndarray:
        return np.exp(self.log_probs(logits))


def fit_bcts(logits, y) -> BCTS:
    """The (1/T, b) minimising the mean NLL of softmax(logits / T + b) on labelled rows.

    Log-probabilities work as logits. Every class must occur in y (a class never seen gets b = -inf).

    >>> z = np.array([[2.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.0, 2.0]])
    >>> m = fit_bcts(z, np.array([0, 0, 1, 0]))
    >>> m.probs(z).mean(axis=0).round(6).tolist()  # the calibrated posteriors average to the priors
    [0.75, 0.25]
    """
    z = np.asarray(logits, dtype=float)
    y = np.asarray(y)
    if z.ndim != 2 or len(z) != len(y) or len(z) == 0 or not np.isfinite(z).all():
        raise ValueError(f"logits must be a finite (n, k) array with one label per row; got shape {z.shape}")
    n, k = z.shape
    counts = np.bincount(y, minlength=k)
    if len(counts) > k or (counts == 0).any():
        raise ValueError(f"every one of the {k} classes needs a labelled row to fit the calibration biases")
    onehot = np.eye(k)[y]
    z = z - z.mean(axis=1, keepdims=True)  # a shift per row changes no softmax and conditions the problem

    def loss(params):
        a, b = params[0], np.concatenate([[0.0], params[1:]])
        logp = log_softmax(a * z + b, axis=1)
        p = np.exp(logp)
        resid = (p - onehot) / n
        grad = np.concatenate([[np.sum(resid * z)], resid.sum(axis=0)[1:]])
        return -np.sum(logp[np.arange(n), y]) / n, grad

    start = np.concatenate([[1.0], np.log(counts[1:] / counts[0])])
    res = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": 500, "gtol": 1e-10})
    return BCTS(float(res.x[0]), np.concatenate([[0.0], res.x[1:]]))


def fit_bcts_resampled(logits, y, counts, start: BCTS, n_iter: int = 25) -> tuple[np.ndarray, np.ndarray]:
    """BCTS refitted on B bootstrap resamples at once (row b of `counts` (B, n): how often each row was drawn),
    by Newton's method from `start` (the full-data fit). Returns slopes (B,) and biases (B, k), bias[:, 0] = 0.

    The NLL is convex in (slope, b_1..b_{k-1}) and smooth, so a handful of full Newton steps from a nearby
    start converge; a step that would raise the loss is halved (backtracking), resample by resample.
    """
    z = np.asarray(logits, dtype=float)
    z = z - z.mean(axis=1, keepdims=True)
    y = np.asarray(y)
    w = np.asarray(counts, dtype=float)
    n, k = z.shape
    onehot = np.eye(k)[y]
    params = np.tile(np.r_[start.slope, start.bias[1:]], (len(w), 1))  # (B, k)
    total = w.sum(axis=1)

    def loss(p):
        logp = log_softmax(p[:, :1, None] * z[None] + np.concatenate([np.zeros((len(p), 1)), p[:, 1:]], 1)[:, None],
                           axis=2)
        return -np.einsum("bn,bn->b", w, logp[:, np.arange(n), y]) / total, np.exp(logp)

    current, prob = loss(params)
    for _ in range(n_iter):
        resid = prob - onehot[None]  # (B, n, k)
        # d/dslope = sum_i w (p - y) . z_i ; d/db_j = sum_i w (p_j - y_j), j >= 1
        g = np.concatenate([np.einsum("bn,bnk,nk->b", w, resid, z)[:, None], np.einsum("bn,bnk->bk", w, resid)[:, 1:]],
                           axis=1) / total[:, None]
        # Hessian of the softmax NLL: J^T (diag p - p p^T) J with J = [z | e_1..e_{k-1}]
        zp = np.einsum("bnk,nk->bn", prob, z)
        h_ss = np.einsum("bn,bnk,nk->b", w, prob, z ** 2) - np.einsum("bn,bn->b", w, zp ** 2)
        h_sb = np.einsum("bn,bnk,nk->bk", w, prob, z) - np.einsum("bn,bn,bnk->bk", w, zp, prob)
        h_bb = np.einsum("bn,bnk->bk", w, prob)[:, :, None] * np.eye(k) - np.einsum("bn,bnj,bnk->bjk", w, prob, prob)
        hess = np.empty((len(w), k, k))
        hess[:, 0, 0] = h_ss
        hess[:, 0, 1:] = hess[:, 1:, 0] = h_sb[:, 1:]
        hess[:, 1:, 1:] = h_bb[:, 1:, 1:]
        step = np.linalg.solve(hess / total[:, None, None] + 1e-10 * np.eye(k), g[..., None])[..., 0]
        scale = np.ones(len(w))
        for _ in range(10):  # backtracking: halve the step where the loss would rise
            trial = params - scale[:, None] * step
            new, new_prob = loss(trial)
            worse = new > current + 1e-12
            if not worse.any():
                break
            scale = np.where(worse, scale / 2, scale)
        params, current, prob = trial, new, new_prob
        if np.max(np.abs(g)) < 1e-9:
            break
    return params[:, 0], np.concatenate([np.zeros((len(w), 1)), params[:, 1:]], axis=1)
