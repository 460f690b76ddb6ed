"""The predictions table: one row per example x model x seed, one raw score column per class.

Our models write it with `predict_corpus`; a user's own model's outputs enter through
`mhaudit.tables.prediction_files.read_predictions` (files as researchers publish them, DataFrames,
arrays), which validates every column and turns probabilities into log-probabilities, saying so.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.tables.corpus.schema import Corpus

KEY_COLUMNS = ("id", "model", "seed", "platform", "dataset", "split", "label")
TEXT_HASH = "text_hash"  # optional: a hash of each row's text (never the text), to check rows line up
PROB_SUM_TOLERANCE = 1e-3  # probabilities written as text lose digits; a row must sum to 1 within this
LOGIT, PROB = "logit_", "prob_"


def logit_column(cls: str) -> str:
    return f"{LOGIT}{cls}"


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


@dataclass
class PredictionSet:
    """Validated predictions: KEY_COLUMNS + one `logit_<class>` column per class, in class order."""

    frame: pd.DataFrame
    classes: list[str]
    score_kind: str = "logits"  # or "log-probabilities (from prob_ columns)"
    fingerprints: dict[str, str] = field(default_factory=dict)  # file -> sha256
    notes: list[str] = field(default_factory=list)  # how the inputs were read, for the report
    # (model, seed, platform, dataset) groups whose files had no ids: rows are matched by position
    positional: frozenset = frozenset()


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
