"""`mhaudit data import`: a source's files -> mapped, validated corpus + a mapping report."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.options import check, one_of, option
from mhaudit.core.privacy import pseudonymise
from mhaudit.tables.corpus import mappings, sources
from mhaudit.tables.corpus.label_mapping import MultiLabelPolicy, apply_mapping, identity_mapping
from mhaudit.tables.corpus.schema import SCHEMA, SPLITS, Corpus
from mhaudit.tables.corpus.sources import ReadOptions
from mhaudit.tables.corpus.splits import assign_splits


@dataclass(frozen=True)
class ImportOptions:
    """How a source's files become a corpus, declared once: `mhaudit data import`'s flags and an experiment file's
    [[corpus]] keys are made from these fields."""

    mapping: str | None = option(None, help="Label mapping name(s), chained with '+'.")
    platform: str | None = option(None, help="Platform name (overrides the source's).")
    dataset: str | None = option(None, help="Data-set name (overrides the source's).")
    encoding: str = option("utf-8", help="Text encoding of the files.")
    multi_label: str = option(
        "first",
        help="Policy for rows with several labels: first, expand, priority or drop-ambiguous.",
        rule=one_of(*(p.value for p in MultiLabelPolicy)),
    )
    priority: tuple[str, ...] | None = option(None, help="Class order for multi_label priority.")
    split: str = option(
        "auto",
        help="'auto' keeps official splits and draws 70/15/15 where none; or train/val/test/calibration for all rows.",
        rule=one_of("auto", *SPLITS),
    )
    seed: int = option(0, help="Seed for drawn splits.")
    text_col: str | None = option(None, help="Text column (generic sources).")
    label_col: str | None = option(None, help="Label column (generic sources).")
    id_col: str | None = option(None, help="Id column (generic sources).")
    sep: str | None = option(None, help="Delimiter (generic sources; default: from the file extension).")
    label_source: str | None = option(None, help="Label source (human, auto, ...).")
    drop_empty: bool = option(False, help="Drop rows whose text is empty (counted) instead of stopping.")

    def __post_init__(self) -> None:
        check(self)

    def read_options(self) -> ReadOptions:
        """The options a source's reader takes (the fields of the same names)."""
        return ReadOptions(**{f.name: getattr(self, f.name) for f in fields(ReadOptions)})


@dataclass
class ImportResult:
    corpus: Corpus
    mapping_report: pd.DataFrame  # per raw label: assignments, class or drop, reason
    dropped: pd.DataFrame  # dropped rows (or label assignments) by reason
    rows_read: int
    split_note: str
    empty_rows_dropped: int = 0


def import_source(source_name: str, paths: list[Path], options: ImportOptions = ImportOptions()) -> ImportResult:
    """Read, map and validate. `options.split`: 'auto' keeps official splits and draws a stratified 70/15/15
    split (seeded) where a data set has none; a split name puts every row in that split.
    Empty or whitespace-only texts are an error unless `options.drop_empty`, which drops and counts them."""
    source = sources.get(source_name)
    if not paths:
        raise InputError(f"source '{source_name}' needs at least one file path")
    records = source.read([Path(p) for p in paths], options.read_options())
    if records.empty:
        raise InputError("no rows were read; the corpus would be empty", path=", ".join(map(str, paths)))
    records, n_empty = _empty_texts(records, options.drop_empty)
    chosen = options.mapping or source.default_mapping
    if chosen:
        label_map = mappings.load(chosen)
    else:
        raws = sorted({r for labs in records["raw_labels"] for r in labs})
        label_map = identity_mapping(source.classes or raws, name=f"{source_name}-native")
    priority = list(options.priority) if options.priority else None
    labelled = apply_mapping(records, label_map, MultiLabelPolicy(options.multi_label), priority)
    frame = labelled.frame
    if frame.empty:
        raise InputError(f"mapping '{label_map.name}' dropped every row; the corpus would be empty")
    frame, note = _splits(frame, options.split, options.seed)
    if "author" in frame.columns:  # raw account ids never enter a corpus
        frame = frame.assign(author=pseudonymise(frame["author"]))
    frame = SCHEMA.validate(frame, classes=label_map.classes)  # errors cite _file/_row; keeps schema columns only
    corpus = Corpus(frame, label_map.classes, {"mapping": label_map.name, "source": source_name, "synthetic": False})
    return ImportResult(corpus, labelled.report, labelled.dropped, len(records) + n_empty, note, n_empty)


def _empty_texts(records: pd.DataFrame, drop: bool) -> tuple[pd.DataFrame, int]:
    blank = records["text"].isna() | (records["text"].astype(str).str.strip() == "")
    if blank.any() and not drop:
        raise InputError(
            f"{SCHEMA.where(records, int(blank.argmax()), None)}: text is empty or whitespace only "
            f"({int(blank.sum())} such rows); every row needs a text "
            "(--drop-empty drops and counts them)"
        )
    return records[~blank], int(blank.sum())


def _splits(frame: pd.DataFrame, split: str, seed: int) -> tuple[pd.DataFrame, str]:
    if split != "auto":
        return frame.assign(split=split), f"every row put in split '{split}'"
    missing = frame["split"].isna()
    if not missing.any():
        return frame, "official splits kept"
    frame = frame.copy()
    frame.loc[missing, "split"] = assign_splits(frame[missing], seed=seed)["split"]
    names = ", ".join(sorted(frame.loc[missing, "dataset"].unique()))
    return frame, f"no official split for {names}: stratified 70/15/15 drawn with seed {seed}"
