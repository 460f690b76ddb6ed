"""Rastogi, Liu & Cambria 2022 stress corpora (CSV conversions of the xlsx): Reddit and Twitter, stress 0/1,
labels from an automatic DNN labeller. The file name says which of the four files it is (data-set names and
ids: docs/sources.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.sources.registry import ReadOptions, Source, register
from mhaudit.tables.corpus.sources.records import records, row_ids
from mhaudit.tables.io import read_table

LAYOUTS = {  # normalised file stem -> (text column, label column)
    "reddit_combi": ("Body_Title", "label"),
    "reddit_title": ("title", "label"),
    "twitter_full": ("text", "labels"),
    "twitter_non_advert": ("text", "label"),
}


def read(paths: list[Path], options: ReadOptions) -> pd.DataFrame:
    keys = [_key(path) for path in paths]
    names = [options.dataset or f"rastogi_{key}" for key in keys]
    parts = []
    for path, key, dataset in zip(paths, keys, names, strict=True):
        text_col, label_col = LAYOUTS[key]
        frame = read_table(path, sep=",", encoding=options.encoding, required=[text_col, label_col], place=True)
        prefix = dataset if names.count(dataset) == 1 else f"{dataset}-{path.stem}"  # rows repeat across files
        parts.append(
            records(
                frame,
                ids=row_ids(frame, prefix),
                texts=frame[text_col],
                labels=frame[label_col],
                dataset=dataset,
                platform=options.platform or key.split("_")[0],
                label_source=options.label_source or "auto",
                split=None,
            )
        )
    return pd.concat(parts, ignore_index=True)


def _key(path: Path) -> str:
    key = re.sub(r"[^a-z]+", "_", path.stem.lower()).strip("_")
    if key not in LAYOUTS:
        raise InputError(
            "is not one of the Rastogi 2022 files; expected Reddit_Combi.csv, Reddit_Title.csv, "
            "Twitter_Full.csv or Twitter_Non-Advert.csv (or use the generic source)",
            path=path,
        )
    return key


SOURCE = register(
    Source(
        "rastogi",
        "Rastogi 2022 Reddit_Combi / Reddit_Title / Twitter_Full / Twitter_Non-Advert CSVs (stress 0/1, auto labels)",
        read,
        default_mapping="stress-binary",
    )
)
