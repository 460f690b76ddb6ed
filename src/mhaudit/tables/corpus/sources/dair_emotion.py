"""dair-ai/emotion (CARER; Saravia et al. 2018): tweets, 6 emotions, distant (hashtag) labels.

The headerless `text;label` files or a Hugging Face export (label ids 0-5 in the order of EMOTIONS, or names);
layouts and ids: docs/sources.md. The split comes from the file name (the file stem stands in for it in ids).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from mhaudit.tables.corpus.sources.registry import ReadOptions, Source, register
from mhaudit.tables.corpus.sources.records import as_labels, as_text, per_file, records, row_ids, split_from_name
from mhaudit.tables.io import read_delimited, read_table, with_place

EMOTIONS = ["sadness", "joy", "love", "anger", "fear", "surprise"]  # the HF ClassLabel id order


def _name(label: str) -> str:
    return EMOTIONS[int(label)] if label.isdigit() and int(label) < len(EMOTIONS) else label


def _read(path: Path, options: ReadOptions, _several: bool) -> pd.DataFrame:
    if path.suffix.lower() == ".txt":
        frame = with_place(
            read_delimited(
                path, sep=";", encoding=options.encoding, header=False, names=["text", "label"], quoting=csv.QUOTE_NONE
            ),
            path,
        )
    else:
        frame = read_table(path, encoding=options.encoding, required=["text", "label"], place=True)
    split = split_from_name(path)
    dataset = options.dataset or "dair_emotion"
    return records(
        frame,
        ids=row_ids(frame, f"{dataset}-{split or path.stem}"),
        texts=as_text(frame["text"]),
        labels=[_name(x) for x in as_labels(frame["label"])],
        dataset=dataset,
        platform=options.platform or "twitter",
        label_source=options.label_source or "distant",
        split=split,
    )


SOURCE = register(
    Source(
        "dair_emotion",
        "dair-ai/emotion text;label files or HF export (Twitter, 6 emotions, distant labels)",
        per_file(_read),
        classes=list(EMOTIONS),
    )
)
