"""Exact-duplicate removal within a corpus and decontamination of a training pool.

Texts are compared after lower-casing and collapsing whitespace. Within a corpus duplicates are
looked for inside each data set and split: two data sets may share texts on purpose (human and
automatic labels of the same tweets), and a text shared by a training and an evaluation split is
removed from the training side by `decontaminate`, never from the evaluation side.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


def normalise(texts: pd.Series) -> pd.Series:
    return texts.astype(str).str.lower().str.split().str.join(" ")


@dataclass
class DedupReport:
    rows_in: int
    duplicate_rows_removed: int  # extra copies of a text with one consistent label
    conflicting_texts: int  # texts that carry more than one label
    conflicting_rows_removed: int  # rows of conflicting texts: all copies when dropped, else the extras

    def as_table(self) -> pd.DataFrame:
        return pd.DataFrame([vars(self)])


def deduplicate(frame: pd.DataFrame, *, drop_conflicting: bool = True) -> tuple[pd.DataFrame, DedupReport]:
    """Keep the first copy of each (data set, split, normalised text). Texts whose copies disagree on the
    label are dropped entirely by default (no label can be trusted), else their first copy is kept."""
    group = ["dataset", "split", "norm"]
    key = frame[["dataset", "split", "label"]].assign(norm=normalise(frame["text"]))
    conflicting = key.groupby(group, sort=False)["label"].transform("nunique") > 1
    duplicate = key.duplicated(group, keep="first")
    drop = duplicate | conflicting if drop_conflicting else duplicate
    return frame[~drop], DedupReport(
        rows_in=len(frame),
        duplicate_rows_removed=int((duplicate & ~conflicting).sum()),
        conflicting_texts=int(key[conflicting].drop_duplicates(group).shape[0]),
        conflicting_rows_removed=int((conflicting & drop).sum()),
    )


def decontaminate(train: pd.DataFrame, evaluation: list[pd.DataFrame]) -> tuple[pd.DataFrame, int]:
    """Remove from a training pool every text that appears in any evaluation corpus."""
    hit = normalise(train["text"]).isin(set().union(*(normalise(frame["text"]) for frame in evaluation)))
    return train[~hit], int(hit.sum())
