"""Change detection over a sequence of windows: a self-starting two-sided CUSUM of a window proportion.

Each window t has a proportion p̂_t of n_t items (e.g. the share the model predicts positive). Its standard
score is taken against the pooled proportion of the windows since the last alarm, p̄,

    z_t = (p̂_t − p̄) / sqrt(p̄ (1 − p̄) (1 / n_t + 1 / N̄)),      N̄ = items pooled into p̄,

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
    z: np.ndarray  # per window (NaN while burning in)
    upper: np.ndarray
    lower: np.ndarray
    alarm: np.ndarray  # bool per window


def self_starting_cusum(successes, trials, *, k: float = 0.5, h: float = 5.0, burn_in: int = 3) -> CusumResult:
    successes, trials = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    n = successes.size
    z, upper, lower = np.full(n, np.nan), np.zeros(n), np.zeros(n)
    alarm = np.zeros(n, dtype=bool)
    pooled_s = pooled_n = 0.0
    seen = 0
    s_up = s_low = 0.0
    for t in range(n):  # sequential by nature: each window's baseline is the windows before it
        if trials[t] <= 0:
            upper[t], lower[t] = s_up, s_low
            continue
        if seen >= burn_in:
            p = pooled_s / pooled_n
            var = p * (1 - p) * (1 / trials[t] + 1 / pooled_n)
            z[t] = (successes[t] / trials[t] - p) / np.sqrt(var) if var > 0 else 0.0
            s_up, s_low = max(0.0, s_up + z[t] - k), max(0.0, s_low - z[t] - k)
        upper[t], lower[t] = s_up, s_low
        if s_up > h or s_low > h:
            alarm[t] = True
            s_up = s_low = 0.0
            pooled_s, pooled_n, seen = 0.0, 0.0, 0  # the new regime builds its own baseline
        pooled_s, pooled_n, seen = pooled_s + successes[t], pooled_n + trials[t], seen + 1
    return CusumResult(z, upper, lower, alarm)
