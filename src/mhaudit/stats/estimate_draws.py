"""The bootstrap draws of the label-free estimate, split at the reference.

A draw resamples the labelled reference and the target together. What depends on the reference's resample
alone (the calibration refitted on it, its class shares, ATC's thresholds and DoC's rates, BBSE's confusion
matrix) is computed once per reference (`reference_draws`) and shared by every target it serves: a model
estimated on 20 platforms refits its calibration B times, not 20 B. Each target adds its own resample
(`target_draws`). Each side takes a generator of its own (the estimate audit seeds them by name), so a target's
draws do not depend on which other targets share its reference. Draws come a chunk at a time, so memory stays
bounded at any number of rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import softmax

from mhaudit.core.threads import thread_budget
from mhaudit.stats.atc import METHODS, ReferenceSide, reference_side, target_side
from mhaudit.stats.bcts import BCTS, bcts_expansion, fit_bcts
from mhaudit.stats.bootstrap import resample_counts
from mhaudit.stats.cbpe_interval import cbpe_draws, draws_per_chunk, target_rows
from mhaudit.stats.label_shift import bbse_draws, em_chord

__all__ = ["ReferenceDraws", "reference_draws", "target_draws"]


@dataclass(frozen=True)
class ReferenceDraws:
    """A labelled reference, its calibration, and its side of each of B bootstrap draws."""

    y: np.ndarray  # (n,) class codes
    logits: np.ndarray  # (n, k) the model's scores
    calibration: BCTS  # fitted on every row
    slopes: np.ndarray  # (B,) the calibration refitted on each resample
    biases: np.ndarray  # (B, k)
    priors: np.ndarray  # (B, k) each resample's class shares
    thresholded: ReferenceSide  # ATC's thresholds, DoC's rates and confidences, the error spread
    confusion: np.ndarray  # (B, k, k) each resample's P(pred = i, y = j), for BBSE

    @property
    def n_boot(self) -> int:
        return len(self.slopes)


def _chunks(n_boot: int, cells_per_draw: int):
    step = draws_per_chunk(cells_per_draw, 100)
    return [slice(lo, min(lo + step, n_boot)) for lo in range(0, n_boot, step)]


def _counts(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """(size, n) float draw counts of `size` resamples of n rows with replacement."""
    return resample_counts(np.zeros(n), size, rng, stratified=False).astype(float)


def reference_draws(y: np.ndarray, logits: np.ndarray, n_boot: int, rng: np.random.Generator) -> ReferenceDraws:
    """The reference's side of `n_boot` draws: BCTS refits by its expansion (stats.bcts), class shares, ATC and
    DoC's reference side and BBSE's confusion matrices, each resample's weighted sums as one matrix product. On one
    BLAS/OpenMP thread, as the pairs (stats.pair_estimate)."""
    with thread_budget(1):
        return _reference_draws(np.asarray(y), np.asarray(logits, dtype=float), n_boot, rng)


def _reference_draws(y: np.ndarray, logits: np.ndarray, n_boot: int, rng: np.random.Generator) -> ReferenceDraws:
    n, k = logits.shape
    calibration = fit_bcts(logits, y)
    conf = calibration.probs(logits).max(axis=1)
    # Rows resampled in order of confidence, highest first (any order resamples alike): ATC's cumulative sums
    # then need no reordering of the draw counts.
    order = np.argsort(-conf, kind="stable")
    ys, zs, conf = y[order], logits[order], conf[order]
    expansion = bcts_expansion(zs, ys, calibration)
    pred = zs.argmax(axis=1)
    tallies = np.c_[np.eye(k)[ys], np.eye(k * k)[pred * k + ys]]  # class, confusion cell
    parts = []
    for chunk in _chunks(n_boot, k * n):
        w = _counts(n, chunk.stop - chunk.start, rng)
        sums = w @ tallies / w.sum(axis=1, keepdims=True)
        confusion = sums[:, k:].reshape(-1, k, k)  # [pred, y]: the same tallies, transposed, are ATC's cells
        parts.append(
            (
                *expansion.resampled(w),
                sums[:, :k],
                reference_side(conf, ys, pred, w, k, np.swapaxes(confusion, 1, 2)),
                confusion,
            )
        )
    slopes, biases, priors, sides, confusion = zip(*parts)
    side = ReferenceSide(*(np.concatenate(column) for column in zip(*sides)))
    return ReferenceDraws(
        y,
        logits,
        calibration,
        np.concatenate(slopes),
        np.concatenate(biases),
        np.concatenate(priors),
        side,
        np.concatenate(confusion),
    )


def target_draws(
    reference: ReferenceDraws,
    logits: np.ndarray,
    em_start: np.ndarray,
    rng: np.random.Generator,
    *,
    adjust_priors: bool,
) -> dict:
    """Each draw's estimates on the target (its scores `logits`): CBPE's metrics ("cbpe", metric), the EM and BBSE
    priors ("em", "bbse": (B, k)) and ATC's and DoC's accuracy and macro-F1 ((method, metric)), with the
    reference's side of the same draws. EM starts at `em_start` (the full-data estimate) with chord steps from
    its Jacobian there; adjust_priors as in `cbpe_draws`."""
    r, k = reference, logits.shape[1]
    probs = r.calibration.probs(logits)
    order = np.argsort(probs.max(axis=1), kind="stable")  # resampled by confidence, lowest first, as ATC sums them
    logits, probs = np.asarray(logits, dtype=float)[order], probs[order]
    conf, pred = probs.max(axis=1), logits.argmax(axis=1)
    rows, predicted = target_rows(logits, softmax(logits, axis=1)), np.eye(k)[pred]
    chord = em_chord(probs, np.bincount(r.y, minlength=k) / len(r.y), em_start)
    blocks = []
    for chunk in _chunks(r.n_boot, k * len(logits)):
        w = _counts(len(logits), chunk.stop - chunk.start, rng)
        cbpe = cbpe_draws(
            rows,
            r.slopes[chunk],
            r.biases[chunk],
            r.priors[chunk],
            w,
            em_start,
            rng,
            adjust_priors=adjust_priors,
            chord=chord,
        )
        block = {("cbpe", m): v for m, v in cbpe.items() if m != "priors"} | {"em": cbpe["priors"]}
        block["bbse"] = bbse_draws(r.confusion[chunk], w @ predicted / w.sum(axis=1, keepdims=True))
        side = ReferenceSide(*(part[chunk] for part in r.thresholded))
        for method in METHODS:
            draws = target_side(method, side, conf, pred, w, k)
            block |= {(method, m): draws[m] for m in ("accuracy", "macro_f1")}
        blocks.append(block)
    return {key: np.concatenate([b[key] for b in blocks]) for key in blocks[0]}
