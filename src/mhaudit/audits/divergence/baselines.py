"""Any model's predictions as a baseline beside the channels (e.g. a fine-tuned transformer)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.stats.calibration import softmax
from mhaudit.tables.predictions import LOGIT, PredictionSet

__all__ = ["baselines_from_predictions", "join_baseline"]


def baselines_from_predictions(predictions: PredictionSet, positive: str) -> dict[str, pd.DataFrame]:
    """One baseline per model (its first seed): id, score = P(positive) from the softmax, pred = argmax is positive."""
    if positive not in predictions.classes:
        raise InputError(
            f"baseline predictions have classes {', '.join(predictions.classes)}, not the positive "
            f"class '{positive}'; predict with a model trained on the same binary labels"
        )
    out = {}
    col = predictions.classes.index(positive)
    for model, rows in predictions.frame.groupby("model", sort=False):
        rows = rows[rows["seed"] == rows["seed"].iloc[0]]
        logits = rows[[f"{LOGIT}{c}" for c in predictions.classes]].to_numpy(dtype=float)
        prob = softmax(logits)
        out[str(model)] = pd.DataFrame(
            {
                "id": rows["id"].astype(str).to_numpy(),
                "score": prob[:, col],
                "pred": (prob.argmax(axis=1) == col).astype(np.int8),
            }
        )
    return out


def join_baseline(name: str, table: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """The baseline's score and pred for `rows` (by id), or InputError naming what is missing."""
    table = table.astype({"id": str})
    dup = table["id"].duplicated()
    if dup.any():
        raise InputError(
            f"baseline '{name}' has {int(dup.sum())} repeated id(s) (first: {table['id'][dup].iat[0]}); "
            "one prediction per row and model is expected"
        )
    joined = rows[["id"]].astype({"id": str}).merge(table, on="id", how="left")
    missing = int(joined["score"].isna().sum())
    if missing:
        raise InputError(
            f"baseline '{name}' has no prediction for {missing} of {len(rows)} scored rows "
            f"(first missing id: {joined.loc[joined['score'].isna(), 'id'].iat[0]})"
        )
    return joined
