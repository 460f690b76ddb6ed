"""Scores of the fold jobs. Positive class = the last class unless given: precision, recall, F1,
accuracy, AUC (of the positive-minus-negative logit) and macro-F1 (mean of both classes' F1); predictions
are the argmax of the logits. A metric that is undefined on a fold (precision with no positive
prediction, recall or AUC with no positive) is NaN with the reason in `undefined`, never 0 or 0.5."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from mhaudit.audits.model_selection.jobs import FoldJob
from mhaudit.stats.binary import confusion_counts
from mhaudit.stats.f1 import binary_tallies, class_scores_unchecked, macro_f1_unchecked

METRICS = ("precision", "recall", "f1", "accuracy", "auc", "macro_f1")
TIMES = ("train_seconds", "infer_seconds")


def binary_metrics(y: np.ndarray, score: np.ndarray, pred: np.ndarray) -> dict:
    """Positive-class precision, recall, F1; accuracy; AUC of `score`; macro-F1; the confusion counts.

    Undefined values are NaN and named in `undefined`: precision with no positive prediction, recall with no
    positive, AUC with one class present, the F1 of a class neither present nor predicted, and then macro-F1.
    Precision, recall and F1 are mhaudit.stats.f1's (F1 = 2TP / (2TP + FP + FN), 0 when there are positives
    but none is found), as sklearn computes them.
    """
    y, pred = np.asarray(y).astype(bool), np.asarray(pred).astype(bool)
    tp, fp, fn, tn = (int(v) for v in confusion_counts(y, pred))
    n = len(y)
    tallies = binary_tallies(tp, fp, fn, tn)
    scores = class_scores_unchecked(tallies)  # mhaudit.stats.f1; no warning: the reasons are recorded here
    precision, recall, f1 = (float(scores[m][1]) for m in ("precision", "recall", "f1"))
    auc = float(roc_auc_score(y, score)) if y.any() and not y.all() else float("nan")
    undefined = [
        what
        for what, value in (
            ("precision (no positive prediction)", precision),
            ("recall (no positive)", recall),
            ("F1 (no positive, none predicted)", f1),
            ("F1 of the negative class (no negative, none predicted)", scores["f1"][0]),
            ("AUC (one class)", auc),
        )
        if np.isnan(value)
    ]
    macro_f1 = float(macro_f1_unchecked(tallies))  # NaN when either class has no F1 (docs/statistics.md)
    return {
        "n": n,
        "positives": int(y.sum()),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "accuracy": (tp + tn) / n if n else float("nan"),
        "auc": auc,
        "macro_f1": macro_f1,
        "predicted_positive_rate": (tp + fp) / n if n else float("nan"),
        "undefined": "; ".join(undefined),
    }


def score_jobs(
    jobs: Sequence[FoldJob],
    results: Sequence[dict],
    *,
    rows: pd.DataFrame,
    sources: Mapping[str, pd.Series],
    train_source: str,
    classes: list[str],
    positive: str,
    negative: str,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Every job's test rows scored against every label source, each on the rows it labels: the per-fold
    scores, the out-of-fold predictions and what each fit reported."""
    pos_col, neg_col = classes.index(positive), classes.index(negative)
    fold_rows, predictions, notes = [], [], []
    for job, result in zip(jobs, results):
        fold, spec = job.fold, job.spec
        logits = np.asarray(result["logits"], dtype=float).reshape(len(fold.test), len(classes))
        score = logits[:, pos_col] - logits[:, neg_col]
        pred = logits.argmax(axis=1) == pos_col
        ids = rows["id"].iloc[fold.test].to_numpy()
        truths = {f"label_{s}": pd.Series(ids).map(v).to_numpy() for s, v in sources.items()}
        predictions.append(
            pd.DataFrame(
                {
                    "id": ids,
                    "model": spec.label,
                    "protocol": fold.protocol.label,
                    "fold": fold.number,
                    "score": score,
                    "predicted": np.where(pred, positive, negative),
                    **truths,
                }
            )
        )
        fold_rows += _fold_rows(job, result, ids, score, pred, sources, train_source, positive)
        notes.append(
            {
                "model": spec.label,
                "protocol": fold.protocol.label,
                "fold": fold.number,
                "epochs": result.get("epochs"),
                "best_epoch": result.get("best_epoch"),
                "cached": bool(result.get("cached")),
                "notes": " | ".join(result.get("notes") or []),
            }
        )
    return pd.DataFrame(fold_rows), pd.concat(predictions, ignore_index=True), pd.DataFrame(notes)


def _fold_rows(
    job: FoldJob,
    result: dict,
    ids: np.ndarray,
    score: np.ndarray,
    pred: np.ndarray,
    sources: Mapping[str, pd.Series],
    train_source: str,
    positive: str,
) -> list[dict]:
    """One job's scores against each source that labels any of its test rows."""
    out = []
    for source, labels in sources.items():
        truth = pd.Series(ids).map(labels)
        have = truth.notna().to_numpy()
        if not have.any():
            continue
        metrics = binary_metrics(truth[have].to_numpy() == positive, score[have], pred[have])
        out.append(
            {
                "model": job.spec.label,
                "protocol": job.fold.protocol.label,
                "fold": job.fold.number,
                "scored_against": source,
                "role": "training labels" if source == train_source else "reference",
                "n_train": job.n_train,
                "n_val": job.n_val,
                **metrics,
                "train_seconds": result["train_seconds"],
                "infer_seconds": result["infer_seconds"],
            }
        )
    return out


__all__ = ["METRICS", "TIMES", "binary_metrics", "score_jobs"]
