"""Any CSV / TSV / JSON Lines / Parquet file (format from the extension, or --sep for a delimited file).

Columns: --text-col (default `text`), --label-col (default `label`; a list cell is several labels),
--id-col (default: the row number). Taken where present: `split`, `platform`, `dataset`, `domain`, `author`,
`created_at`, `lang`, `label_source`; the options --platform / --dataset / --label-source win over those
columns (defaults: docs/sources.md). An empty `split` cell means no official split for that row.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.sources.registry import ReadOptions, Source, register
from mhaudit.tables.corpus.sources.records import as_labels, as_text, parse_times, per_file, records
from mhaudit.tables.io import SOURCE_ROW, read_table

OPTIONAL = ("domain", "author", "lang")


def _column(frame: pd.DataFrame, name: str, override: str | None, default: str | None = None) -> list:
    if override:
        return [override] * len(frame)
    if name in frame.columns:
        return [v if v else default for v in as_text(frame[name])]
    return [default] * len(frame)


def _read(path: Path, options: ReadOptions, several: bool) -> pd.DataFrame:
    text_col, label_col = options.text_col or "text", options.label_col or "label"
    required = [text_col, label_col] + ([options.id_col] if options.id_col else [])
    frame = read_table(path, encoding=options.encoding, sep=options.sep, required=required, place=True)
    if not options.platform and "platform" not in frame.columns:
        raise InputError("has no 'platform' column; pass --platform (e.g. --platform reddit)", path=path)
    datasets = _column(frame, "dataset", options.dataset, path.stem)
    if options.id_col:
        ids = as_text(frame[options.id_col])
    else:
        infix = f"{path.stem}-" if several else ""
        ids = [f"{d}-{infix}{r}" for d, r in zip(datasets, frame[SOURCE_ROW], strict=True)]
    extra = {c: as_text(frame[c]) for c in OPTIONAL if c in frame.columns}
    if "created_at" in frame.columns:
        extra["created_at"] = parse_times(frame, "created_at")
    return records(
        frame,
        ids=ids,
        texts=as_text(frame[text_col]),
        labels=as_labels(frame[label_col]),
        dataset=datasets,
        platform=_column(frame, "platform", options.platform),
        label_source=_column(frame, "label_source", options.label_source, "unknown"),
        split=_column(frame, "split", None),
        **extra,
    )


SOURCE = register(
    Source(
        "generic",
        "any CSV / TSV / JSON Lines / Parquet with text and label columns "
        "(--text-col, --label-col, --id-col, --platform)",
        per_file(_read),
    )
)
