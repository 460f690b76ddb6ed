"""The labelled sets a collection filter's recall is measured on, and the table of it (`recall_tables`).

Each set is read in place from a data folder (`../shared/data` in the project; absent for most users) by its
registered importer (tables.corpus.sources), and one raw label marks its positive posts; what each set measures:
docs/collect.md, "The sets". The Bluesky depression set is split in two halves by a hash of each post's id,
because the `wide` lexicon was tuned on the first and is judged on the second.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.weak_supervision.lexicons.recall import filter_name, filter_recall, kept_by, load_filter

__all__ = ["LABELLED_SETS", "DEFAULT_FILTERS", "LabelledSet", "bluesky_half", "read_set", "recall_tables"]

DEFAULT_FILTERS = ("mh", "si", "si+mh", "wide", "si+mh+wide")


@dataclass(frozen=True)
class LabelledSet:
    name: str
    source: str  # the importer (tables.corpus.sources)
    files: tuple[str, ...]  # relative to the data folder
    positive: str | None  # the raw label of a positive post; None: no target (keep share only)
    target: str  # what the positive posts are
    labels_by: str
    half: str | None = None  # "tune" or "held-out": one half of the Bluesky set
    tuned: tuple[str, ...] = ()  # lexicons written looking at (some of) these posts: their recall here is optimistic


_BLUESKY = ("bluesky_depression/bluesky-depression-dataset.csv",)
_KAGGLE = ("kaggle_mh/Combined Data.csv",)
LABELLED_SETS = (
    LabelledSet(
        "bluesky_depression",
        "bluesky_depression",
        _BLUESKY,
        "1",
        "depressive",
        "two clinical psychologists",
        tuned=("wide",),
    ),
    LabelledSet(
        "bluesky_depression (tuning half)",
        "bluesky_depression",
        _BLUESKY,
        "1",
        "depressive",
        "two clinical psychologists",
        half="tune",
        tuned=("wide",),
    ),
    LabelledSet(
        "bluesky_depression (held-out half)",
        "bluesky_depression",
        _BLUESKY,
        "1",
        "depressive",
        "two clinical psychologists",
        half="held-out",
    ),
    LabelledSet(
        "dreaddit",
        "dreaddit",
        ("dreaddit/dreaddit-train.csv", "dreaddit/dreaddit-test.csv"),
        "1",
        "stress",
        "crowd workers",
    ),
    LabelledSet(
        "tss_twitter_gold", "tss_gold", ("tss_probe/Twitter_sample_gold.utf8.csv",), "1", "stress", "a researcher"
    ),
    LabelledSet(
        "rastogi_twitter_non_advert",
        "rastogi",
        ("stress_rastogi2022/Twitter_Non-Advert.csv",),
        "1",
        "stress",
        "a classifier (automatic)",
    ),
    LabelledSet(
        "depression_reddit_cleaned",
        "depression_reddit",
        ("depression_reddit_cleaned/depression_dataset_reddit_cleaned.csv",),
        "1",
        "depression",
        "subreddit (r/depression vs tweets; lemmatised, no punctuation)",
    ),
    LabelledSet("kaggle_mh suicidal", "kaggle_mh", _KAGGLE, "Suicidal", "suicidal", "mixed (source data sets)"),
    LabelledSet("kaggle_mh depression", "kaggle_mh", _KAGGLE, "Depression", "depression", "mixed (source data sets)"),
    LabelledSet(
        "goemotions test (general stream)",
        "goemotions",
        ("goemotions/test.tsv",),
        None,
        "none",
        "no target: keep share only",
    ),
)


def bluesky_half(ids: Sequence[str]) -> np.ndarray:
    """Which half of the Bluesky set each record id falls in: "tune" when the first byte of its SHA-256 is
    even, else "held-out" (fixed by the id alone, so it never depends on row order or a seed)."""
    return np.array(["tune" if hashlib.sha256(i.encode()).digest()[0] % 2 == 0 else "held-out" for i in ids])


def read_set(data: Path, spec: LabelledSet) -> pd.DataFrame | None:
    """`text` and `positive` of each post of the set (its half only), or None when a file is absent."""
    from mhaudit.tables.corpus.sources import ReadOptions, get

    paths = [Path(data) / name for name in spec.files]
    if not all(path.is_file() for path in paths):
        return None
    records = get(spec.source).read(paths, ReadOptions())
    if spec.half is not None:
        records = records[bluesky_half(records["id"]) == spec.half]
    positive = records["raw_labels"].map(lambda labels: spec.positive in labels)
    return pd.DataFrame({"text": records["text"].to_numpy(), "positive": positive.to_numpy(dtype=bool)})


def recall_tables(
    data: Path, filters: Sequence[str] = DEFAULT_FILTERS, sets: Sequence[LabelledSet] = LABELLED_SETS
) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """One table per labelled set found under `data` (one row per filter: FilterRecall.row with the filter's
    name, its lexicons' versions and `tuned_here`, whether one of them was tuned on these posts), and the names of
    the sets whose files are absent."""
    lexicons = {spec: load_filter(spec) for spec in filters}
    tables, absent = {}, []
    for spec in sets:
        posts = read_set(data, spec)
        if posts is None:
            absent.append(spec.name)
            continue
        table = pd.DataFrame(
            [
                {
                    "filter": filter_name(lexs),
                    "versions": " ".join(f"{x.name} {x.version}" for x in lexs),
                    "tuned_here": any(x.name in spec.tuned for x in lexs),
                    **filter_recall(kept_by(lexs, posts["text"]), posts["positive"]).row(),
                }
                for lexs in lexicons.values()
            ]
        )
        if spec.positive is None:  # no target: only the keep share means anything
            table = table[
                [
                    c
                    for c in table.columns
                    if c in ("filter", "versions", "tuned_here", "n_posts", "n_kept") or c.startswith("keep_share")
                ]
            ]
        tables[spec.name] = table
    return tables, absent
