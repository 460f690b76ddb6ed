"""The report's tables: `design`, `label_sources`, `training_vs_reference` (the training labels themselves
scored against each reference on the rows both label), `summary` (mean +/- sd over folds), `protocol_effect`
(CV minus holdout per model and metric), `efficiency` (F1 against training time, with the Pareto frontier),
`tradeoff` (recall against precision), and the summary as printable strings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

from mhaudit.audits.model_selection.folds import Fold
from mhaudit.audits.model_selection.scores import METRICS, TIMES, binary_metrics


def report_tables(
    *,
    fold_scores: pd.DataFrame,
    notes: pd.DataFrame,
    folds: Sequence[Fold],
    y: np.ndarray,
    rows: pd.DataFrame,
    sources: Mapping[str, pd.Series],
    train_source: str,
    positive: str,
    dropped: int,
) -> dict[str, pd.DataFrame]:
    """Every table of the report by name, from the per-fold scores, the folds and the rows (`y`: the
    training labels as 0/1; `dropped`: rows left out for want of a training label)."""
    summary = summarise(fold_scores)
    return {
        "design": pd.DataFrame([_design_row(fold, y, rows, sources, train_source) for fold in folds]),
        "label_sources": _label_source_table(rows, sources, train_source, positive, dropped),
        "summary": summary,
        "protocol_effect": protocol_effect(summary),
        "efficiency": efficiency_table(summary, train_source),
        "tradeoff": summary[
            [
                "model",
                "protocol",
                "scored_against",
                "role",
                "precision",
                "recall",
                "f1",
                "predicted_positive_rate",
                "positive_rate",
            ]
        ].copy(),
        "training_vs_reference": _training_vs_reference(rows, sources, train_source, positive),
        "fold_scores": fold_scores,
        "model_notes": notes,
    }


def _design_row(
    fold: Fold, y: np.ndarray, rows: pd.DataFrame, sources: Mapping[str, pd.Series], train_source: str
) -> dict:
    """n_train: the fold's training rows, validation rows included (as in fold_scores); n_val: how many of
    them a model with validation rows holds out."""
    test_ids = rows["id"].iloc[fold.test]
    row = {
        "protocol": fold.protocol.label,
        "fold": fold.number,
        "n_train": len(fold.train),
        "n_val": int((fold.split == "val").sum()),
        "n_test": len(fold.test),
        "train_positive_rate": float(y[fold.train].mean()),
        "test_positive_rate": float(y[fold.test].mean()),
    }
    for source, labels in sources.items():
        if source != train_source:
            row[f"test_rows_with_{source}"] = int(test_ids.map(labels).notna().sum())
    return row


def _label_source_table(rows, sources, train_source, positive, dropped) -> pd.DataFrame:
    out = []
    for source, labels in sources.items():
        values = rows["id"].map(labels)
        have = values.notna()
        out.append(
            {
                "source": source,
                "role": "training labels" if source == train_source else "reference",
                "rows_labelled": int(have.sum()),
                "positives": int((values[have] == positive).sum()),
                "positive_rate": float((values[have] == positive).mean()) if have.any() else float("nan"),
                "rows_left_out": dropped if source == train_source else 0,
            }
        )
    return pd.DataFrame(out)


def _training_vs_reference(rows, sources, train_source, positive) -> pd.DataFrame:
    out = []
    train = rows["id"].map(sources[train_source])
    for source, labels in sources.items():
        if source == train_source:
            continue
        ref = rows["id"].map(labels)
        have = ref.notna() & train.notna()
        if not have.any():
            continue
        y_ref, y_tr = (ref[have] == positive).to_numpy(), (train[have] == positive).to_numpy()
        metrics = binary_metrics(y_ref, y_tr.astype(float), y_tr)
        kappa = float(cohen_kappa_score(y_ref, y_tr)) if len(np.unique(np.r_[y_ref, y_tr])) > 1 else float("nan")
        out.append({"training_source": train_source, "reference": source, **metrics, "kappa": kappa})
    return pd.DataFrame(out)


def summarise(fold_scores: pd.DataFrame) -> pd.DataFrame:
    """Mean and SD (ddof 1; NaN for one fold) over folds per model, protocol and label source; NaN folds are
    left out of a metric's mean and counted in `folds_undefined`."""
    if fold_scores.empty:
        return pd.DataFrame()
    keys = ["model", "protocol", "scored_against", "role"]
    out = []
    for key, group in fold_scores.groupby(keys, sort=False):
        row = {**dict(zip(keys, key)), "folds": len(group), "n_test": int(group["n"].sum())}
        for metric in (*METRICS, *TIMES):
            values = group[metric].to_numpy(dtype=float)
            ok = values[~np.isnan(values)]
            row[metric] = float(ok.mean()) if ok.size else float("nan")
            row[f"{metric}_sd"] = float(ok.std(ddof=1)) if ok.size > 1 else float("nan")
        row["predicted_positive_rate"] = float(group["predicted_positive_rate"].mean())
        row["positive_rate"] = float(group["positives"].sum() / group["n"].sum())
        row["folds_undefined"] = int((group["undefined"] != "").sum())
        out.append(row)
    return pd.DataFrame(out)


def protocol_effect(summary: pd.DataFrame) -> pd.DataFrame:
    """CV mean minus holdout, per model, label source, CV protocol and metric."""
    if summary.empty:
        return pd.DataFrame()
    holdouts = summary[summary["protocol"].str.startswith("holdout")]
    cvs = summary[~summary["protocol"].str.startswith("holdout")]
    out = []
    for _, h in holdouts.iterrows():
        for _, c in cvs[(cvs["model"] == h["model"]) & (cvs["scored_against"] == h["scored_against"])].iterrows():
            for metric in METRICS:
                out.append(
                    {
                        "model": h["model"],
                        "scored_against": h["scored_against"],
                        "holdout": h["protocol"],
                        "cv": c["protocol"],
                        "metric": metric,
                        "holdout_value": h[metric],
                        "cv_mean": c[metric],
                        "cv_sd": c[f"{metric}_sd"],
                        "difference": c[metric] - h[metric],
                    }
                )
    return pd.DataFrame(out)


def efficiency_table(summary: pd.DataFrame, train_source: str) -> pd.DataFrame:
    """Per protocol, F1 on the training labels against mean training time, with the Pareto frontier."""
    table = summary[summary["scored_against"] == train_source][
        [
            "model",
            "protocol",
            "f1",
            "f1_sd",
            "auc",
            "recall",
            "train_seconds",
            "train_seconds_sd",
            "infer_seconds",
            "n_test",
            "folds",
        ]
    ].copy()
    table["test_rows_per_second"] = table["n_test"] / table["folds"] / table["infer_seconds"]
    frontier = []
    for _, row in table.iterrows():
        same = table[(table["protocol"] == row["protocol"]) & (table["model"] != row["model"])]
        f1 = -np.inf if np.isnan(row["f1"]) else row["f1"]
        other_f1 = same["f1"].fillna(-np.inf)
        dominated = (
            (other_f1 >= f1)
            & (same["train_seconds"] <= row["train_seconds"])
            & ((other_f1 > f1) | (same["train_seconds"] < row["train_seconds"]))
        ).any()
        frontier.append(bool(not dominated and not np.isnan(row["f1"])))
    table["on_frontier"] = frontier
    return table.drop(columns=["n_test", "folds"]).reset_index(drop=True)


def summary_lines(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary as printable strings: 'mean ± sd' per metric."""

    def pm(row, metric, digits=3):
        value, sd = row[metric], row[f"{metric}_sd"]
        if np.isnan(value):
            return "n/a"
        return f"{value:.{digits}f}" + ("" if np.isnan(sd) else f" ± {sd:.{digits}f}")

    return pd.DataFrame(
        [
            {
                "model": r["model"],
                "protocol": r["protocol"],
                "scored against": r["scored_against"],
                "F1": pm(r, "f1"),
                "precision": pm(r, "precision"),
                "recall": pm(r, "recall"),
                "AUC": pm(r, "auc"),
                "macro-F1": pm(r, "macro_f1"),
                "train s": pm(r, "train_seconds", 1),
                "infer s": pm(r, "infer_seconds", 2),
            }
            for _, r in summary.iterrows()
        ]
    )


__all__ = ["efficiency_table", "protocol_effect", "report_tables", "summarise", "summary_lines"]
