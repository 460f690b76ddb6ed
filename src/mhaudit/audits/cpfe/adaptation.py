"""Temperature scaling vs target fine-tuning on the same calibration split (CPFE paper, section 4.6).

For each target platform: the model as trained, the model with a temperature fitted on the target's
stored calibration split, and the model fine-tuned further on that split (`adapt`), all evaluated on
the target's other rows.
"""

from __future__ import annotations

import warnings

import pandas as pd

from mhaudit.stats.auc import macro_auc
from mhaudit.stats.calibration import ece, fit_temperature, softmax
from mhaudit.tables.corpus.schema import label_codes


def adaptation_rows(
    model,
    model_label: str,
    seed: int,
    corpus_frame: pd.DataFrame,
    classes: list[str],
    platform: str,
    epochs: int = 3,
    n_bins: int = 10,
) -> dict:
    rows = corpus_frame[corpus_frame["platform"] == platform]  # a target: every row is judged
    cal, rest = rows[rows["split"] == "calibration"], rows[rows["split"] != "calibration"]
    base = {
        "model": model_label,
        "seed": seed,
        "platform": platform,
        "n_calibration": len(cal),
        "n_evaluated": len(rest),
        "adapt_epochs": epochs,
    }
    if cal.empty or rest.empty or cal["label"].nunique() < 2:
        return {**base, "reason": "no stored calibration split with two classes on this platform"}
    k = len(classes)
    y_cal, y = label_codes(cal["label"], classes), label_codes(rest["label"], classes)
    logits = model.predict_logits(rest["text"].tolist())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = fit_temperature(model.predict_logits(cal["text"].tolist()), y_cal)
    tuned = model.adapt(cal, epochs=epochs)
    probs = {
        "before": softmax(logits),
        "ts": softmax(logits, t),
        "ft": softmax(tuned.predict_logits(rest["text"].tolist())),
    }
    out: dict = {**base, "temperature": t, "reason": "", "note": "; ".join(str(w.message) for w in caught)}
    for stage, p in probs.items():
        out[f"auc_{stage}"] = macro_auc(y, p, k)
        out[f"ece_{stage}"] = ece(p, y, n_bins)
        out[f"accuracy_{stage}"] = float((p.argmax(1) == y).mean())
    out["delta_auc_ts"] = out["auc_ts"] - out["auc_before"]
    out["delta_auc_ft"] = out["auc_ft"] - out["auc_before"]
    return out


def has_adapt(model) -> bool:
    return callable(getattr(model, "adapt", None))
