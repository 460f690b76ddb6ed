"""Dreaddit (Turcan & McKeown 2019): Reddit posts, binary stress, official train/test CSVs.

`domain` is Dreaddit's stressor domain; the subreddit is kept in `raw` form inside `domain` as
'<domain>/<subreddit>' so audits can group by either. Ids are '<dataset>-<the file's id>' (e.g.
'dreaddit-33181'); until issue 17 they were the bare file id (docs/sources.md, "Ids").
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mhaudit.tables.corpus.sources.registry import ReadOptions, Source, register
from mhaudit.tables.corpus.sources.records import prefixed_ids, records
from mhaudit.tables.io import read_table

DOMAINS = {
    "domesticviolence": "abuse", "survivorsofabuse": "abuse",
    "anxiety": "anxiety", "stress": "anxiety",
    "almosthomeless": "financial", "assistance": "financial", "food_pantry": "financial", "homeless": "financial",
    "ptsd": "ptsd",
    "relationships": "social",
}


def read(paths: list[Path], options: ReadOptions) -> pd.DataFrame:
    parts = []
    for path in paths:
        frame = read_table(path, sep=",", encoding=options.encoding, required=["id", "subreddit", "text", "label"],
                           place=True)
        dataset = options.dataset or "dreaddit"
        parts.append(records(frame, ids=prefixed_ids(dataset, frame["id"]), texts=frame["text"],
                             labels=frame["label"], dataset=dataset, platform=options.platform or "reddit",
                             label_source=options.label_source or "human",
                             split="test" if "test" in path.stem.lower() else "train",
                             domain=frame["subreddit"].map(lambda s: f"{DOMAINS.get(s, 'other')}/{s}")))
    return pd.concat(parts, ignore_index=True)


SOURCE = register(Source("dreaddit", "Dreaddit train/test CSVs (Reddit, stress 0/1, human labels)", read,
                         default_mapping="stress-binary"))
