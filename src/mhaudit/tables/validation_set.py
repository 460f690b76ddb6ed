"""The validation set's table: the columns every sample for people has, and the items' texts it carries.

The weak-label sample (audits.agreement) and the certification sample (tables.certification_sample) share
these columns, so the annotation app serves either unchanged.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["SAMPLE_COLUMNS", "item_texts"]

SAMPLE_COLUMNS = ("sample_id", "item_id", "task", "text", "stratum", "weak_labeler", "pool_size", "sample_size",
                  "weight", "seed")


def item_texts(items: pd.DataFrame, id_col: str) -> pd.Series:
    """Each item's text by id (as text; first row of a repeated id), items without a non-blank text left out."""
    texts = items.assign(_id=items[id_col].astype(str)).drop_duplicates("_id").set_index("_id")["text"]
    return texts[texts.map(lambda t: isinstance(t, str) and bool(t.strip()))]
