"""A first discrimination overview per platform: accuracy, macro-F1, macro one-vs-rest AUC and its
change against the reference platform, beside the majority-class baseline.

The full five-axis cross-platform audit (DeLong CIs, calibration, significance, equity, attribution)
builds on this table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import softmax
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

from mhaudit.predictions import scores


def macro_auc(y: np.ndarray, probs: np.ndarray) -> float:
    """Macro one-vs-rest AUC over the classes present (at least two); NaN when undefined."""
    present = np.unique(y)
    if len(present) < 2:
        return float("nan")
    return float(np.mean([roc_auc_score(y == k, probs[:, k]) for k in present]))


def overview(predictions: pd.DataFrame, classes: list[str], reference: str) -> pd.DataFrame:
    rows = []
    for (model, seed, platform, dataset), group in predictions.groupby(
            ["model", "seed", "platform", "dataset"], sort=True):
        y = pd.Categorical(group["label"], categories=classes).codes
        probs = softmax(scores(group, classes), axis=1)
        pred = probs.argmax(axis=1)
        majority = np.full_like(y, np.bincount(y, minlength=len(classes)).argmax())
        rows.append({
            "model": model, "seed": int(seed), "platform": platform, "dataset": dataset, "n": len(group),
            "accuracy": accuracy_score(y, pred),
            "macro_f1": f1_score(y, pred, average="macro", labels=range(len(classes)), zero_division=0),
            "macro_auc": macro_auc(y, probs),
            "majority_macro_f1": f1_score(y, majority, average="macro", labels=range(len(classes)),
                                          zero_division=0),
        })
    table = pd.DataFrame(rows)
    ref = table[table["platform"] == reference].groupby(["model", "seed"])["macro_auc"].mean()
    ref_auc = table.set_index(["model", "seed"]).index.map(ref)
    table["delta_auc_pct"] = 100 * (table["macro_auc"] - ref_auc) / ref_auc
    return table
