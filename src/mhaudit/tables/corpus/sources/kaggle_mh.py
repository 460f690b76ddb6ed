"""Kaggle "Sentiment Analysis for Mental Health" (`Combined Data.csv`): ~53k statements, 7 statuses.

Columns: an unnamed pandas index, `statement`, `status` (Normal, Depression, Suicidal, Anxiety, Bipolar,
Stress, Personality disorder). No official split. The released file has some empty statements; like every
empty text they are an input error unless the import is given --drop-empty, which drops and counts them.
Ids are '<dataset>-<index value>' (the row number where the index column is absent).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mhaudit.tables.corpus.sources.registry import ReadOptions, Source, register
from mhaudit.tables.corpus.sources.records import records
from mhaudit.tables.io import SOURCE_ROW, read_table

INDEX = "Unnamed: 0"  # what pandas calls the blank first header cell


def read(paths: list[Path], options: ReadOptions) -> pd.DataFrame:
    parts = []
    for path in paths:
        frame = read_table(path, sep=",", encoding=options.encoding, required=["statement", "status"], place=True)
        dataset = options.dataset or "kaggle_mh"
        prefix = dataset if len(paths) == 1 else f"{dataset}-{path.stem}"
        index = frame[INDEX] if INDEX in frame.columns else frame[SOURCE_ROW]
        parts.append(records(frame, ids=[f"{prefix}-{i}" for i in index], texts=frame["statement"],
                             labels=frame["status"], dataset=dataset, platform=options.platform or "kaggle",
                             label_source=options.label_source or "mixed", split=None))
    return pd.concat(parts, ignore_index=True)


SOURCE = register(Source("kaggle_mh", "Kaggle 'Sentiment Analysis for Mental Health' Combined Data.csv "
                         "(7 statuses, no split)", read, default_mapping="kaggle-cpfe",
                         classes=["Normal", "Depression", "Suicidal", "Anxiety", "Bipolar", "Stress",
                                  "Personality disorder"]))
