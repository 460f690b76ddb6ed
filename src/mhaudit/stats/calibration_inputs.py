"""The input checks of the calibration statistics and of temperature scaling (stats.calibration,
stats.temperature): a score matrix (probabilities or logits), integer class labels, a bin count, a temperature.
Each refuses a bad input with a ValueError that says where it is bad."""

from __future__ import annotations

import numpy as np

__all__ = ["ROW_SUM_TOL", "check_matrix", "check_probs", "check_labels", "check_bins", "check_temperature"]

ROW_SUM_TOL = 1e-6


def check_matrix(a, name: str) -> np.ndarray:
    """`a` as a finite float matrix of shape (n_samples >= 1, n_classes >= 2)."""
    a = np.asarray(a, dtype=float)
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] < 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n_samples >= 1, n_classes >= 2); got shape {a.shape}")
    bad = ~np.isfinite(a)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(f"{name} contain NaN or inf ({int(bad.sum())} values; first at row {row}, column {col})")
    return a


def check_probs(probs) -> np.ndarray:
    """`probs` as a matrix of probabilities in [0, 1] whose rows sum to 1 within ROW_SUM_TOL."""
    p = check_matrix(probs, "probs")
    if p.min() < 0 or p.max() > 1:
        row = int(np.flatnonzero(((p < 0) | (p > 1)).any(axis=1))[0])
        raise ValueError(f"probs must lie in [0, 1]; row {row} does not")
    off = np.abs(p.sum(axis=1) - 1.0) > ROW_SUM_TOL
    if off.any():
        row = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"probs rows must sum to 1 within {ROW_SUM_TOL:g}; {int(off.sum())} rows do not, "
            f"the first is row {row} (sum {p[row].sum():.9g})"
        )
    return p


def check_labels(y, n: int, c: int) -> np.ndarray:
    """`y` as n integer class indices in [0, c) (whole floats are accepted and converted)."""
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n:
        raise ValueError(f"y must be a 1-D array of {n} labels (one per row); got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        if not (np.issubdtype(y.dtype, np.floating) and np.all(y == np.round(y))):
            raise ValueError(f"y must hold integer class indices in [0, {c}); got dtype {y.dtype}")
        y = y.astype(np.int64)
    if y.min() < 0 or y.max() >= c:
        row = int(np.flatnonzero((y < 0) | (y >= c))[0])
        raise ValueError(f"y must hold class indices in [0, {c}); row {row} has {y[row]}")
    return y


def check_bins(n_bins: int) -> int:
    """`n_bins` as a positive int."""
    if int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer; got {n_bins}")
    return int(n_bins)


def check_temperature(temperature: float) -> float:
    """`temperature` as a finite float > 0."""
    if not np.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be a finite number > 0; got {temperature}")
    return float(temperature)
