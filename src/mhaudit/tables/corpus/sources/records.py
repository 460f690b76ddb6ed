"""Raw records from a source file read by `mhaudit.tables.io.read_table`: ids, texts, labels, where each came from."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.sources.registry import ReadOptions
from mhaudit.tables.io import SOURCE_FILE, SOURCE_ROW, read_table

INDEX = "Unnamed: 0"  # what pandas calls the blank first header cell of a written index


def records(
    frame: pd.DataFrame,
    *,
    ids,
    texts,
    labels,
    dataset: str | list,
    platform: str | list,
    label_source: str | list,
    split: str | list | None,
    **optional,
) -> pd.DataFrame:
    """Assemble raw records from columns of `frame` (labels: one raw label per row, or lists).
    dataset / platform / label_source / split: one value for every row, or a list with one per row."""
    out = pd.DataFrame(
        {
            "id": list(ids),
            "text": list(texts),
            "raw_labels": [lab if isinstance(lab, list) else [str(lab)] for lab in labels],
            "dataset": dataset,
            "platform": platform,
            "label_source": label_source,
            "split": split,
            SOURCE_FILE: frame[SOURCE_FILE].to_numpy(),
            SOURCE_ROW: frame[SOURCE_ROW].to_numpy(),
        }
    )
    return out.assign(**{name: list(values) for name, values in optional.items()})


def per_file(read_file: Callable[[Path, ReadOptions, bool], pd.DataFrame]):
    """A source's reader from `read_file(path, options, several)`, which reads one file's raw records (`several`:
    more than one file is read, so row numbers repeat across files); the files' records are stacked in order."""

    def read(paths: list[Path], options: ReadOptions) -> pd.DataFrame:
        return pd.concat([read_file(path, options, len(paths) > 1) for path in paths], ignore_index=True)

    return read


def table_reader(
    dataset: str,
    platform: str,
    label_source: str,
    text: str,
    label: str,
    *,
    sep: str = ",",
    created_at: str | None = None,
    indexed: bool = False,
):
    """A source's reader for delimited files of one text and one label column and no official split. Ids are
    '<dataset>-<row>', or '<dataset>-<index value>' where the file is `indexed` and has its pandas index column;
    '<dataset>-<file stem>-...' when several files are read. `created_at`: a column of ISO 8601 times."""

    def read(path: Path, options: ReadOptions, several: bool) -> pd.DataFrame:
        frame = read_table(
            path, sep=sep, encoding=options.encoding, place=True, required=[c for c in (text, created_at, label) if c]
        )
        name = options.dataset or dataset
        index = frame[INDEX] if indexed and INDEX in frame.columns else frame[SOURCE_ROW]
        times = {"created_at": parse_times(frame, created_at)} if created_at else {}
        return records(
            frame,
            ids=[f"{name}-{path.stem}-{i}" if several else f"{name}-{i}" for i in index],
            texts=frame[text],
            labels=frame[label],
            dataset=name,
            platform=options.platform or platform,
            label_source=options.label_source or label_source,
            split=None,
            **times,
        )

    return per_file(read)


def split_from_name(path: Path) -> str | None:
    """An official split named in a file name (train / dev, val, validation / test), else None."""
    words = set(re.split(r"[^a-z]+", path.stem.lower()))
    for split, names in (("train", {"train"}), ("val", {"dev", "val", "valid", "validation"}), ("test", {"test"})):
        if words & names:
            return split
    return None


def row_ids(frame: pd.DataFrame, prefix: str) -> list[str]:
    """'<prefix>-<row>' for every row (row = 1-based data row of its file)."""
    return [f"{prefix}-{row}" for row in frame[SOURCE_ROW]]


def prefixed_ids(prefix: str, values) -> list:
    """'<prefix>-<value>' for a data set's own ids (so two data-set names never share an id); absent or blank
    cells stay None, which the schema reports as an empty id."""
    return [None if v is None or not v.strip() else f"{prefix}-{v}" for v in as_text(values)]


def is_absent(value: object) -> bool:
    """True for None / NaN / NA (an absent cell), False for anything else, lists included."""
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def as_text(values) -> list:
    """Cell values as strings, otherwise as they are; absent cells stay None (the empty-text check names them)."""
    return [None if is_absent(v) else v if isinstance(v, str) else str(v) for v in values]


def as_labels(values) -> list:
    """One raw label (a string) per row, or a list of them where a cell holds a list (JSON Lines / Parquet)."""
    return [
        [str(x) for x in v] if isinstance(v, (list, tuple, np.ndarray)) else "" if is_absent(v) else str(v)
        for v in values
    ]


def parse_times(frame: pd.DataFrame, column: str) -> pd.Series:
    """Timestamps (UTC) from ISO 8601 text; empty cells become NaT; anything else is an InputError."""
    text = pd.Series(as_text(frame[column]), index=frame.index).replace("", None)
    times = pd.to_datetime(text, utc=True, format="ISO8601", errors="coerce")
    bad = text.notna() & times.isna()
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise InputError(
            f"row {frame[SOURCE_ROW].iat[i]}: column '{column}' value {text.iat[i]!r} is not an "
            f"ISO 8601 date/time ({int(bad.sum())} such rows)",
            path=frame[SOURCE_FILE].iat[i],
        )
    return times
