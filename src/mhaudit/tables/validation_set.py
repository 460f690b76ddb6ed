"""The validation set's table: the columns every sample for people has, the items' texts it carries, its reader.

The weak-label sample (audits.agreement) and the certification sample (tables.certification_sample) share
these columns, so the annotation app serves either unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.io import read_table

__all__ = ["SAMPLE_COLUMNS", "item_texts", "read_validation_set"]

SAMPLE_COLUMNS = (
    "sample_id",
    "item_id",
    "task",
    "text",
    "stratum",
    "weak_labeler",
    "pool_size",
    "sample_size",
    "weight",
    "seed",
)


def item_texts(items: pd.DataFrame, id_col: str) -> pd.Series:
    """Each item's text by id (as text; first row of a repeated id), items without a non-blank text left out."""
    texts = items.assign(_id=items[id_col].astype(str)).drop_duplicates("_id").set_index("_id")["text"]
    return texts[texts.map(lambda t: isinstance(t, str) and bool(t.strip()))]


def read_validation_set(path: str | Path) -> pd.DataFrame:
    """A validation set written by `write_validation_set` (needs item_id, stratum and weight)."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file; expected a validation set from `mhaudit labels sample`", path=path)
    frame = read_table(path, what="the validation set")
    missing = [c for c in ("item_id", "stratum", "weight") if c not in frame.columns]
    if missing:
        raise InputError(f"missing column '{missing[0]}'; a validation set has {', '.join(SAMPLE_COLUMNS)}", path=path)
    weights = pd.to_numeric(frame["weight"], errors="coerce")
    if frame["item_id"].isna().any() or frame["item_id"].duplicated().any() or not (weights > 0).all():  # NaN too
        raise InputError("item ids must be present and unique and weights positive numbers", path=path)
    if frame["stratum"].isna().any():
        raise InputError("every item needs its stratum (the weak label it was drawn under)", path=path)
    frame = frame.assign(weight=weights)
    for column in ("stratum", "pool_size", "sample_size", "seed"):  # numbers, when a CSV brought them as text
        if column in frame.columns:
            numbers = pd.to_numeric(frame[column], errors="coerce")
            if numbers.notna().all():
                frame[column] = numbers.astype(int) if (numbers % 1 == 0).all() else numbers
    return frame
