"""The predictions table: one row per example x model x seed, one raw score column per class."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.corpus.schema import Corpus

KEY_COLUMNS = ("id", "model", "seed", "platform", "dataset", "split", "label")


def logit_column(cls: str) -> str:
    return f"logit_{cls}"


def predict_corpus(model, corpus: Corpus, *, model_name: str, seed: int,
                   splits: tuple[str, ...] = ("test", "calibration")) -> pd.DataFrame:
    """Score the rows of `corpus` in `splits` with a fitted model; classes in the corpus's mapping order."""
    rows = corpus.frame[corpus.frame["split"].isin(splits)]
    logits = model.predict_logits(rows["text"].astype(str).tolist())
    out = rows[["id", "platform", "dataset", "split", "label"]].reset_index(drop=True)
    out.insert(1, "model", model_name)
    out.insert(2, "seed", np.int64(seed))
    scores = pd.DataFrame(logits, columns=[logit_column(c) for c in corpus.classes])
    return pd.concat([out[list(KEY_COLUMNS)], scores], axis=1)


def scores(predictions: pd.DataFrame, classes: list[str]) -> np.ndarray:
    return predictions[[logit_column(c) for c in classes]].to_numpy(dtype=float)
