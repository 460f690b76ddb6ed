"""Bluesky depression data set (aliciamarzola): 4,568 posts, `depressive` 0/1 by two clinical psychologists.

Columns: unnamed index, text (quoted, with newlines), repostCount, replyCount, likeCount, link, image,
createdAt, depressive. `created_at` comes from createdAt. The `link` column is never read into the corpus
(privacy: in the published data set it can point at accounts). No official split.
Ids are '<dataset>-<index value>' (the row number where the index column is absent).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mhaudit.tables.corpus.sources.registry import ReadOptions, Source, register
from mhaudit.tables.corpus.sources.records import parse_times, records
from mhaudit.tables.io import SOURCE_ROW, read_table

INDEX = "Unnamed: 0"


def read(paths: list[Path], options: ReadOptions) -> pd.DataFrame:
    parts = []
    for path in paths:
        frame = read_table(path, sep=",", encoding=options.encoding, required=["text", "createdAt", "depressive"],
                           place=True)
        dataset = options.dataset or "bluesky_depression"
        prefix = dataset if len(paths) == 1 else f"{dataset}-{path.stem}"
        index = frame[INDEX] if INDEX in frame.columns else frame[SOURCE_ROW]
        parts.append(records(frame, ids=[f"{prefix}-{i}" for i in index], texts=frame["text"],
                             labels=frame["depressive"], dataset=dataset, platform=options.platform or "bluesky",
                             label_source=options.label_source or "human", split=None,
                             created_at=parse_times(frame, "createdAt")))
    return pd.concat(parts, ignore_index=True)


SOURCE = register(Source("bluesky_depression", "Bluesky depression CSV (Bluesky, depressive 0/1, clinician labels)",
                         read, default_mapping="depression-binary"))
