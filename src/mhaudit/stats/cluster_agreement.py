"""Agreement between clusterings, many at once: the adjusted Rand index of many labelings against one
reference, and the mutual information of many relabelings (a permutation test), from batched contingency
tables instead of one scikit-learn call each.

`adjusted_rand_indices` gives exactly scikit-learn's `adjusted_rand_score` (the same integer pair counts,
the same final division). `mutual_informations` gives scikit-learn's `mutual_info_score` up to the order of
a dozen-term sum. Permuting one labeling keeps both marginals, and with them the entropies and the expected
mutual information; the adjusted mutual information is then an increasing function of the mutual
information, so a permutation test of AMI can rank the mutual information instead (tests/stats).
"""

from __future__ import annotations

import numpy as np

__all__ = ["contingency_tables", "adjusted_rand_indices", "mutual_informations"]


def _codes(labels: np.ndarray) -> tuple[np.ndarray, int]:
    values, codes = np.unique(np.asarray(labels), return_inverse=True)
    return codes.reshape(np.shape(labels)), values.size


def contingency_tables(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Counts (labelings x row classes x column classes) of `rows` (one labeling, n) against each of
    `columns` (labelings x n), or of each of `rows` (labelings x n) against one `columns` (n)."""
    rows, n_rows = _codes(rows)
    columns, n_cols = _codes(columns)
    rows, columns = np.broadcast_arrays(np.atleast_2d(rows), np.atleast_2d(columns))
    count = rows.shape[0]
    cells = (np.arange(count)[:, None] * (n_rows * n_cols) + rows * n_cols + columns).ravel()
    return np.bincount(cells, minlength=count * n_rows * n_cols).reshape(count, n_rows, n_cols)


def adjusted_rand_indices(reference: np.ndarray, labelings: np.ndarray) -> np.ndarray:
    """ARI of each row of `labelings` (labelings x n) against `reference` (n): scikit-learn's
    `adjusted_rand_score(reference, labeling)` for each, from the same integer pair counts."""
    tables = contingency_tables(reference, labelings).astype(np.int64)
    n = int(np.asarray(reference).size)
    sum_squares = (tables**2).sum(axis=(1, 2))
    row_sums, col_sums = tables.sum(axis=2), tables.sum(axis=1)
    same_row = (tables * col_sums[:, None, :]).sum(axis=(1, 2)) - sum_squares  # pairs apart in the labeling only
    same_col = (tables * row_sums[:, :, None]).sum(axis=(1, 2)) - sum_squares
    # Python integers (object arrays), as scikit-learn converts the counts, so no product overflows; the same
    # float operations in the same order, so the same last bits.
    squares, fp, fn = (a.astype(object) for a in (sum_squares, same_row, same_col))
    tp, tn = squares - n, n * n - fp - fn - squares
    agree = (fn == 0) & (fp == 0)
    denominator = np.where(agree, 1, (tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))
    return np.where(agree, 1.0, 2.0 * (tp * tn - fn * fp) / denominator).astype(np.float64)


def mutual_informations(labelings: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Mutual information (nats) of each row of `labelings` (labelings x n) with `other` (n), as
    scikit-learn's `mutual_info_score` computes it (terms below machine epsilon are 0, the sum clipped at 0)."""
    tables = contingency_tables(labelings, other).astype(np.float64)
    n = tables.sum(axis=(1, 2))[:, None, None]
    row_sums, col_sums = tables.sum(axis=2, keepdims=True), tables.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = tables / n
        terms = share * (np.log(tables) - np.log(n)) + share * (np.log(n) + np.log(n) - np.log(row_sums * col_sums))
    terms = np.where((tables > 0) & (np.abs(terms) >= np.finfo(np.float64).eps), terms, 0.0)
    mi = np.clip(terms.sum(axis=(1, 2)), 0.0, None)
    one_class = ((row_sums[:, :, 0] > 0).sum(axis=1) <= 1) | ((col_sums[:, 0, :] > 0).sum(axis=1) <= 1)
    return np.where(one_class, 0.0, mi)  # a labeling with one class shares no information
