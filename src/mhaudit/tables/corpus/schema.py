"""The corpus table: one schema object owns its column names, types and checks."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mhaudit.core.errors import InputError
from mhaudit.tables.io import SOURCE_FILE, SOURCE_ROW, atomic_path, parquet_problem

SPLITS = ("train", "val", "test", "calibration")
METADATA_KEY = b"mhaudit"


def unreadable_corpus(path: Path, exc: Exception) -> InputError:
    """The one sentence for a corpus file Parquet cannot read."""
    return InputError(
        f"not a readable Parquet file ({parquet_problem(exc)}); expected a corpus written by mhaudit data import",
        path=path,
    )


@dataclass(frozen=True)
class CorpusSchema:
    required: tuple[str, ...] = ("id", "text", "label", "platform", "dataset", "split")
    optional: tuple[str, ...] = ("label_source", "domain", "author", "created_at", "raw_label", "lang")

    @property
    def columns(self) -> tuple[str, ...]:
        return self.required + self.optional

    def where(self, df: pd.DataFrame, i: int, path: object | None) -> str:
        """Name the place of row position `i`: the source file and row when known."""
        if SOURCE_ROW in df.columns:
            file = df[SOURCE_FILE].iat[i] if SOURCE_FILE in df.columns else path
            return f"{file}: row {df[SOURCE_ROW].iat[i]}"
        return f"{path}: row {i + 1}" if path is not None else f"row {i + 1}"

    def validate(
        self, df: pd.DataFrame, *, classes: list[str] | None = None, path: object | None = None
    ) -> pd.DataFrame:
        """Return `df` with schema columns in order and string types, or raise InputError."""
        missing = [c for c in self.required if c not in df.columns]
        if missing:
            raise InputError(
                f"missing column(s) {', '.join(missing)}; a corpus needs {', '.join(self.required)}", path=path
            )
        if len(df) == 0:
            raise InputError("the corpus is empty: no rows to work with", path=path)
        df = df.reset_index(drop=True)
        for col in ("id", "text", "label", "platform", "dataset", "split"):
            bad = df[col].isna() | (df[col].astype(str).str.strip() == "")
            if bad.any():
                what = "text is empty or whitespace only" if col == "text" else f"column '{col}' is empty"
                raise InputError(
                    f"{what} ({int(bad.sum())} such rows); every row needs a value",
                    path=self.where(df, int(bad.argmax()), path),
                )  # the first bad row
        ids = df["id"].astype(str)
        dup = ids.duplicated(keep="first")
        if dup.any():
            i = int(dup.argmax())
            raise InputError(
                f"id '{ids.iat[i]}' appears more than once ({int(dup.sum())} duplicate ids); ids must be unique",
                path=self.where(df, i, path),
            )
        bad_split = ~df["split"].isin(SPLITS)
        if bad_split.any():
            i = int(bad_split.argmax())
            raise InputError(
                f"split '{df['split'].iat[i]}' is not one of {', '.join(SPLITS)}", path=self.where(df, i, path)
            )
        if classes is not None:
            unknown = ~df["label"].astype(str).isin(classes)
            if unknown.any():
                i = int(unknown.argmax())
                raise InputError(
                    f"label '{df['label'].iat[i]}' is not one of the corpus classes ({', '.join(classes)})",
                    path=self.where(df, i, path),
                )
        keep = [c for c in self.columns if c in df.columns]
        return df[keep].astype({col: "string" for col in keep if col != "created_at"})


SCHEMA = CorpusSchema()


def label_codes(labels, classes: list[str]) -> np.ndarray:
    """Labels as int64 codes in `classes` order (distinct names), -1 where missing or not a class."""
    return pd.Index(classes).get_indexer(pd.Index(labels)).astype(np.int64, copy=False)


@dataclass
class Corpus:
    """A validated corpus table plus its class order (from the label mapping) and provenance."""

    frame: pd.DataFrame
    classes: list[str]
    meta: dict

    @classmethod
    def build(
        cls,
        frame: pd.DataFrame,
        classes: list[str] | None = None,
        *,
        meta: dict | None = None,
        path: object | None = None,
    ) -> Corpus:
        """A corpus from a frame checked against the schema (`classes`: the label order; default: sorted labels)."""
        if classes is None:  # no mapping: keep the order of the labels as sorted text
            classes = sorted(frame["label"].dropna().astype(str).unique()) if "label" in frame else []
        return cls(SCHEMA.validate(frame, classes=classes, path=path), list(classes), dict(meta or {}))

    @property
    def synthetic(self) -> bool:
        return bool(self.meta.get("synthetic", False))

    def write(self, path: str | Path) -> None:
        """Write the corpus as one Parquet file (atomically), its classes and meta in the file's metadata."""
        table = pa.Table.from_pandas(self.frame, preserve_index=False)
        info = {"classes": self.classes, **self.meta}
        table = table.replace_schema_metadata(
            {**(table.schema.metadata or {}), METADATA_KEY: json.dumps(info).encode()}
        )
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)

    @classmethod
    def read(cls, path: str | Path) -> Corpus:
        """A corpus Parquet file (`mhaudit data import --out`); a missing or unreadable one is an InputError."""
        path = Path(path)
        if not path.exists():
            raise InputError("no such file; expected a corpus Parquet file (mhaudit data import --out ...)", path=path)
        try:
            table = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise unreadable_corpus(path, exc) from None
        info = json.loads((table.schema.metadata or {}).get(METADATA_KEY, b"{}"))
        classes = info.pop("classes", None)
        return cls.build(table.to_pandas(), classes, meta=info, path=path)


def merge_corpora(paths: list) -> Corpus:
    """Read corpora and join them into one table; classes must match in order, ids must stay unique."""
    corpora = [Corpus.read(p) for p in paths]
    for path, corpus in zip(paths[1:], corpora[1:]):
        if corpus.classes != corpora[0].classes:
            raise InputError(
                f"classes {corpus.classes} differ from {corpora[0].classes} in {paths[0]}; "
                "import both with mappings to the same classes",
                path=path,
            )
    if len(corpora) == 1:
        return corpora[0]
    meta = {
        "synthetic": any(c.synthetic for c in corpora),
        "mapping": " | ".join(dict.fromkeys(c.meta.get("mapping", "?") for c in corpora)),
    }
    frames = [c.frame.assign(_file=str(p), _row=range(1, len(c.frame) + 1)) for p, c in zip(paths, corpora)]
    checked = SCHEMA.validate(pd.concat(frames, ignore_index=True), classes=corpora[0].classes)  # errors name the input
    return Corpus(checked, corpora[0].classes, meta)


def read_corpus(path: str | Path) -> Corpus:
    """A corpus Parquet file (written by `mhaudit data import` or `Corpus.write`), validated."""
    return Corpus.read(path)
