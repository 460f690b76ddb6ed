"""Dreaddit (Turcan & McKeown 2019): Reddit posts, binary stress, official train/test CSVs (docs/sources.md).

`domain` is Dreaddit's stressor domain; the subreddit is kept in `raw` form inside `domain` as
'<domain>/<subreddit>' so audits can group by either.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mhaudit.tables.corpus.sources.registry import ReadOptions, Source, register
from mhaudit.tables.corpus.sources.records import per_file, prefixed_ids, records
from mhaudit.tables.io import read_table

DOMAINS = {
    "domesticviolence": "abuse",
    "survivorsofabuse": "abuse",
    "anxiety": "anxiety",
    "stress": "anxiety",
    "almosthomeless": "financial",
    "assistance": "financial",
    "food_pantry": "financial",
    "homeless": "financial",
    "ptsd": "ptsd",
    "relationships": "social",
}


def _read(path: Path, options: ReadOptions, _several: bool) -> pd.DataFrame:
    frame = read_table(
        path, sep=",", encoding=options.encoding, required=["id", "subreddit", "text", "label"], place=True
    )
    dataset = options.dataset or "dreaddit"
    return records(
        frame,
        ids=prefixed_ids(dataset, frame["id"]),
        texts=frame["text"],
        labels=frame["label"],
        dataset=dataset,
        platform=options.platform or "reddit",
        label_source=options.label_source or "human",
        split="test" if "test" in path.stem.lower() else "train",
        domain=frame["subreddit"].map(lambda s: f"{DOMAINS.get(s, 'other')}/{s}"),
    )


SOURCE = register(
    Source(
        "dreaddit",
        "Dreaddit train/test CSVs (Reddit, stress 0/1, human labels)",
        per_file(_read),
        default_mapping="stress-binary",
    )
)
