"""The CBPE interval: every source of error a label-free estimate has under its shift assumption, resampled together.

Each bootstrap draw b (a) resamples the labelled reference and refits the calibration (BCTS) and the source
priors on it (stats.estimate_draws: once per reference, shared by its targets), (b) resamples the target rows
and re-estimates their priors by EM from the refitted posteriors, (c) draws each target row's label from its
posterior corrected to those priors, and computes the metric those labels realise on the target's own rows.
The 2.5% and 97.5% points of the draws are the 95% interval for the metric the hidden labels realise. Draws
are computed a chunk at a time, vectorised within a chunk. A draw whose metric is undefined (a class with no
drawn label) is NaN, silently: the interval is taken over the others.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from mhaudit.stats.cbpe import METRICS, draw_metrics, score_ranks
from mhaudit.stats.label_shift import em_batch
from mhaudit.stats.undefined import quiet_undefined

__all__ = ["TargetRows", "target_rows", "cbpe_draws", "draws_per_chunk", "MAX_CHUNK_BYTES"]

MAX_CHUNK_BYTES = 256 * 2**20  # one float array of a chunk of draws; bounds the memory at any number of rows


def draws_per_chunk(cells_per_draw: int, most: int = 50) -> int:
    """Draws per chunk: `most`, fewer where a (draws, cells_per_draw) float array would pass MAX_CHUNK_BYTES."""
    return int(max(1, min(most, MAX_CHUNK_BYTES // (8 * cells_per_draw))))


class TargetRows(NamedTuple):
    """What every chunk of a target's draws reads: made once per target (`target_rows`)."""

    logits: np.ndarray  # (k, n) class-major, each row shifted to a top logit of 0
    scores: np.ndarray  # (n, k) the model's scores: its predictions, and what the AUC ranks
    ranks: np.ndarray  # (k, n) midranks of each class's scores


def target_rows(z_tgt: np.ndarray, scores: np.ndarray) -> TargetRows:
    """The target's logits (class-major, shifted per row), scores and score ranks, made once for every draw."""
    z = np.asarray(z_tgt, dtype=float)
    # class-major, so sums over classes add rows; shifted, so no exp overflows and the top class's exp(b) stays far
    # from 0 (a shift per row changes no posterior)
    return TargetRows(np.ascontiguousarray((z - z.max(axis=1, keepdims=True)).T), scores, score_ranks(scores))


def cbpe_draws(
    target: TargetRows,
    slopes: np.ndarray,
    biases: np.ndarray,
    priors: np.ndarray,
    w_tgt: np.ndarray,
    em_start: np.ndarray,
    rng: np.random.Generator,
    *,
    adjust_priors: bool = True,
    chord: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Steps (b) and (c) for one chunk of B draws: each metric (METRICS) and the EM target priors ("priors", (B, k)).

    From each draw's refitted calibration (slopes (B,), biases (B, k)) and source priors (B, k), the target's draw
    counts w_tgt (B, n) and its rows (`target_rows`: logits and the model's scores). EM starts at `em_start` (the
    full-data estimate), with `chord` steps (label_shift.em_batch) where given. adjust_priors=False draws the labels
    from the calibrated posteriors as they are (p(y | x) carried over: covariate shift, NannyML's CBPE); the EM
    priors are drawn all the same, for their own interval."""
    p_tgt = slopes[:, None, None] * target.logits  # (B, k, n)
    p_tgt += biases[..., None]
    np.exp(p_tgt, out=p_tgt)
    p_tgt /= p_tgt.sum(axis=1, keepdims=True)
    pi = np.clip(priors, 1e-12, None)  # a class a resample missed: EM cannot move a zero prior
    w_tgt = np.asarray(w_tgt, dtype=float)
    q = em_batch(p_tgt, pi, w_tgt, np.tile(em_start, (len(w_tgt), 1)), chord=chord)
    if adjust_priors:
        p_tgt *= (q / pi)[..., None]
        p_tgt /= p_tgt.sum(axis=1, keepdims=True)
    with quiet_undefined():
        metrics = draw_metrics(np.swapaxes(p_tgt, 1, 2), target.scores, rng, target.ranks)
    return {m: metrics[m] for m in METRICS} | {"priors": q}
