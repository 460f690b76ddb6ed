"""Axis 1, discrimination: accuracy, F1, macro one-vs-rest AUC and its change against the reference,
per-class AUC with DeLong CIs, and the majority-class baseline.

Macro averages run over all the audit's classes (docs/statistics.md): a class that neither occurs nor is
predicted on a platform has no F1, and one that does not occur has no AUC, so the platform's macro-F1
or macro-AUC is NaN with the reason, and the per-class table shows every class that has a value. With
every class present this is scikit-learn's macro average.
"""

from __future__ import annotations

import numpy as np

from mhaudit.audits.cpfe.groups import Group
from mhaudit.stats.auc import macro_auc, per_class_auc


def _f1_parts(y: np.ndarray, pred: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """F1 of each class (NaN where the class neither occurs nor is predicted), its support, and whether
    it is defined. The same floats as sklearn's `f1_score(..., labels=range(k))` (2 tp / (true + pred)),
    from three bincounts instead of importing scikit-learn (~0.3 s) and its input checks."""
    tp = np.bincount(y[y == pred], minlength=k)
    true, predicted = np.bincount(y, minlength=k), np.bincount(pred, minlength=k)
    denom = true.astype(float) + predicted.astype(float)
    empty = denom == 0
    f1 = 2.0 * tp.astype(float) / np.where(empty, 1.0, denom)
    f1[empty] = np.nan
    return f1, true, ~empty


def class_f1(y: np.ndarray, pred: np.ndarray, k: int) -> np.ndarray:
    """F1 of each of the k classes; NaN for a class neither in y nor predicted (no F1 to speak of)."""
    return _f1_parts(y, pred, k)[0]


def weighted_f1(y: np.ndarray, pred: np.ndarray, k: int) -> float:
    """Support-weighted F1; a class without support has weight 0, so its F1 (counted 0) never enters."""
    f1, true, defined = _f1_parts(y, pred, k)
    return float(np.average(np.where(defined, f1, 0.0), weights=true))  # sklearn's zero_division=0


def _mean_or_nan(values: np.ndarray) -> float:
    return float("nan") if np.isnan(values).any() else float(values.mean())


def discrimination_rows(group: Group, reference: Group, classes: list[str]) -> dict:
    k = len(classes)
    majority = np.full_like(group.y, np.bincount(group.y, minlength=k).argmax())
    auc = macro_auc(group.y, group.probs, k)
    ref_auc = macro_auc(reference.y, reference.probs, k)
    f1 = class_f1(group.y, group.pred, k)
    present = np.unique(group.y)
    reasons = []
    if len(present) < k:
        absent = [classes[c] for c in range(k) if c not in present]
        reasons.append(f"macro-AUC undefined: no {', '.join(absent)} on this platform")
    if np.isnan(f1).any():
        neither = [classes[c] for c in np.flatnonzero(np.isnan(f1))]
        reasons.append(f"macro-F1 undefined: {', '.join(neither)} neither occurs nor is predicted")
    if np.isnan(ref_auc) and not np.isnan(auc):
        reasons.append("AUC change undefined: the reference platform has no macro-AUC")
    return {
        **group.key(), "n": group.n, "is_reference": group is reference,
        "accuracy": float(np.average(group.y == group.pred)),  # sklearn's accuracy_score
        "macro_f1": _mean_or_nan(f1),
        "weighted_f1": weighted_f1(group.y, group.pred, k),
        "macro_auc": auc,
        "delta_auc_pct": 100 * (auc - ref_auc) / ref_auc,
        "majority_macro_f1": _mean_or_nan(class_f1(group.y, majority, k)),
        "classes_present": len(present),
        "reason": "; ".join(reasons),
    }


def per_class_rows(group: Group, classes: list[str]) -> list[dict]:
    f1 = class_f1(group.y, group.pred, len(classes))
    rows = []
    for stats in per_class_auc(group.y, group.probs, len(classes)):
        c = stats.pop("class_index")
        rows.append({**group.key(), "n": group.n, "class": classes[c], **stats,
                     "f1": float(f1[c])})
    return rows
