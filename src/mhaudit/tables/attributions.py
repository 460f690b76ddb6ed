"""The attributions table: top words per model, seed, platform and class (axis 5 of the cross-platform audit).

Columns `model`, `seed`, `platform`, `class`, `word`, `score`, and `dataset` where known (a row without one is
read as its platform's: `attribution.stability.with_datasets`); written by `mhaudit explain`, `mhaudit run` and
the demo, read here from any table file a user brings (Parquet, CSV, TSV, JSON Lines).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.io import read_table

COLUMNS = ["model", "seed", "platform", "class", "word", "score"]


def read_attributions(path: str | Path) -> pd.DataFrame:
    """The attributions table from a file; score and seed must be numbers in every row."""
    frame = read_table(path, what="the attributions", required=COLUMNS)
    frame["score"] = pd.to_numeric(frame["score"], errors="coerce")
    frame["seed"] = pd.to_numeric(frame["seed"], errors="coerce")
    if frame[["score", "seed"]].isna().any().any():
        raise InputError("score and seed must be numbers in every row", path=path)
    return frame
