"""TSS-Probe Twitter files (stress 0/1): the human-labelled gold sample and the auto-labelled full corpus.

- `tss_gold`: `Twitter_sample_gold.utf8.csv` (header `text,label`). The raw `Twitter_sample_gold.csv` is
  mixed UTF-8/cp1252 with one 0x9D byte that cp1252 cannot decode: read it with `--encoding latin-1`, as
  TSS's loader effectively did (mojibake in the UTF-8 lines).
- `tss_full`: `Twitter_Full.csv`, `;`-separated, header `text;hashtags;labels;;` (the first three kept;
  hashtags are not a corpus column). Its export truncated 3 texts to nothing: import with --drop-empty.
No official split. Ids are '<dataset>-<row>'.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mhaudit.tables.corpus.sources.registry import ReadOptions, Source, register
from mhaudit.tables.corpus.sources.records import records, row_ids
from mhaudit.tables.io import read_table


def _reader(dataset: str, label_source: str, sep: str, label_col: str):
    def read(paths: list[Path], options: ReadOptions) -> pd.DataFrame:
        parts = []
        for path in paths:
            frame = read_table(path, sep=sep, encoding=options.encoding, required=["text", label_col], place=True)
            name = options.dataset or dataset
            prefix = name if len(paths) == 1 else f"{name}-{path.stem}"
            parts.append(records(frame, ids=row_ids(frame, prefix), texts=frame["text"], labels=frame[label_col],
                                 dataset=name, platform=options.platform or "twitter",
                                 label_source=options.label_source or label_source, split=None))
        return pd.concat(parts, ignore_index=True)
    return read


GOLD = register(Source("tss_gold", "TSS Twitter_sample_gold(.utf8).csv (Twitter, stress 0/1, human labels)",
                       _reader("tss_twitter_gold", "human", ",", "label"), default_mapping="stress-binary"))
FULL = register(Source("tss_full", "TSS Twitter_Full.csv, ';'-separated (Twitter, stress 0/1, auto labels)",
                       _reader("tss_twitter_auto", "auto", ";", "labels"), default_mapping="stress-binary"))
