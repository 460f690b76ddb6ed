"""Axis 1, discrimination: accuracy, F1, macro one-vs-rest AUC and its change against the reference,
per-class AUC with DeLong CIs, and the majority-class baseline.

F1 averages run over the classes that occur in the labels or the predictions (scikit-learn's default);
a class in neither has no F1 (n/a), rather than a made-up 0.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import accuracy_score, f1_score

from mhaudit.audits.cpfe.groups import Group
from mhaudit.stats.auc import macro_auc, per_class_auc


def discrimination_rows(group: Group, reference: Group, classes: list[str]) -> dict:
    k = len(classes)
    majority = np.full_like(group.y, np.bincount(group.y, minlength=k).argmax())
    auc = macro_auc(group.y, group.probs, k)
    ref_auc = macro_auc(reference.y, reference.probs, k)
    present = np.unique(group.y)
    if len(present) < 2:
        reason = "one class present: macro-AUC undefined"
    elif len(present) < k:
        reason = f"macro-AUC over the {len(present)} classes present of {k}"
    else:
        reason = ""
    return {
        **group.key(), "n": group.n, "is_reference": group is reference,
        "accuracy": accuracy_score(group.y, group.pred),
        "macro_f1": f1_score(group.y, group.pred, average="macro", zero_division=0),
        "weighted_f1": f1_score(group.y, group.pred, average="weighted", zero_division=0),
        "macro_auc": auc,
        "delta_auc_pct": 100 * (auc - ref_auc) / ref_auc,
        "majority_macro_f1": f1_score(group.y, majority, average="macro", zero_division=0),
        "classes_present": len(present),
        "reason": reason,
    }


def per_class_rows(group: Group, classes: list[str]) -> list[dict]:
    f1 = f1_score(group.y, group.pred, average=None, labels=range(len(classes)), zero_division=0)
    seen = set(group.y.tolist()) | set(group.pred.tolist())
    rows = []
    for stats in per_class_auc(group.y, group.probs, len(classes)):
        c = stats.pop("class_index")
        rows.append({**group.key(), "n": group.n, "class": classes[c], **stats,
                     "f1": float(f1[c]) if c in seen else float("nan")})
    return rows
