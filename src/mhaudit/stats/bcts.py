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

__all__ = ["BCTS", "fit_bcts"]


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
