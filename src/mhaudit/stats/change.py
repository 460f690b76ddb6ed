"""Change detection over a sequence of windows: a self-starting two-sided CUSUM of a window mean.

Each window t has the mean x̄_t of n_t items' values (e.g. each post's calibrated probability of the positive
class, or 0/1: the share predicted positive). Its standard score is taken against the pooled mean of the
windows since the last alarm, x̄,

    z_t = (x̄_t − x̄) / sqrt(s² (1 / n_t + 1 / N̄)),      N̄ = items pooled into x̄,

with s² the pooled items' variance (given their sums of squares; for 0/1 values x̄ (1 − x̄)). Real streams
swing from window to window more than independent items would (weekdays, news): once the baseline holds
`burn_in` windows, the variance is at least the spread of its window means, s²_w (1 + 1/m) over m windows,
so ordinary day-to-day variation does not accumulate into alarms.

so the baseline is the stream's own recent past, never a reference sample whose own error would add a
fixed offset to every window and sooner or later trip the detector. The two CUSUMs
S⁺_t = max(0, S⁺_{t−1} + z_t − k) and S⁻_t = max(0, S⁻_{t−1} − z_t − k) raise an alarm when either exceeds h;
then both restart, and so does the baseline (from the alarming window). The first `burn_in` windows after
a start only build the baseline. k = 0.5 and h = 5 (Page 1954; Hawkins & Olwell 1998): for a normal score the
in-control average run length of each one-sided CUSUM is about 465 windows, about 230 for the pair; a shift
of one standard error is found in about 10 windows, one of several standard errors in the first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CusumResult", "self_starting_cusum"]


@dataclass
class CusumResult:
    """The self-starting CUSUM per window: the standardised mean z, the upper and lower sums, the alarms."""

    z: np.ndarray  # per window (NaN while burning in)
    upper: np.ndarray
    lower: np.ndarray
    alarm: np.ndarray  # bool per window


def self_starting_cusum(sums, counts, squares=None, *, k: float = 0.5, h: float = 5.0, burn_in: int = 3) -> CusumResult:
    """Per window: the sum of its items' values, their count, and the sum of their squares (None: 0/1 values)."""
    sums, counts = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    squares = sums if squares is None else np.asarray(squares, dtype=float)  # x² = x for 0/1 values
    n = sums.size
    z, upper, lower = np.full(n, np.nan), np.zeros(n), np.zeros(n)
    alarm = np.zeros(n, dtype=bool)
    pooled = np.zeros(3)  # sum, sum of squares, count since the last alarm
    means: list[float] = []  # the window means since the last alarm
    s_up = s_low = 0.0
    for t in range(n):  # sequential by nature: each window's baseline is the windows before it
        if counts[t] <= 0:
            upper[t], lower[t] = s_up, s_low
            continue
        if len(means) >= burn_in:
            mean = pooled[0] / pooled[2]
            var = max(
                max(pooled[1] / pooled[2] - mean**2, 0.0) * (1 / counts[t] + 1 / pooled[2]),
                float(np.var(means, ddof=1)) * (1 + 1 / len(means)),
            )
            z[t] = (sums[t] / counts[t] - mean) / np.sqrt(var) if var > 0 else 0.0
            s_up, s_low = max(0.0, s_up + z[t] - k), max(0.0, s_low - z[t] - k)
        upper[t], lower[t] = s_up, s_low
        if s_up > h or s_low > h:
            alarm[t] = True
            s_up = s_low = 0.0
            pooled, means = np.zeros(3), []  # the new regime builds its own baseline
        pooled += (sums[t], squares[t], counts[t])
        means.append(sums[t] / counts[t])
    return CusumResult(z, upper, lower, alarm)
