"""dair-ai/emotion (CARER; Saravia et al. 2018): tweets, 6 emotions, distant (hashtag) labels.

Two layouts: the original headerless `text;label` files (train.txt / val.txt / test.txt, label names) and a
Hugging Face export (.parquet / .csv / .jsonl with columns `text`, `label`; label ids 0-5 in the order of
EMOTIONS, or names). The split comes from the file name. Ids are '<dataset>-<split or file stem>-<row>'.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from mhaudit.tables.corpus.sources.registry import ReadOptions, Source, register
from mhaudit.tables.corpus.sources.records import as_labels, as_text, records, row_ids, split_from_name
from mhaudit.tables.io import read_delimited, read_table, with_place

EMOTIONS = ["sadness", "joy", "love", "anger", "fear", "surprise"]  # the HF ClassLabel id order


def _name(label: str) -> str:
    return EMOTIONS[int(label)] if label.isdigit() and int(label) < len(EMOTIONS) else label


def read(paths: list[Path], options: ReadOptions) -> pd.DataFrame:
    parts = []
    for path in paths:
        if path.suffix.lower() == ".txt":
            frame = with_place(read_delimited(path, sep=";", encoding=options.encoding, header=False,
                                              names=["text", "label"], quoting=csv.QUOTE_NONE), path)
        else:
            frame = read_table(path, encoding=options.encoding, required=["text", "label"], place=True)
        split = split_from_name(path)
        dataset = options.dataset or "dair_emotion"
        parts.append(records(frame, ids=row_ids(frame, f"{dataset}-{split or path.stem}"),
                             texts=as_text(frame["text"]), labels=[_name(x) for x in as_labels(frame["label"])],
                             dataset=dataset, platform=options.platform or "twitter",
                             label_source=options.label_source or "distant", split=split))
    return pd.concat(parts, ignore_index=True)


SOURCE = register(Source("dair_emotion", "dair-ai/emotion text;label files or HF export (Twitter, 6 emotions, "
                         "distant labels)", read, classes=list(EMOTIONS)))
