"""Axis 1, discrimination: accuracy, F1, macro one-vs-rest AUC and its change against the reference,
per-class AUC with DeLong CIs, and the majority-class baseline.

Macro averages run over all the audit's classes (docs/statistics.md): a class that neither occurs nor is
predicted on a platform has no F1, and one that does not occur has no AUC, so the platform's macro-F1
or macro-AUC is NaN with the reason, and the per-class table shows every class that has a value. With
every class present this is scikit-learn's macro average.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import accuracy_score, f1_score

from mhaudit.audits.cpfe.groups import Group
from mhaudit.stats.auc import macro_auc, per_class_auc


def class_f1(y: np.ndarray, pred: np.ndarray, k: int) -> np.ndarray:
    """F1 of each of the k classes; NaN for a class neither in y nor predicted (no F1 to speak of)."""
    return f1_score(y, pred, average=None, labels=range(k), zero_division=np.nan)


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
        "accuracy": accuracy_score(group.y, group.pred),
        "macro_f1": _mean_or_nan(f1),
        # a class without support has weight 0, so the substituted 0 never enters the weighted mean
        "weighted_f1": f1_score(group.y, group.pred, average="weighted", labels=range(k), zero_division=0),
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
