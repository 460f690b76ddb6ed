"""The error sources of the weak labeler, for the agreement report: the tags the annotators, the reference labeler
and the adjudicator gave each item, counted per outcome of the weak label (false positive, false negative,
correct), and their section."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.report import Section
from mhaudit.tables.label_store import parse_tags

__all__ = ["NO_TAG", "error_sources", "error_section"]

NO_TAG = "(no tag)"


def error_sources(
    scored: pd.DataFrame, rows: pd.DataFrame, annotators: list[str], reference: str | None
) -> pd.DataFrame:
    """Items per tag within each outcome of the weak label on the scored items (false positive, false negative,
    correct)."""
    cells, tags = _outcomes(scored), _item_tags(rows, annotators, reference)
    table = []
    for outcome in ("false_positive", "false_negative", "correct"):
        ids = cells.index[cells == outcome]
        if not len(ids):
            continue
        item_tags = tags.reindex(ids).map(lambda t: t if isinstance(t, list) and t else [NO_TAG])
        counts = item_tags.explode().value_counts()
        for tag, count in sorted(counts.items(), key=lambda kv: (kv[0] == NO_TAG, -kv[1], kv[0])):
            table.append(
                {
                    "outcome": outcome,
                    "tag": tag,
                    "items": int(count),
                    "outcome_items": len(ids),
                    "share": count / len(ids),
                }
            )
    return pd.DataFrame(table, columns=["outcome", "tag", "items", "outcome_items", "share"])


def error_section(errors: pd.DataFrame) -> Section:
    return Section(
        "Error sources of the weak labeler",
        "Error-source tags the annotators and the adjudicator gave to each item, counted for the weak labeler's false "
        "positives, false negatives and correct items (an item counts once per tag; share = items with the tag / "
        "items with that outcome)." + ("" if (errors["tag"] != NO_TAG).any() else " No tags were recorded."),
        {"error_sources": errors},
    )


def _item_tags(rows: pd.DataFrame, annotators: list[str], reference: str | None) -> pd.Series:
    """Per item, the sorted tags that the annotators, the reference labeler and the adjudicator gave."""
    taggers = [*annotators, *([reference] if reference else [])]
    tag_rows = rows[rows["labeler"].isin(taggers) | (rows["kind"] == "adjudicated")]
    item_tags = (
        tag_rows["tags"].map(parse_tags)
        if "tags" in tag_rows
        else pd.Series([[]] * len(tag_rows), index=tag_rows.index)
    )
    return (
        tag_rows.assign(_tags=item_tags)
        .groupby("item_id")["_tags"]
        .agg(lambda lists: sorted({t for ts in lists for t in ts}))
    )


def _outcomes(scored: pd.DataFrame) -> pd.Series:
    """The weak label's outcome per scored item: correct, false_positive or false_negative."""
    return pd.Series(
        np.where(
            scored["weak"] == scored["reference"],
            "correct",
            np.where(scored["weak"] == 1, "false_positive", "false_negative"),
        ),
        index=scored.index,
    )
