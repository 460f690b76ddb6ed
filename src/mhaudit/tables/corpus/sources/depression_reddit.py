""" "Depression: Reddit Dataset (Cleaned)" (Kaggle): 7,731 texts, depressive 0/1 by subreddit membership.

Header `text,is_depressive` (mirrors) or `clean_text,is_depression` (reportedly the Kaggle original); the
`clean_text,label` variant is accepted too. Caveat: the 0 rows are tweets, not Reddit posts (docs/sources.md).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mhaudit.tables.corpus.sources.registry import ReadOptions, Source, register
from mhaudit.tables.corpus.sources.records import per_file, records, row_ids
from mhaudit.tables.io import read_table, require_columns

TEXTS, LABELS = ("text", "clean_text"), ("is_depressive", "is_depression", "label")


def _read(path: Path, options: ReadOptions, several: bool) -> pd.DataFrame:
    frame = read_table(path, sep=",", encoding=options.encoding, place=True)
    text_col = next((c for c in TEXTS if c in frame.columns), "text")
    label_col = next((c for c in LABELS if c in frame.columns), "is_depressive")
    require_columns(frame, [text_col, label_col], path, sep=",")
    dataset = options.dataset or "depression_reddit_cleaned"
    return records(
        frame,
        ids=row_ids(frame, f"{dataset}-{path.stem}" if several else dataset),
        texts=frame[text_col],
        labels=frame[label_col],
        dataset=dataset,
        platform=options.platform or "reddit",
        label_source=options.label_source or "subreddit",
        split=None,
    )


SOURCE = register(
    Source(
        "depression_reddit",
        "Depression Reddit (Cleaned) CSV (Reddit + tweets, depression 0/1, subreddit labels)",
        per_file(_read),
        default_mapping="depression-binary",
    )
)
