"""Agreement between labelers: Cohen's kappa and Krippendorff's alpha.

Definitions (docs/validation.md):

* observed agreement p_o = share of items both labelers put in the same class;
* Cohen's kappa = (p_o - p_e) / (1 - p_e) with the chance agreement p_e = sum_c r_c * c_c / n^2 from
  the two labelers' marginal counts r_c, c_c (the formula the Bluesky paper omits). It is computed
  exactly from the integer confusion table, n * trace - sum r_c c_c over n^2 - sum r_c c_c, so
  "undefined" (p_e = 1: both labelers used the same single class, or no items) is an exact zero
  denominator, reported as NaN with a reason and never as 0 or 1;
* Krippendorff's alpha (nominal) = 1 - D_o / D_e from the coincidence matrix of all pairable values:
  any number of coders, missing values allowed, items with fewer than two values ignored.

A weak labeler against a reference (precision, recall, F1, ...) is `mhaudit.stats.weak_metrics`.

Uncertainty is an item bootstrap with percentile intervals (`summarise`). Every statistic here depends
on a resample only through its confusion table, and the confusion table of n items drawn with
replacement is Multinomial(n, observed cell shares): the bootstrap draws the tables directly (one
`multinomial` call, no Python loop over resamples and no n-wide matrices), which is the item bootstrap
exactly, not an approximation. Krippendorff's alpha resamples items as count matrices times per-item
coincidence contributions. With `clusters` (e.g. each item's author) every bootstrap draws whole clusters
instead (`stats.bootstrap.resample_clusters`): posts by one author are not independent.

This module imports nothing from the rest of mhaudit but `mhaudit.stats`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mhaudit.stats.bootstrap import resample_clusters, resampled_sums, summarise
from mhaudit.stats.undefined import quiet_undefined, warn_undefined

__all__ = [
    "confusion_matrix",
    "kappa_from_confusion",
    "kappa_reason",
    "cohen_kappa",
    "observed_agreement",
    "bootstrap_kappa",
    "krippendorff_alpha",
    "draw_tables",
]


# ----------------------------------------------------------------------------------------- inputs
def _vector(values, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and pd.isna(pd.Series(arr, dtype=object)).any():
        raise ValueError(f"{name} has missing values; pair the labels first (drop items either labeler skipped)")
    return arr


def confusion_matrix(a, b, labels: Sequence | None = None) -> tuple[np.ndarray, list]:
    """The k x k table of counts, rows = labels of `a`, columns = labels of `b`, and the label order.

    `labels` fixes the classes and their order (a value outside it is an error); by default the sorted
    union of the values seen.

    >>> table, labels = confusion_matrix([1, 1, 0, 0, 1], [1, 0, 0, 0, 1])
    >>> table.tolist(), labels
    ([[2, 0], [1, 2]], [0, 1])
    """
    a, b = _vector(a, "a"), _vector(b, "b")
    if a.size != b.size:
        raise ValueError(f"a and b must label the same items: {a.size} vs {b.size} values")
    if labels is None:
        labels = sorted(set(a.tolist()) | set(b.tolist()))
    labels = list(labels)
    index = {value: i for i, value in enumerate(labels)}
    if len(index) != len(labels):
        raise ValueError(f"labels must be distinct, got {labels}")
    try:
        ia = np.fromiter((index[v] for v in a.tolist()), dtype=np.int64, count=a.size)
        ib = np.fromiter((index[v] for v in b.tolist()), dtype=np.int64, count=b.size)
    except KeyError as exc:
        raise ValueError(f"value {exc.args[0]!r} is not one of the labels {labels}") from None
    k = len(labels)
    table = np.bincount(ia * k + ib, minlength=k * k).reshape(k, k) if k else np.zeros((0, 0), dtype=np.int64)
    return table.astype(np.int64), labels


# ----------------------------------------------------------------------------------------- kappa
def _kappa_parts(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n, numerator n*trace - sum r c, denominator n^2 - sum r c (exact for integer tables)."""
    n = tables.sum(axis=(-2, -1))
    trace = np.trace(tables, axis1=-2, axis2=-1)
    chance = (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1)
    return n, n * trace - chance, n * n - chance


def kappa_from_confusion(tables) -> np.ndarray | float:
    """Cohen's kappa of each k x k confusion table (shape (..., k, k)); NaN where undefined (warned).

    Undefined: no items, or chance agreement 1 (both labelers used one and the same class). Integer
    tables give an exact fraction rounded once; weighted (float) tables are accepted too.

    >>> round(kappa_from_confusion([[2, 0], [1, 2]]), 4)
    0.6154
    >>> kappa_from_confusion([[[5, 0], [0, 0]], [[3, 1], [1, 3]]])
    array([nan, 0.5])
    """
    tables = np.asarray(tables)
    if tables.ndim < 2 or tables.shape[-1] != tables.shape[-2]:
        raise ValueError(f"confusion tables must have shape (..., k, k), got {tables.shape}")
    if tables.size and tables.min() < 0:
        raise ValueError("confusion counts must be non-negative")
    if np.issubdtype(tables.dtype, np.integer):
        tables = tables.astype(np.int64)
    _, num, den = _kappa_parts(tables)
    out = np.full(np.shape(num), np.nan)
    np.divide(num, den, out=out, where=den > 0)
    undefined = int(np.count_nonzero(np.isnan(out)))
    if undefined:
        warn_undefined(
            f"Cohen's kappa undefined for {undefined} of {out.size} table(s) (no items, or chance "
            "agreement 1: both labelers used one and the same class); NaN returned",
            stacklevel=3,
        )
    return float(out) if out.ndim == 0 else out


def kappa_reason(table, labels: Sequence | None = None) -> str | None:
    """Why kappa is undefined for this confusion table, or None when it is defined.

    >>> kappa_reason([[4, 0], [0, 0]], labels=["no", "yes"])
    "undefined: chance agreement is 1 (both labelers gave every item the class 'no')"
    """
    table = np.asarray(table)
    n, _, den = _kappa_parts(table)
    if n == 0:
        return "undefined: no items labelled by both"
    if den <= 0:
        used = np.flatnonzero(table.sum(axis=1) + table.sum(axis=0))
        name = labels[used[0]] if labels is not None and used.size else (used[0] if used.size else "?")
        return f"undefined: chance agreement is 1 (both labelers gave every item the class {name!r})"
    return None


def cohen_kappa(a, b, labels: Sequence | None = None) -> float:
    """Cohen's kappa between two labelings of the same items (binary or k-class); NaN when undefined.

    Equals `sklearn.metrics.cohen_kappa_score` wherever that is defined.

    >>> round(cohen_kappa([1, 1, 0, 0, 1], [1, 0, 0, 0, 1]), 4)  # p_o = 0.8, p_e = 0.48
    0.6154
    >>> cohen_kappa(["x", "x", "x"], ["x", "x", "x"])
    nan
    """
    table, _ = confusion_matrix(a, b, labels)
    return float(kappa_from_confusion(table))  # warns when undefined


def observed_agreement(a, b) -> float:
    """Share of items with the same label from both labelers; NaN without items.

    >>> observed_agreement([1, 1, 0, 0, 1], [1, 0, 0, 0, 1])
    0.8
    """
    a, b = _vector(a, "a"), _vector(b, "b")
    if a.size != b.size:
        raise ValueError(f"a and b must label the same items: {a.size} vs {b.size} values")
    return float(np.mean(a == b)) if a.size else float("nan")


def draw_tables(table: np.ndarray, n_boot: int, rng) -> np.ndarray:
    """`n_boot` item-bootstrap confusion tables: Multinomial(n, observed cell shares), shape (n_boot, k, k)."""
    n = int(table.sum())
    if n == 0:
        return np.zeros((n_boot, *table.shape), dtype=np.int64)
    return rng.multinomial(n, table.ravel() / n, size=n_boot).reshape(n_boot, *table.shape).astype(np.int64)


def _boot_tables(table, a, b, labels, clusters, n_boot: int, rng) -> np.ndarray:
    """Resampled confusion tables: multinomial (the item bootstrap), or whole clusters of items."""
    if clusters is None:
        return draw_tables(table, n_boot, rng)
    k = len(labels)
    index = {label: i for i, label in enumerate(labels)}
    cells = np.array([index[x] * k + index[y] for x, y in zip(_vector(a, "a"), _vector(b, "b"))], dtype=int)
    return resample_clusters(np.eye(k * k)[cells], clusters, n_boot, rng).reshape(n_boot, k, k)


def bootstrap_kappa(
    a, b, *, labels: Sequence | None = None, n_boot: int = 2000, alpha: float = 0.05, rng=None, clusters=None
) -> dict:
    """Cohen's kappa with an item-bootstrap percentile CI (a cluster bootstrap with `clusters`, one label per item).

    Returns `estimate, ci_low, ci_high, se, n, n_boot, n_failed, observed_agreement,
    expected_agreement, reason` (reason None when kappa is defined). Resamples whose kappa is
    undefined (all items in one class) count as failed and are left out of the interval.
    `rng`: a `numpy.random.Generator` or a seed.

    >>> r = bootstrap_kappa([1, 1, 0, 0, 1, 0, 1, 0], [1, 0, 0, 0, 1, 0, 1, 1], n_boot=500, rng=0)
    >>> r["estimate"], r["observed_agreement"], r["n"], r["reason"]
    (0.5, 0.75, 8, None)
    >>> -1 <= r["ci_low"] <= r["estimate"] <= r["ci_high"] <= 1
    True
    """
    if n_boot < 0:
        raise ValueError(f"n_boot must be non-negative, got {n_boot}")
    table, labels = confusion_matrix(a, b, labels)
    n = int(table.sum())
    rng = np.random.default_rng(rng)
    with quiet_undefined():  # a record: `reason` and `n_failed` say it
        estimate = float(kappa_from_confusion(table))
        boot = kappa_from_confusion(_boot_tables(table, a, b, labels, clusters, n_boot, rng))
    summary = summarise(boot, alpha)
    expected = (float((table.sum(axis=1) * table.sum(axis=0)).sum()) / n**2) if n else float("nan")
    return {
        "estimate": estimate,
        "ci_low": summary["ci_low"],
        "ci_high": summary["ci_high"],
        "se": summary["se"],
        "n": n,
        "n_boot": summary["n_boot"],
        "n_failed": summary["n_failed"],
        "observed_agreement": float(np.trace(table)) / n if n else float("nan"),
        "expected_agreement": expected,
        "reason": kappa_reason(table, labels),
    }


# ---------------------------------------------------------------------------------- Krippendorff
def _value_counts(data) -> tuple[np.ndarray, list]:
    """Per item (column of `data`, coders x items), how many coders gave each value: (items, k)."""
    frame = pd.DataFrame(np.asarray(data, dtype=object))
    if frame.ndim != 2 or frame.shape[0] < 1:
        raise ValueError("reliability data must be a coders x items matrix")
    long = frame.stack(future_stack=True).dropna()
    codes, values = pd.factorize(long, sort=True)
    items = long.index.get_level_values(1).to_numpy()
    counts = np.zeros((frame.shape[1], len(values)), dtype=np.int64)
    np.add.at(counts, (items, codes), 1)
    return counts, list(values)


def _alpha_from_coincidence(o: np.ndarray) -> np.ndarray:
    """Nominal alpha from coincidence matrices (..., k, k): 1 - (n-1) * sum_off(o) / sum_off(n_c n_k)."""
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    disagree = n - np.trace(o, axis1=-2, axis2=-1)
    expected = n * n - (n_c * n_c).sum(axis=-1)  # sum over c != k of n_c n_k
    out = np.full(np.shape(n), np.nan)
    np.divide((n - 1) * disagree, expected, out=out, where=expected > 1e-12)
    return (1 - out)[()]


def krippendorff_alpha(data, *, n_boot: int = 0, alpha: float = 0.05, rng=None, clusters=None) -> dict:
    """Krippendorff's alpha for nominal data: any number of coders, missing values (None/NaN) allowed.

    `data` is a coders x items matrix (the `krippendorff` package's `reliability_data`). Items with
    fewer than two values are not pairable and are ignored. Returns `estimate, ci_low, ci_high, se,
    n_boot, n_failed, n_coders, n_items` (pairable items), `n_values` (pairable values) and `reason`
    (None when defined; alpha is undefined when the pairable values all share one class or there are
    none). With `n_boot > 0`, an item-bootstrap percentile CI; with `clusters` (one label per item, i.e.
    per column of `data`) a cluster bootstrap.

    >>> data = [[1, 1, 0, 0, None], [1, 0, 0, 0, 1], [1, 1, 0, None, 1]]
    >>> r = krippendorff_alpha(data)
    >>> round(r["estimate"], 4), r["n_items"], r["n_values"], r["reason"]
    (0.7143, 5, 13, None)
    """
    counts, values = _value_counts(data)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    k = len(values)
    # Each pairable item adds (n_uc n_uk - [c == k] n_uc) / (m_u - 1) to the coincidence matrix.
    contrib = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(k, dtype=np.int64)[None]
    contrib = contrib / (m - 1)[:, None, None]
    o = contrib.sum(axis=0) if counts.size else np.zeros((k, k))
    estimate = float(_alpha_from_coincidence(o)) if k else float("nan")
    n_values = int(m.sum())
    if n_values == 0:
        reason = "undefined: no item has values from two coders"
    elif not np.isfinite(estimate):
        reason = f"undefined: every pairable value is {values[int(np.argmax(o.sum(axis=1)))]!r} (no variation)"
    else:
        reason = None
    result = {
        "estimate": estimate,
        "ci_low": np.nan,
        "ci_high": np.nan,
        "se": np.nan,
        "n_boot": 0,
        "n_failed": 0,
        "n_coders": int(np.asarray(data, dtype=object).shape[0]),
        "n_items": int(pairable.sum()),
        "n_values": n_values,
        "reason": reason,
    }
    if n_boot > 0 and counts.size:
        flat = contrib.reshape(len(counts), k * k)
        if clusters is not None:
            tables = resample_clusters(flat, np.asarray(clusters, dtype=object)[pairable], n_boot, rng)
        else:
            tables = resampled_sums(np.zeros(len(counts)), flat, n_boot, np.random.default_rng(rng), stratified=False)
        boot = _alpha_from_coincidence(tables.reshape(n_boot, k, k))
        result.update({key: summarise(boot, alpha)[key] for key in ("ci_low", "ci_high", "se", "n_boot", "n_failed")})
    return result
