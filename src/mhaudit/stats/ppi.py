"""Prediction-powered estimates of a model's metrics on a pool of items from a small stratified labelled sample.

The model scored every item of the pool (N items: predicted class ŷ_i, posteriors p_i); the pool is split
into strata h (N_h items) and a simple random sample without replacement of n_h items per stratum has human
labels y_i. Every metric here is a smooth function of the pool means of

    z_i = (1[y_i = k and ŷ_i = k])_k ++ (1[y_i = k])_k        (true positives, true class: 2K coordinates)

whose prediction from the model, f_i = E_p[z_i] = (1[ŷ_i = k] p_ik)_k ++ (p_ik)_k, is known for every item.
The stratified difference (prediction-powered) estimator of the pool mean is

    μ̂ = Σ_h W_h [λ F̄_h + mean over the sample of h of (z − λ f)],    W_h = N_h / N, F̄_h = mean of f over h,

unbiased for every λ and every f, calibrated or not: the labels enter only through the sample mean. λ = 1
is PPI (Angelopoulos et al. 2023), λ = 0 the labels-only design-weighted estimator, and "power" tunes λ per
coordinate to the variance (PPI++, Angelopoulos, Duchi & Zrnic 2023), clipped to [0, 1].

Variance: population="pool" infers the metric on the pooled items themselves (the finite-population
correction): Σ_h a_h S²_h(z − λ f) with a_h = W_h² (1 − n_h / N_h) / n_h. population="platform" treats the
pool as a sample of the platform, and adds the pool's own sampling variance, Σ_h W_h² S²_h(z) / N_h (the
labelled items are part of the pool, so this is not ppi-python's `ppi_mean_ci`, which takes them to be
independent of it; the two agree when n_h ≪ N_h). λ is tuned on the pool part either way.

A stratum whose labelled items all agree has a sample variance of 0, which would claim certainty from a few
labels: each label coordinate's within-stratum variance is floored at p̃ (1 − p̃), p̃ = 0.5 / (n_h + 1), as if
half an item had disagreed (not where the coordinate is 0 by definition: another class's true positives in a
stratum of one predicted class).

Metrics: prevalence_k = t_k, accuracy = Σ_k tp_k, F1_k = 2 tp_k / (q_k + t_k) with q_k the known share of
the pool predicted k, macro-F1 their mean (its standard error by the delta method). Intervals are Student-t with
Satterthwaite's degrees of freedom (normal when the labels are many).
Everything is computed for a batch of samples at once, from a membership matrix (samples x items): a
simulation of thousands of draws is a few matrix products per stratum, no loop over draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mhaudit.stats.f1 import Tallies, macro_f1_unchecked
from mhaudit.stats.undefined import warn_undefined

__all__ = [
    "TUNINGS",
    "POPULATIONS",
    "PoolEstimate",
    "label_coordinates",
    "predicted_coordinates",
    "pool_estimates",
    "anticipated_sd",
    "macro_f1_gradient",
]

TUNINGS = ("power", "ppi", "labels")  # tuned λ, λ = 1, λ = 0
POPULATIONS = ("pool", "platform")


@dataclass
class PoolEstimate:
    """Per sample (axis 0): each metric's estimate and standard error; prevalence per class (axis 1)."""

    estimate: dict[str, np.ndarray]
    se: dict[str, np.ndarray]
    df: dict[str, np.ndarray]  # Satterthwaite degrees of freedom of each standard error
    lam: np.ndarray  # (samples, 2K): the λ used per coordinate

    def half_width(self, metric: str, level: float = 0.95) -> np.ndarray:
        """t quantile (the Satterthwaite df) x standard error: the interval's half-width before clipping."""
        from scipy.stats import t as student_t  # here: importing scipy.stats costs ~0.3 s

        return student_t.ppf(0.5 + level / 2, self.df[metric]) * self.se[metric]

    def interval(self, metric: str, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Student-t interval (the Satterthwaite df), clipped to [0, 1]."""
        est, hw = self.estimate[metric], self.half_width(metric, level)
        return np.clip(est - hw, 0.0, 1.0), np.clip(est + hw, 0.0, 1.0)


def label_coordinates(y: np.ndarray, pred: np.ndarray, k: int) -> np.ndarray:
    """z (items x 2K) for true labels y (-1: unlabelled, a row of zeros that no estimate reads)."""
    y = np.asarray(y)
    true = (y[:, None] == np.arange(k)).astype(float)
    return np.hstack([true * (np.asarray(pred)[:, None] == np.arange(k)), true])


def predicted_coordinates(probs: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """f = E_p[z] (items x 2K) under the posteriors."""
    k = probs.shape[1]
    return np.hstack([probs * (np.asarray(pred)[:, None] == np.arange(k)), probs])


def _moments(membership: np.ndarray, x: np.ndarray, strata: np.ndarray, n_strata: int):
    """Per sample and stratum: the count, the sums of x's rows and of their outer products."""
    n_items, d = x.shape
    outer = (x[:, :, None] * x[:, None, :]).reshape(n_items, d * d)
    b = membership.shape[0]
    count, s1, s2 = np.zeros((b, n_strata)), np.zeros((b, n_strata, d)), np.zeros((b, n_strata, d, d))
    for h in range(n_strata):  # strata, never samples: each is one matrix product over the batch
        rows = strata == h
        m = membership[:, rows]
        count[:, h], s1[:, h] = m.sum(axis=1), m @ x[rows]
        s2[:, h] = (m @ outer[rows]).reshape(b, d, d)
    return count, s1, s2


def _covariances(count, s1, s2):
    """Within-stratum sample covariances (ddof 1); a stratum with fewer than 2 labelled items takes the
    pooled within-stratum covariance of its sample (a count-weighted mean over the other strata)."""
    n = count[..., None, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count[..., None] > 0, s1 / np.maximum(count, 1)[..., None], np.nan)
        cov = (s2 - n * mean[..., :, None] * mean[..., None, :]) / (n - 1)
    ok = count >= 2
    weight = np.where(ok, count - 1, 0.0)[..., None, None]
    pooled = (np.where(ok[..., None, None], cov, 0.0) * weight).sum(axis=1) / np.maximum(weight.sum(axis=1), 1)
    return mean, np.where(ok[..., None, None], cov, pooled[:, None])


def macro_f1_gradient(tp: np.ndarray, t: np.ndarray, q: np.ndarray) -> np.ndarray:
    """∂ macro-F1 / ∂ (tp ++ t) (..., 2K) at pool means tp, t and predicted shares q."""
    k = q.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        denom = q + t
        return np.concatenate([2 / denom / k, -2 * tp / denom**2 / k], axis=-1)


def pool_estimates(
    membership: np.ndarray,
    y: np.ndarray,
    pred: np.ndarray,
    probs: np.ndarray,
    strata: np.ndarray,
    *,
    tuning: str = "power",
    population: str = "pool",
) -> PoolEstimate:
    """Prevalence per class, accuracy and macro-F1 of the predictions `pred` on the pool, for each sample.

    membership: (samples x items) 0/1, the labelled items of each sample (drawn by stratified simple random
    sampling within `strata`, integer codes per item); y: the true class of every labelled item (others: any
    value, e.g. -1); probs: the posteriors (items x K) that predict the labels (they need not be calibrated:
    a worse f costs width, never bias). A sample with a stratum holding no labelled item gets NaN.
    """
    if tuning not in TUNINGS or population not in POPULATIONS:
        raise ValueError(f"tuning must be one of {TUNINGS} and population one of {POPULATIONS}")
    membership = np.atleast_2d(np.asarray(membership, dtype=float))
    pred, strata = np.asarray(pred, dtype=np.int64), np.asarray(strata, dtype=np.int64)
    k, n_strata = probs.shape[1], int(strata.max()) + 1
    y = np.where(membership.any(axis=0), np.asarray(y), -1)
    z, f = label_coordinates(y, pred, k), predicted_coordinates(probs, pred)
    d = 2 * k
    sizes = np.bincount(strata, minlength=n_strata).astype(float)
    w = sizes / sizes.sum()
    count, s1, s2 = _moments(membership, np.hstack([z, f]), strata, n_strata)
    mean, cov = _covariances(count, s1, s2)
    czz, czf, cff = cov[..., :d, :d].copy(), cov[..., :d, d:], cov[..., d:, d:]
    f_mean = np.stack([f[strata == h].mean(axis=0) for h in range(n_strata)])
    # The floor, where a coordinate can vary at all: a stratum of one predicted class has no true positive of
    # another class (z and f are 0 there by definition).
    floor = 0.5 / (count + 1)
    idx = np.arange(d)
    can_vary = np.stack([(f[strata == h] != 0).any(axis=0) for h in range(n_strata)])  # strata x coordinates
    czz[..., idx, idx] = np.where(
        can_vary, np.maximum(czz[..., idx, idx], (floor * (1 - floor))[..., None]), czz[..., idx, idx]
    )
    f_cov = np.stack([np.cov(f[strata == h].T, ddof=1) if sizes[h] > 1 else np.zeros((d, d)) for h in range(n_strata)])
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(count > 0, w**2 * (1 - count / sizes) / count, np.nan)
        lam = _lambda(tuning, a, czf, f_cov, membership.shape[0], d)
        mu = (w[:, None] * (lam[:, None] * f_mean + mean[..., :d] - lam[:, None] * mean[..., d:])).sum(axis=1)
        diag = lam[:, None, :, None] * np.eye(d)  # Λ per sample, broadcast over strata
        resid = czz - czf @ diag - diag @ np.swapaxes(czf, -1, -2) + diag @ cff @ diag  # Cov(z − Λf)
        sampled = a[..., None, None] * resid  # per stratum: the part estimated from the labels
        if population == "platform":  # the pool itself is a sample of the platform
            sampled = sampled + (w**2 / sizes)[None, :, None, None] * czz
    return _metrics(mu, sampled, count, np.bincount(pred, minlength=k) / pred.size, lam, k)


def _lambda(tuning: str, a, czf, f_cov, n_samples: int, d: int) -> np.ndarray:
    if tuning != "power":
        return np.full((n_samples, d), 1.0 if tuning == "ppi" else 0.0)
    num = (a[..., None] * np.diagonal(czf, axis1=-2, axis2=-1)).sum(axis=1)
    den = (a[..., None] * np.diagonal(f_cov, axis1=-2, axis2=-1)).sum(axis=1)
    return np.clip(np.where(den > 0, num / np.where(den > 0, den, 1), 0.0), 0.0, 1.0)


def _variance(parts: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Variance (the sum of per-stratum parts, axis -1) and its Satterthwaite degrees of freedom,
    (Σ_h v_h)² / Σ_h v_h² / (n_h − 1): few labels in the strata that carry the variance give a wide t quantile."""
    with np.errstate(invalid="ignore", divide="ignore"):
        total = parts.sum(axis=-1)
        df = total**2 / (parts**2 / np.maximum(count - 1, 1)).sum(axis=-1)
    return total, np.where(np.isfinite(df), df, np.inf)


def _metrics(mu, sampled, count, q, lam, k: int) -> PoolEstimate:
    # An estimate can leave the feasible set (a negative prevalence, more true positives than positives);
    # macro-F1 and its gradient are taken at the nearest feasible tallies: 0 <= tp <= min(t, q), t >= 0.
    t = np.maximum(mu[:, k:], 0.0)
    tp = np.clip(mu[:, :k], 0.0, np.minimum(t, q))
    ones = np.concatenate([np.ones(k), np.zeros(k)])
    grad = macro_f1_gradient(tp, t, q)
    f1 = macro_f1_unchecked(Tallies(tp, t, q))  # shares of the pool: true positives, true and predicted per class
    if np.isnan(f1).any() and not np.isnan(mu).all(axis=1)[np.isnan(f1)].all():
        warn_undefined("macro-F1 undefined: a class has no true and no predicted item in the pool's estimate")
    prevalence = np.diagonal(sampled, axis1=-2, axis2=-1)[..., k:]  # (samples, strata, K)
    parts = {
        "accuracy": np.einsum("i,bhij,j->bh", ones, sampled, ones),
        "macro_f1": np.einsum("bi,bhij,bj->bh", grad, sampled, grad),
        "prevalence": np.moveaxis(prevalence, 1, 2),
    }
    estimate = {"prevalence": mu[:, k:], "accuracy": mu[:, :k].sum(axis=1), "macro_f1": f1}
    se, df = {}, {}
    for metric, per_stratum in parts.items():
        c = count if metric != "prevalence" else count[:, None, :]
        var, df[metric] = _variance(per_stratum, c)
        se[metric] = np.sqrt(np.maximum(var, 0))
    return PoolEstimate(estimate, se, df, lam)


def anticipated_sd(probs: np.ndarray, pred: np.ndarray, strata: np.ndarray) -> np.ndarray:
    """Per stratum: the standard deviation of the macro-F1 residual a·(z − f) that the posteriors predict
    (a the macro-F1 gradient at their expected tallies). If the posteriors are calibrated, the true class of
    item i is a draw from p_i, and a·z_i = Σ_k v_ik 1[y_i = k] with v_ik = a_{t_k} + a_{tp_k} 1[ŷ_i = k]:
    its variance is Σ_k p_ik v_ik² − (Σ_k p_ik v_ik)². Neyman allocation samples in proportion to N_h times this."""
    k = probs.shape[1]
    pred = np.asarray(pred, dtype=np.int64)
    q = np.bincount(pred, minlength=k) / pred.size
    f = predicted_coordinates(probs, pred).mean(axis=0)
    grad = macro_f1_gradient(f[:k], f[k:], q)
    grad = np.nan_to_num(grad)
    v = grad[k:][None, :] + grad[:k][None, :] * (pred[:, None] == np.arange(k))
    variance = (probs * v**2).sum(axis=1) - (probs * v).sum(axis=1) ** 2
    n_strata = int(np.max(strata)) + 1
    sums = np.bincount(strata, weights=np.maximum(variance, 0), minlength=n_strata)
    return np.sqrt(sums / np.maximum(np.bincount(strata, minlength=n_strata), 1))
