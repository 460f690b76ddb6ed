"""Precision, recall and F1 of each class, and macro-F1: the one definition all of mhaudit uses.

For class c, from its true positives tp_c, its true items t_c and its predicted items p_c:

    precision_c = tp_c / p_c,    recall_c = tp_c / t_c,    F1_c = 2 tp_c / (t_c + p_c)

F1_c equals 2PR / (P + R) where both are defined, and is defined whenever the class occurs or is predicted
(0 when it occurs and is never found). The tallies may be counts, expected counts (CBPE), resampled or
weighted sums (bootstrap count matrices, design weights) or estimated pool shares (PPI): arrays with the
classes on the last axis and anything before it (resamples, thresholds, samples), so a batch is one call.

Macro-F1 is the mean over *all* the classes (scikit-learn's `labels=range(k)`), never over those present
only, and is undefined when any class's F1 is. An undefined value is NaN with an UndefinedStatisticWarning
(docs/statistics.md); `zero_division=0` or `1` substitutes that value instead, without a warning, for a
caller that asks for it (scikit-learn's default, which the TSS paper used). The `*_unchecked` functions are the
kernels: they trust their inputs and never warn, for hot paths whose caller validated the inputs and records the
reason itself.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from mhaudit.stats.delong import check_codes_only
from mhaudit.stats.undefined import check_zero_division, divide, warn_undefined

__all__ = [
    "Tallies",
    "tallies",
    "confusion_tallies",
    "binary_tallies",
    "class_scores",
    "macro_f1",
    "weighted_f1",
    "tallies_unchecked",
    "class_scores_unchecked",
    "macro_f1_unchecked",
    "weighted_f1_unchecked",
]


class Tallies(NamedTuple):
    """Per class (last axis): true positives, true items (support) and predicted items."""

    tp: np.ndarray
    true: np.ndarray
    predicted: np.ndarray


def tallies_unchecked(y: np.ndarray, pred: np.ndarray, k: int) -> Tallies:
    """`tallies` of class codes 0..k-1 validated at the door, by three bincounts: no checks."""
    return Tallies(np.bincount(y[y == pred], minlength=k), np.bincount(y, minlength=k), np.bincount(pred, minlength=k))


def tallies(y, pred, n_classes: int) -> Tallies:
    """The tallies of true class codes `y` against predicted codes `pred` (both in 0..n_classes-1).

    >>> tallies([0, 1, 1, 2], [0, 1, 0, 0], 3)
    Tallies(tp=array([1, 1, 0]), true=array([1, 2, 1]), predicted=array([3, 1, 0]))
    """
    y = check_codes_only(y, n_classes, "y")
    pred = check_codes_only(pred, n_classes, "pred")
    if pred.size != y.size:
        raise ValueError(f"pred must have one prediction per label ({y.size}), got {pred.size}")
    return tallies_unchecked(y, pred, n_classes)


def confusion_tallies(cm) -> Tallies:
    """The tallies of confusion matrices [..., true, predicted] (counts or expected counts)."""
    cm = np.asarray(cm, dtype=float)
    return Tallies(np.diagonal(cm, axis1=-2, axis2=-1), cm.sum(axis=-1), cm.sum(axis=-2))


def binary_tallies(tp, fp, fn, tn) -> Tallies:
    """Two-class tallies (class 0 = negative, class 1 = positive, on the last axis) from a 2 x 2 table; arrays
    broadcast. Class 0's true positives are the true negatives."""
    tp, fp, fn, tn = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (tp, fp, fn, tn)))
    return Tallies(
        np.stack([tn, tp], axis=-1), np.stack([tn + fp, tp + fn], axis=-1), np.stack([tn + fn, tp + fp], axis=-1)
    )


def class_scores_unchecked(t: Tallies, zero_division: float = math.nan) -> dict[str, np.ndarray]:
    """Precision, recall and F1 per class (kernel: no checks, no warning)."""
    return {
        "precision": divide(t.tp, t.predicted, zero_division),
        "recall": divide(t.tp, t.true, zero_division),
        "f1": divide(2 * np.asarray(t.tp, dtype=float), np.add(t.true, t.predicted, dtype=float), zero_division),
    }


def macro_f1_unchecked(t: Tallies, zero_division: float = math.nan) -> np.ndarray:
    """Macro-F1 over the last axis (kernel: no checks, no warning); NaN where a class has no F1."""
    f1 = divide(2 * np.asarray(t.tp, dtype=float), np.add(t.true, t.predicted, dtype=float), zero_division)
    return f1.mean(axis=-1)


def _checked(t: Tallies) -> Tallies:
    t = Tallies(*np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in t)))
    if t.tp.ndim == 0:
        raise ValueError("tallies need a class axis (the last one)")
    if any((v < 0).any() for v in t):
        raise ValueError("tallies must be non-negative")
    return t


def weighted_f1_unchecked(t: Tallies) -> np.ndarray:
    """Support-weighted F1 (kernel: no checks, no warning)."""
    f1 = np.nan_to_num(class_scores_unchecked(t)["f1"])  # undefined only where the weight is 0
    return divide((f1 * np.asarray(t.true, dtype=float)).sum(axis=-1), np.sum(t.true, axis=-1, dtype=float))


def class_scores(t: Tallies, zero_division: float = math.nan) -> dict[str, np.ndarray]:
    """Precision, recall, F1 and support of each class (last axis) from `Tallies`; scikit-learn's
    `precision_recall_fscore_support(..., labels=range(k), zero_division=np.nan)` on labels.

    Precision of a class never predicted, recall of a class that never occurs and F1 of a class that does
    neither are NaN (one UndefinedStatisticWarning), or `zero_division` (0 or 1, no warning).

    >>> s = class_scores(tallies([0, 0, 1, 1], [0, 1, 1, 1], 2))
    >>> [s[k].round(3).tolist() for k in ("precision", "recall", "f1", "support")]
    [[1.0, 0.667], [0.5, 1.0], [0.667, 0.8], [2.0, 2.0]]
    """
    zero_division = check_zero_division(zero_division)
    t = _checked(t)
    out = class_scores_unchecked(t, zero_division) | {"support": t.true}
    undefined = [name for name in ("precision", "recall", "f1") if np.isnan(out[name]).any()]
    if undefined and math.isnan(zero_division):
        warn_undefined(
            f"{', '.join(undefined)} undefined for a class that is never predicted, never occurs, or "
            "neither (a zero denominator); NaN returned"
        )
    return out


def macro_f1(t: Tallies, zero_division: float = math.nan) -> np.ndarray:
    """Macro-F1 (the mean F1 over all the classes, last axis) of `Tallies`; a float for one table, an array
    for a batch. NaN where a class neither occurs nor is predicted (one UndefinedStatisticWarning), unless
    `zero_division` gives that class's F1 (0 or 1).

    >>> round(float(macro_f1(tallies([0, 0, 1, 1], [0, 1, 1, 1], 2))), 4)
    0.7333
    """
    zero_division = check_zero_division(zero_division)
    out = macro_f1_unchecked(_checked(t), zero_division)
    undefined = int(np.count_nonzero(np.isnan(out)))
    if undefined:
        warn_undefined(
            f"macro-F1 undefined in {undefined} of {np.size(out)} table(s): a class with no true and "
            "no predicted item has no F1; NaN returned"
        )
    return out[()]


def weighted_f1(t: Tallies) -> np.ndarray:
    """Support-weighted mean F1 over the last axis (scikit-learn's average="weighted"). A class without
    support weighs 0, so its F1 (undefined when it is not predicted either) never enters; NaN, with a
    warning, only where no class has support (no items).

    >>> round(float(weighted_f1(tallies([0, 0, 1, 1, 1], [0, 1, 1, 1, 1], 3))), 4)  # class 2 weighs 0
    0.781
    """
    out = weighted_f1_unchecked(_checked(t))
    if np.isnan(out).any():
        warn_undefined("weighted F1 undefined: no item has a true class; NaN returned")
    return out[()]
