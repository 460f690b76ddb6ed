"""Agreement between labelers: Cohen's kappa, Krippendorff's alpha, and a weak labeler against a reference.

Definitions (docs/validation.md):

* observed agreement p_o = share of items both labelers put in the same class;
* Cohen's kappa = (p_o - p_e) / (1 - p_e) with the chance agreement p_e = sum_c r_c * c_c / n^2 from
  the two labelers' marginal counts r_c, c_c (the formula the Bluesky paper omits). It is computed
  exactly from the integer confusion table, n * trace - sum r_c c_c over n^2 - sum r_c c_c, so
  "undefined" (p_e = 1: both labelers used the same single class, or no items) is an exact zero
  denominator, reported as NaN with a reason and never as 0 or 1;
* Krippendorff's alpha (nominal) = 1 - D_o / D_e from the coincidence matrix of all pairable values:
  any number of coders, missing values allowed, items with fewer than two values ignored;
* a weak labeler against a reference: observed agreement, kappa, positive-class precision, recall, F1,
  the negative class's F1, macro-F1 (mean of the two F1s), specificity and both positive rates, each
  NaN with a reason where its denominator is zero.

Uncertainty is an item bootstrap with percentile intervals (`summarise`). Every statistic here depends
on a resample only through its confusion table, and the confusion table of n items drawn with
replacement is Multinomial(n, observed cell shares): the bootstrap draws the tables directly (one
`multinomial` call, no Python loop over resamples and no n-wide matrices), which is the item bootstrap
exactly, not an approximation. Where items carry design weights (a stratified validation sample), the
resamples are stratified count matrices and the weighted tables one matrix product. Krippendorff's
alpha resamples items as count matrices times per-item coincidence contributions.

This module imports nothing from the rest of mhaudit but `mhaudit.stats`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mhaudit.stats.bootstrap import resample_counts, summarise

__all__ = [
    "confusion_matrix",
    "kappa_from_confusion",
    "kappa_reason",
    "cohen_kappa",
    "observed_agreement",
    "bootstrap_kappa",
    "krippendorff_alpha",
    "binary_metrics",
    "binary_reasons",
    "weak_vs_reference",
    "BINARY_METRICS",
]

# Resamples per block for count-matrix bootstraps (resamples x items counts, int32).
_BLOCK_CELLS = 1 << 20


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
    """Cohen's kappa of each k x k confusion table (shape (..., k, k)); NaN where undefined.

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
    return float(kappa_from_confusion(table))


def observed_agreement(a, b) -> float:
    """Share of items with the same label from both labelers; NaN without items.

    >>> observed_agreement([1, 1, 0, 0, 1], [1, 0, 0, 0, 1])
    0.8
    """
    a, b = _vector(a, "a"), _vector(b, "b")
    if a.size != b.size:
        raise ValueError(f"a and b must label the same items: {a.size} vs {b.size} values")
    return float(np.mean(a == b)) if a.size else float("nan")


def _draw_tables(table: np.ndarray, n_boot: int, rng) -> np.ndarray:
    """`n_boot` item-bootstrap confusion tables: Multinomial(n, observed cell shares), shape (n_boot, k, k)."""
    n = int(table.sum())
    flat = table.ravel()
    if n == 0:
        return np.zeros((n_boot, *table.shape), dtype=np.int64)
    draws = rng.multinomial(n, flat / n, size=n_boot)
    return draws.reshape(n_boot, *table.shape).astype(np.int64)


def bootstrap_kappa(a, b, *, labels: Sequence | None = None, n_boot: int = 2000, alpha: float = 0.05,
                    rng=None) -> dict:
    """Cohen's kappa with an item-bootstrap percentile CI.

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
    estimate = float(kappa_from_confusion(table))
    rng = np.random.default_rng(rng)
    boot = kappa_from_confusion(_draw_tables(table, n_boot, rng)) if n_boot else np.empty(0)
    summary = summarise(boot, alpha) if n_boot >= 1 else {"se": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                                                          "n_boot": 0, "n_failed": 0}
    expected = (float((table.sum(axis=1) * table.sum(axis=0)).sum()) / n**2) if n else float("nan")
    return {"estimate": estimate, "ci_low": summary["ci_low"], "ci_high": summary["ci_high"], "se": summary["se"],
            "n": n, "n_boot": summary["n_boot"], "n_failed": summary["n_failed"],
            "observed_agreement": float(np.trace(table)) / n if n else float("nan"),
            "expected_agreement": expected, "reason": kappa_reason(table, labels)}


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


def krippendorff_alpha(data, *, n_boot: int = 0, alpha: float = 0.05, rng=None) -> dict:
    """Krippendorff's alpha for nominal data: any number of coders, missing values (None/NaN) allowed.

    `data` is a coders x items matrix (the `krippendorff` package's `reliability_data`). Items with
    fewer than two values are not pairable and are ignored. Returns `estimate, ci_low, ci_high, se,
    n_boot, n_failed, n_coders, n_items` (pairable items), `n_values` (pairable values) and `reason`
    (None when defined; alpha is undefined when the pairable values all share one class or there are
    none). With `n_boot > 0`, an item-bootstrap percentile CI.

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
    contrib = (counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(k, dtype=np.int64)[None])
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
    result = {"estimate": estimate, "ci_low": np.nan, "ci_high": np.nan, "se": np.nan, "n_boot": 0, "n_failed": 0,
              "n_coders": int(np.asarray(data, dtype=object).shape[0]), "n_items": int(pairable.sum()),
              "n_values": n_values, "reason": reason}
    if n_boot > 0 and counts.size:
        rng = np.random.default_rng(rng)
        flat = contrib.reshape(len(counts), k * k)
        boot = np.empty(n_boot)
        step = max(1, _BLOCK_CELLS // len(counts))
        for start in range(0, n_boot, step):
            rows = min(n_boot, start + step) - start
            w = resample_counts(np.zeros(len(counts)), rows, rng, stratified=False)
            boot[start:start + rows] = _alpha_from_coincidence((w @ flat).reshape(rows, k, k))
        result.update({key: summarise(boot, alpha)[key] for key in ("ci_low", "ci_high", "se", "n_boot", "n_failed")})
    return result


# ------------------------------------------------------------------------ weak labeler vs reference
BINARY_METRICS = ("observed_agreement", "kappa", "precision", "recall", "f1", "f1_negative", "macro_f1",
                  "specificity", "weak_positive_rate", "reference_positive_rate")


def binary_metrics(tp, fp, fn, tn) -> dict[str, np.ndarray]:
    """The weak-vs-reference metrics from confusion tallies (positive = 1); arrays broadcast.

    Tallies are counts or weighted sums. Each metric is NaN where its denominator is zero:
    precision without weak positives, recall without reference positives, kappa with chance
    agreement 1, F1 of a class absent from both labelings, macro-F1 when either F1 is.

    >>> m = binary_metrics(36, 2, 29, 209)  # the Bluesky paper's SI table
    >>> {k: round(float(m[k]), 3) for k in ("kappa", "precision", "recall", "weak_positive_rate")}
    {'kappa': 0.636, 'precision': 0.947, 'recall': 0.554, 'weak_positive_rate': 0.138}
    """
    tp, fp, fn, tn = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (tp, fp, fn, tn)))
    if any(v.size and v.min() < 0 for v in (tp, fp, fn, tn)):
        raise ValueError("confusion tallies must be non-negative")

    def ratio(num, den):
        out = np.full(den.shape, np.nan)
        np.divide(num, den, out=out, where=den > 0)
        return out

    n = tp + fp + fn + tn
    ref_pos, weak_pos = tp + fn, tp + fp
    chance = ref_pos * weak_pos + (n - ref_pos) * (n - weak_pos)
    f1 = ratio(2 * tp, 2 * tp + fp + fn)
    f1_neg = ratio(2 * tn, 2 * tn + fp + fn)
    out = {"observed_agreement": ratio(tp + tn, n), "kappa": ratio(n * (tp + tn) - chance, n * n - chance),
           "precision": ratio(tp, weak_pos), "recall": ratio(tp, ref_pos), "f1": f1, "f1_negative": f1_neg,
           "macro_f1": (f1 + f1_neg) / 2, "specificity": ratio(tn, fp + tn),
           "weak_positive_rate": ratio(weak_pos, n), "reference_positive_rate": ratio(ref_pos, n)}
    return {key: value[()] for key, value in out.items()}


def binary_reasons(tp, fp, fn, tn) -> dict[str, str | None]:
    """Why each metric of `binary_metrics` is undefined for these tallies (None where defined)."""
    n = tp + fp + fn + tn
    none = "undefined: no items" if n <= 0 else None
    reasons = dict.fromkeys(BINARY_METRICS, none)
    if none:
        return reasons
    if tp + fp == 0:
        reasons["precision"] = "undefined: the weak labeler gave no positive label"
    if tp + fn == 0:
        reasons["recall"] = "undefined: the reference has no positive item"
    if fp + tn == 0:
        reasons["specificity"] = "undefined: the reference has no negative item"
    if 2 * tp + fp + fn == 0:
        reasons["f1"] = "undefined: no positive in either labeling"
    if 2 * tn + fp + fn == 0:
        reasons["f1_negative"] = "undefined: no negative in either labeling"
    if reasons["f1"] or reasons["f1_negative"]:
        reasons["macro_f1"] = "undefined: " + (reasons["f1"] or reasons["f1_negative"]).removeprefix("undefined: ")
    ref_pos, weak_pos = tp + fn, tp + fp
    if n * n - (ref_pos * weak_pos + (n - ref_pos) * (n - weak_pos)) <= 0:
        cls = "positive" if ref_pos else "negative"
        reasons["kappa"] = f"undefined: chance agreement is 1 (every item is {cls} in both labelings)"
    return reasons


def weak_vs_reference(reference, weak, *, n_boot: int = 2000, alpha: float = 0.05, rng=None,
                      weights=None, strata=None) -> tuple[pd.DataFrame, np.ndarray]:
    """A binary weak labeler against reference labels (both 0/1, positive = 1): metrics with CIs.

    Returns (metrics, confusion): `metrics` has one row per metric in `BINARY_METRICS` with
    `metric, estimate, ci_low, ci_high, se, n, n_boot, n_failed, reason`; `confusion` is the 2 x 2
    table of item counts, rows reference 0/1, columns weak 0/1.

    Without weights the CI is the item bootstrap (multinomial confusion tables). With `weights`
    (design weights, e.g. stratum pool size / stratum sample size) the estimates come from the
    weighted table, and the bootstrap resamples items within `strata` (default: one stratum), the
    design's own sampling, so the stratum sizes stay fixed.

    >>> metrics, table = weak_vs_reference([1, 1, 0, 0, 0, 1], [1, 0, 0, 1, 0, 1], n_boot=200, rng=0)
    >>> table.tolist()
    [[2, 1], [1, 2]]
    >>> metrics.set_index("metric").loc[["precision", "recall", "kappa"], "estimate"].round(4).tolist()
    [0.6667, 0.6667, 0.3333]
    """
    ref = np.asarray(reference)
    wk = np.asarray(weak)
    if ref.shape != wk.shape or ref.ndim != 1:
        raise ValueError(f"reference and weak must be 1-D and of one length, got {ref.shape} and {wk.shape}")
    for name, arr in (("reference", ref), ("weak", wk)):
        if arr.size and not np.isin(arr, (0, 1)).all():
            raise ValueError(f"{name} labels must be 0 or 1")
    ref, wk = ref.astype(int), wk.astype(int)
    cell = ref * 2 + wk  # 0 tn, 1 fp, 2 fn, 3 tp
    table = np.bincount(cell, minlength=4).reshape(2, 2)
    rng = np.random.default_rng(rng)
    if weights is None:
        tallies = table.ravel().astype(float)
        boot = _draw_tables(table, n_boot, rng).reshape(n_boot, 4).astype(float) if n_boot else np.empty((0, 4))
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != ref.shape or (w.size and (not np.isfinite(w).all() or w.min() <= 0)):
            raise ValueError("weights must be positive and finite, one per item")
        onehot = np.zeros((ref.size, 4))
        onehot[np.arange(ref.size), cell] = w
        tallies = onehot.sum(axis=0)
        groups = np.zeros(ref.size, dtype=int) if strata is None else pd.factorize(np.asarray(strata))[0]
        boot = np.empty((n_boot, 4))
        step = max(1, _BLOCK_CELLS // max(ref.size, 1))
        for start in range(0, n_boot, step):
            rows = min(n_boot, start + step) - start
            boot[start:start + rows] = resample_counts(groups, rows, rng, stratified=True) @ onehot
    point = binary_metrics(tallies[3], tallies[1], tallies[2], tallies[0])
    draws = binary_metrics(boot[:, 3], boot[:, 1], boot[:, 2], boot[:, 0])
    reasons = binary_reasons(*(int(v) for v in (table[1, 1], table[0, 1], table[1, 0], table[0, 0])))
    rows = []
    for metric in BINARY_METRICS:
        s = summarise(draws[metric], alpha) if n_boot else {"se": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                                                             "n_boot": 0, "n_failed": 0}
        rows.append({"metric": metric, "estimate": float(point[metric]), "ci_low": s["ci_low"],
                     "ci_high": s["ci_high"], "se": s["se"], "n": int(ref.size), "n_boot": s["n_boot"],
                     "n_failed": s["n_failed"], "reason": reasons[metric]})
    return pd.DataFrame(rows), table
