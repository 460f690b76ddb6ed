"""Axis 1, discrimination: accuracy, F1, macro one-vs-rest AUC and its change against the reference,
per-class AUC with DeLong CIs, and the majority-class baseline.

Macro averages run over all the audit's classes (docs/statistics.md): a class that neither occurs nor is
predicted on a platform has no F1, and one that does not occur has no AUC, so the platform's macro-F1
or macro-AUC is NaN with the reason, and the per-class table shows every class that has a value. With
every class present this is scikit-learn's macro average.
"""

from __future__ import annotations

import numpy as np

from mhaudit.stats.auc import macro_auc_unchecked, per_class_auc_unchecked
from mhaudit.stats.f1 import class_scores_unchecked, macro_f1_unchecked, tallies_unchecked, weighted_f1_unchecked
from mhaudit.tables.predictions import Group


def discrimination_rows(group: Group, reference: Group, classes: list[str]) -> dict:
    """The group's discrimination row. F1 by mhaudit.stats.f1's kernels: the PredictionSet validated the codes."""
    k = len(classes)
    majority = np.full_like(group.y, np.bincount(group.y, minlength=k).argmax())
    auc = macro_auc_unchecked(group.y, group.probs, k)
    ref_auc = macro_auc_unchecked(reference.y, reference.probs, k)
    tallies = tallies_unchecked(group.y, group.pred, k)
    f1 = class_scores_unchecked(tallies)["f1"]
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
        **group.key(),
        "n": group.n,
        "is_reference": group is reference,
        "accuracy": float(np.average(group.y == group.pred)),  # sklearn's accuracy_score
        "macro_f1": float(macro_f1_unchecked(tallies)),
        "weighted_f1": float(weighted_f1_unchecked(tallies)),  # a class without support weighs 0
        "macro_auc": auc,
        "delta_macro_auc": auc - ref_auc,  # the verdicts' macro_auc_drop is its opposite
        "delta_auc_pct": 100 * (auc - ref_auc) / ref_auc,
        "majority_macro_f1": float(macro_f1_unchecked(tallies_unchecked(group.y, majority, k))),
        "classes_present": len(present),
        "reason": "; ".join(reasons),
    }


def per_class_rows(group: Group, classes: list[str]) -> list[dict]:
    # NaN: the class neither occurs nor is predicted
    f1 = class_scores_unchecked(tallies_unchecked(group.y, group.pred, len(classes)))["f1"]
    rows = []
    for stats in per_class_auc_unchecked(group.y, group.probs, len(classes)):
        c = stats.pop("class_index")
        rows.append({**group.key(), "n": group.n, "class": classes[c], **stats, "f1": float(f1[c])})
    return rows
