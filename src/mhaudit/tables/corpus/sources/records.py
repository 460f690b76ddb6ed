"""Reading delimited files with one clear sentence for every way they go wrong."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.tables.corpus.schema import SOURCE_FILE, SOURCE_ROW
from mhaudit.core.errors import InputError


def require_file(path: Path) -> Path:
    if not path.exists():
        raise InputError("no such file", path=path)
    if path.is_dir():
        raise InputError("is a folder; expected a file", path=path)
    return path


def _decode_error_place(path: Path, encoding: str, exc: UnicodeDecodeError) -> str:
    """Line number of the first undecodable byte (counted in the raw bytes)."""
    data = path.read_bytes()
    try:
        data.decode(encoding)
    except UnicodeDecodeError as first:
        line = data[: first.start].count(b"\n") + 1
        return f"line {line} (byte {first.start})"
    return f"byte {exc.start}"


def _suggest(path: Path) -> str:
    """cp1252 where it decodes the whole file, else latin-1 (cp1252 leaves 0x81 0x8D 0x8F 0x90 0x9D undefined;
    latin-1 decodes every byte, so a mixed UTF-8/cp1252 file reads, with mojibake in its UTF-8 parts)."""
    try:
        path.read_bytes().decode("cp1252")
    except UnicodeDecodeError:
        return "latin-1"
    return "cp1252"


def read_delimited(path: Path, *, sep: str, encoding: str = "utf-8", header: bool = True,
                   names: list[str] | None = None, required: list[str] | None = None,
                   quoting: int = csv.QUOTE_MINIMAL) -> pd.DataFrame:
    """Read a CSV/TSV as strings. Adds `_file` and `_row` (1-based data row, header not counted)."""
    require_file(path)
    try:
        frame = pd.read_csv(path, sep=sep, header=0 if header else None, names=names, dtype=str,
                            keep_default_na=False, encoding=encoding, quoting=quoting)
    except UnicodeDecodeError as exc:
        raise InputError(f"bytes at {_decode_error_place(path, encoding, exc)} are not valid {encoding}; "
                         f"pass --encoding with the file's real encoding (e.g. --encoding {_suggest(path)})",
                         path=path) from None
    except pd.errors.EmptyDataError:
        raise InputError("the file is empty; expected a header and data rows", path=path) from None
    except pd.errors.ParserError as exc:
        raise InputError(f"cannot be parsed as '{sep}'-separated text ({str(exc).strip()}); "
                         "check the delimiter and quoting", path=path) from None
    except LookupError:
        raise InputError(f"unknown encoding '{encoding}'", path=path) from None
    require_columns(frame, required or [], path, sep=sep)
    return _place(frame, path)


def require_columns(frame: pd.DataFrame, required: list[str], path: Path, *, sep: str | None = None) -> None:
    """Raise InputError naming the file, the missing column(s) and the columns found."""
    missing = [c for c in required if c not in frame.columns]
    if not missing:
        return
    hint = ""
    if sep is not None and len(frame.columns) == 1:
        only = str(frame.columns[0])
        other = next((d for d in (";", "\t", ",", "|") if d != sep and d in only), None)
        if other:
            hint = f"; the header is one column '{only[:60]}', is the delimiter {other!r}?"
    raise InputError(f"missing column(s) {', '.join(missing)}; found {', '.join(map(str, frame.columns))}"
                     f"{hint}", path=path)


def _place(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    frame[SOURCE_FILE] = str(path)
    frame[SOURCE_ROW] = range(1, len(frame) + 1)
    return frame


def records(frame: pd.DataFrame, *, ids, texts, labels, dataset: str | list, platform: str | list,
            label_source: str | list, split: str | list | None, **optional) -> pd.DataFrame:
    """Assemble raw records from columns of `frame` (labels: one raw label per row, or lists).
    dataset / platform / label_source / split: one value for every row, or a list with one per row."""
    out = pd.DataFrame({
        "id": list(ids),
        "text": list(texts),
        "raw_labels": [lab if isinstance(lab, list) else [str(lab)] for lab in labels],
        "dataset": dataset,
        "platform": platform,
        "label_source": label_source,
        "split": split,
        SOURCE_FILE: frame[SOURCE_FILE].to_numpy(),
        SOURCE_ROW: frame[SOURCE_ROW].to_numpy(),
    })
    for name, values in optional.items():
        out[name] = list(values)
    return out


# --- shared by several importers ----------------------------------------------------------------------

_FORMATS = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
            ".parquet": "parquet", ".pq": "parquet"}


def read_table(path: Path, *, encoding: str = "utf-8", sep: str | None = None,
               required: list[str] | None = None) -> pd.DataFrame:
    """A CSV / TSV / JSON Lines / Parquet file, the format from `sep` or else the extension.

    Delimited files come back as strings (read_delimited); JSON Lines and Parquet keep their types (lists
    stay lists). Adds `_file`/`_row` like read_delimited.
    """
    require_file(path)
    fmt = sep or _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"cannot tell the format from the extension '{path.suffix}'; expected .csv, .tsv, "
                         ".jsonl or .parquet (or pass --sep for another delimited file)", path=path)
    if fmt not in ("jsonl", "parquet"):
        return read_delimited(path, sep=fmt, encoding=encoding, required=required)
    if fmt == "jsonl":
        frame = _read_jsonl(path, encoding)
    else:
        try:
            frame = pd.read_parquet(path)
        except (ValueError, OSError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise InputError(f"cannot be read as Parquet ({str(exc).strip().splitlines()[0]})", path=path) from None
    require_columns(frame, required or [], path)
    return _place(frame, path)


def _read_jsonl(path: Path, encoding: str) -> pd.DataFrame:
    """One JSON object per line (blank lines skipped); values keep their JSON types, nothing is converted."""
    rows = []
    try:
        with path.open(encoding=encoding) as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"line {number} is not valid JSON ({exc.msg}); expected JSON Lines, one "
                                     "object per line", path=path) from None
                if not isinstance(row, dict):
                    raise InputError(f"line {number} is not a JSON object; expected JSON Lines, one object per "
                                     "line", path=path)
                rows.append(row)
    except UnicodeDecodeError:
        raise InputError(f"is not valid {encoding}; pass --encoding with the file's real encoding",
                         path=path) from None
    except LookupError:
        raise InputError(f"unknown encoding '{encoding}'", path=path) from None
    if not rows:
        raise InputError("the file is empty; expected one JSON object per line", path=path)
    return pd.DataFrame.from_records(rows)


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


def is_absent(value: object) -> bool:
    """True for None / NaN / NA (an absent cell), False for anything else, lists included."""
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def as_text(values) -> list:
    """Cell values as strings, otherwise as they are; absent cells stay None (the empty-text check names them)."""
    return [None if is_absent(v) else v if isinstance(v, str) else str(v) for v in values]


def as_labels(values) -> list:
    """One raw label (a string) per row, or a list of them where a cell holds a list (JSON Lines / Parquet)."""
    return [[str(x) for x in v] if isinstance(v, (list, tuple, np.ndarray))
            else "" if is_absent(v) else str(v) for v in values]


def parse_times(frame: pd.DataFrame, column: str) -> pd.Series:
    """Timestamps (UTC) from ISO 8601 text; empty cells become NaT; anything else is an InputError."""
    text = pd.Series(as_text(frame[column]), index=frame.index).replace("", None)
    times = pd.to_datetime(text, utc=True, format="ISO8601", errors="coerce")
    bad = text.notna() & times.isna()
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise InputError(f"row {frame[SOURCE_ROW].iat[i]}: column '{column}' value {text.iat[i]!r} is not an "
                         f"ISO 8601 date/time ({int(bad.sum())} such rows)", path=frame[SOURCE_FILE].iat[i])
    return times
