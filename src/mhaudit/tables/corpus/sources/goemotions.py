"""GoEmotions (Demszky et al. 2020): Reddit comments, 27 emotions + neutral, multi-label, human raters.

The official headerless TSVs or a Hugging Face `go_emotions` export (labels a list of ids or a "[3, 27]"
string); layouts and ids: docs/sources.md. The split comes from the file name. raw_labels are emotion names,
in the order the file lists them (the 'first' policy takes the first). Where the id cell is empty the id is
'<dataset>-<split or file stem>-<row>'.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.sources.registry import ReadOptions, Source, register
from mhaudit.tables.corpus.sources.records import as_text, is_absent, per_file, records, split_from_name
from mhaudit.tables.io import SOURCE_FILE, SOURCE_ROW, read_delimited, read_table, with_place

EMOTIONS = [
    "admiration",
    "amusement",
    "anger",
    "annoyance",
    "approval",
    "caring",
    "confusion",
    "curiosity",
    "desire",
    "disappointment",
    "disapproval",
    "disgust",
    "embarrassment",
    "excitement",
    "fear",
    "gratitude",
    "grief",
    "joy",
    "love",
    "nervousness",
    "optimism",
    "pride",
    "realization",
    "relief",
    "remorse",
    "sadness",
    "surprise",
    "neutral",
]


def _names(folder: Path) -> list[str]:
    file = folder / "emotions.txt"
    if not file.is_file():
        return EMOTIONS
    names = [line.strip() for line in file.read_text("utf-8").splitlines() if line.strip()]
    if not names:
        raise InputError("has no emotion names; expected one name per line", path=file)
    return names


def _ids(cell: object) -> list[str]:
    """Label ids of one cell: a list/array of ints, or text like '3,27' or '[3, 27]'."""
    if isinstance(cell, (list, tuple, np.ndarray)):
        return [str(x).strip() for x in cell]
    text = "" if is_absent(cell) else str(cell).strip().strip("[]")
    return [part.strip().strip("'\"") for part in text.split(",") if part.strip()]


def _label_names(frame: pd.DataFrame, column: str, names: list[str]) -> list[list[str]]:
    out = []
    for i, cell in enumerate(frame[column]):
        ids = _ids(cell)
        if not ids or not all(x.isdigit() and int(x) < len(names) for x in ids):
            raise InputError(
                f"row {frame[SOURCE_ROW].iat[i]}: label ids {cell!r} are not a list of ids "
                f"0-{len(names) - 1} (emotions.txt order)",
                path=frame[SOURCE_FILE].iat[i],
            )
        out.append([names[int(x)] for x in ids])
    return out


def _read(path: Path, options: ReadOptions, _several: bool) -> pd.DataFrame:
    if path.suffix.lower() == ".tsv":
        frame = with_place(
            read_delimited(path, sep="\t", encoding=options.encoding, header=False, names=["text", "labels", "id"]),
            path,
        )
    else:
        frame = read_table(path, encoding=options.encoding, required=["text", "labels", "id"], place=True)
    split = split_from_name(path)
    dataset = options.dataset or "goemotions"
    ids = [
        f"{dataset}-{i}" if i.strip() else f"{dataset}-{split or path.stem}-{r}"
        for i, r in zip(as_text(frame["id"].fillna("")), frame[SOURCE_ROW], strict=True)
    ]
    return records(
        frame,
        ids=ids,
        texts=as_text(frame["text"]),
        labels=_label_names(frame, "labels", _names(path.parent)),
        dataset=dataset,
        platform=options.platform or "reddit",
        label_source=options.label_source or "human",
        split=split,
    )


SOURCE = register(
    Source(
        "goemotions",
        "GoEmotions TSVs or HF go_emotions export (Reddit, 28 emotions, multi-label, human labels)",
        per_file(_read),
        classes=list(EMOTIONS),
        multi_label=True,
    )
)
