"""Distribution drift of a stream window against a reference sample: PSI, two-sample KS, Jensen–Shannon.

PSI (population stability index) bins both samples at the reference's deciles: Σ_b (q_b − p_b) ln(q_b / p_b)
with p the reference's bin shares and q the window's, each share floored at `EPS` so an empty bin is finite.
The common reading: < 0.10 stable, 0.10–0.25 a moderate shift, > 0.25 a large one. Jensen–Shannon is the
distance (base 2, in [0, 1]) between the same binned shares; for a categorical variable (the language mix)
the bins are the categories. KS is scipy's two-sample statistic and p value on the raw values.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import jensenshannon
from scipy.stats import ks_2samp

__all__ = ["EPS", "decile_edges", "binned_shares", "psi", "js_distance", "ks", "category_shares"]

EPS = 1e-4


def decile_edges(reference: np.ndarray, n_bins: int = 10) -> np.ndarray:
    """Inner bin edges at the reference's quantiles (distinct values only: ties merge bins)."""
    return np.unique(np.quantile(np.asarray(reference, dtype=float), np.linspace(0, 1, n_bins + 1)[1:-1]))


def binned_shares(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Share of `values` in each bin (−inf, e_1], (e_1, e_2], …, (e_last, inf)."""
    counts = np.bincount(np.searchsorted(edges, np.asarray(values, dtype=float), side="left"), minlength=edges.size + 1)
    return counts / max(counts.sum(), 1)


def psi(reference_shares: np.ndarray, window_shares: np.ndarray) -> float:
    """Population stability index of the window's shares against the reference's (shares floored at EPS)."""
    p, q = (np.maximum(np.asarray(s, dtype=float), EPS) for s in (reference_shares, window_shares))
    return float(((q - p) * np.log(q / p)).sum())


def js_distance(reference_shares: np.ndarray, window_shares: np.ndarray) -> float:
    """Jensen–Shannon distance (base 2) between the reference's and the window's shares."""
    return float(jensenshannon(reference_shares, window_shares, base=2))


def ks(reference: np.ndarray, window: np.ndarray) -> tuple[float, float]:
    """Two-sample Kolmogorov–Smirnov statistic and p value of the window's values against the reference's."""
    result = ks_2samp(reference, window)
    return float(result.statistic), float(result.pvalue)


def category_shares(values, categories: list[str]) -> np.ndarray:
    """Shares of each category (the last one, "other", takes the rest)."""
    values = list(values)
    counts = np.array([sum(v == c for v in values) for c in categories[:-1]], dtype=float)
    counts = np.append(counts, len(values) - counts.sum())
    return counts / max(len(values), 1)
