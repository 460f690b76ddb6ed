"""The CBPE interval: every source of error a label-free estimate has under its shift assumption, resampled together.

Each bootstrap draw b (a) resamples the labelled reference and refits the calibration (BCTS) and the source
priors on it, (b) resamples the target rows and re-estimates their priors by EM from the refitted
posteriors, (c) draws each target row's label from its posterior corrected to those priors, and computes
the metric those labels realise on the target's own rows. The 2.5% and 97.5% points of the draws are the
95% interval for the metric the hidden labels realise. Draws are computed `chunk` at a time, vectorised
within a chunk. A draw whose metric is undefined (a class with no drawn label) is NaN, silently: the
interval is taken over the others.
"""

from __future__ import annotations

import numpy as np

from mhaudit.stats.bcts import BCTS, fit_bcts_resampled
from mhaudit.stats.cbpe import METRICS, draw_metrics
from mhaudit.stats.label_shift import em_batch
from mhaudit.stats.undefined import quiet_undefined

__all__ = ["cbpe_draws", "draws_per_chunk", "MAX_CHUNK_BYTES"]

MAX_CHUNK_BYTES = 256 * 2 ** 20  # one float array of a chunk of draws; bounds the memory at any number of rows


def draws_per_chunk(cells_per_draw: int, most: int = 50) -> int:
    """Draws per chunk: `most`, fewer where a (draws, cells_per_draw) float array would pass MAX_CHUNK_BYTES."""
    return int(max(1, min(most, MAX_CHUNK_BYTES // (8 * cells_per_draw))))


def cbpe_draws(z_ref: np.ndarray, y_ref: np.ndarray, z_tgt: np.ndarray, calibration: BCTS, em_start: np.ndarray,
               scores: np.ndarray, n_boot: int, rng: np.random.Generator, *, adjust_priors: bool = True,
               chunk: int = 50) -> dict[str, np.ndarray]:
    """Draws of each metric (METRICS) and of the target priors ("priors", (n_boot, k)); see the module docstring.

    adjust_priors=False keeps the calibrated posteriors as they are (p(y | x) carried over: covariate shift,
    NannyML's CBPE); step (b) then only reports the target's mean posterior as its priors. `chunk` draws at a
    time, fewer where a chunk's (draws, classes, rows) arrays would pass MAX_CHUNK_BYTES."""
    n_ref, n_tgt, k = len(z_ref), len(z_tgt), z_ref.shape[1]
    chunk = draws_per_chunk(k * max(n_ref, n_tgt), chunk)
    z_tgt_t = np.ascontiguousarray(z_tgt.T)  # class-major (k, n): sums over classes add rows
    out = {m: np.empty(n_boot) for m in METRICS} | {"priors": np.empty((n_boot, k))}
    for lo in range(0, n_boot, chunk):
        size = min(chunk, n_boot - lo)
        w_ref = rng.multinomial(n_ref, np.full(n_ref, 1 / n_ref), size=size).astype(float)
        w_tgt = rng.multinomial(n_tgt, np.full(n_tgt, 1 / n_tgt), size=size).astype(float)
        slopes, biases = fit_bcts_resampled(z_ref, y_ref, w_ref, calibration)
        p_tgt = slopes[:, None, None] * z_tgt_t + biases[..., None]  # (B, k, n)
        p_tgt -= p_tgt.max(axis=1, keepdims=True)
        np.exp(p_tgt, out=p_tgt)
        p_tgt /= p_tgt.sum(axis=1, keepdims=True)
        pi = np.stack([w_ref @ (y_ref == c) for c in range(k)], axis=1) / n_ref
        pi = np.clip(pi, 1e-12, None)  # a class a resample missed: EM cannot move a zero prior
        if adjust_priors:
            q = em_batch(p_tgt, pi, w_tgt, np.tile(em_start, (size, 1)))
            posterior = p_tgt * (q / pi)[..., None]
            posterior /= posterior.sum(axis=1, keepdims=True)
        else:
            q = np.matmul(p_tgt, w_tgt[..., None])[..., 0] / n_tgt
            posterior = p_tgt
        with quiet_undefined():
            metrics = draw_metrics(np.swapaxes(posterior, 1, 2), scores, rng)
        for name, values in metrics.items():
            out[name][lo:lo + size] = values
        out["priors"][lo:lo + size] = q
    return out
