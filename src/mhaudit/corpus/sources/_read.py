"""Reading delimited files with one clear sentence for every way they go wrong."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from mhaudit.corpus.schema import SOURCE_FILE, SOURCE_ROW
from mhaudit.errors import InputError


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
                         "pass --encoding with the file's real encoding (e.g. --encoding cp1252)",
                         path=path) from None
    except pd.errors.EmptyDataError:
        raise InputError("the file is empty; expected a header and data rows", path=path) from None
    except pd.errors.ParserError as exc:
        raise InputError(f"cannot be parsed as '{sep}'-separated text ({str(exc).strip()}); "
                         "check the delimiter and quoting", path=path) from None
    except LookupError:
        raise InputError(f"unknown encoding '{encoding}'", path=path) from None
    if required:
        missing = [c for c in required if c not in frame.columns]
        if missing:
            hint = ""
            if len(frame.columns) == 1:
                only = str(frame.columns[0])
                other = next((d for d in (";", "\t", ",", "|") if d != sep and d in only), None)
                if other:
                    hint = f"; the header is one column '{only[:60]}', is the delimiter {other!r}?"
            raise InputError(f"missing column(s) {', '.join(missing)}; found {', '.join(map(str, frame.columns))}"
                             f"{hint}", path=path)
    frame[SOURCE_FILE] = str(path)
    frame[SOURCE_ROW] = range(1, len(frame) + 1)
    return frame


def records(frame: pd.DataFrame, *, ids, texts, labels, dataset: str, platform: str, label_source: str,
            split: str | None, **optional) -> pd.DataFrame:
    """Assemble raw records from columns of `frame` (labels: one raw label per row, or lists)."""
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
