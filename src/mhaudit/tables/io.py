"""File input and output shared by the commands.

* `atomic_path` / `write_text_atomic`: write to a temporary name in the same folder, then rename, so a
  crash or a validation error never leaves a half-written file under the final name.
* `read_table` / `write_table`: one table (labels, a validation sample, an items table, a sheet) as
  Parquet, CSV, TSV or JSONL, chosen by the file's suffix. One rule for every reader:

  - only an empty cell (CSV/TSV) or a JSON ``null`` (JSONL) is missing; the strings "NA", "null",
    "None", "nan" are text like any other (an item called "NA" stays "NA");
  - CSV/TSV cells are read as text (the caller converts the columns it needs as numbers); JSONL values
    keep their JSON types; Parquet columns their stored types;
  - id columns (`id`, `item_id`, `sample_id`) are strings whatever the format ("007" stays "007");
  - an unknown suffix, a missing or unreadable file is an `InputError` naming the file.

  `write_table` writes atomically; in CSV/TSV a list cell (tags) is written as a JSON list, in JSONL
  every value keeps its full precision.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mhaudit.core.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

TABLE_SUFFIXES = {".parquet": "parquet", ".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
ID_COLUMNS = ("id", "item_id", "sample_id")
_EXPECTED = ".parquet, .csv, .tsv or .jsonl"


@contextlib.contextmanager
def atomic_path(final: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `final`; rename it over `final` only if the block succeeds."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".part", dir=final.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, final)
    finally:
        tmp_path.unlink(missing_ok=True)


def write_text_atomic(final: str | os.PathLike, text: str) -> None:
    with atomic_path(final) as tmp:
        tmp.write_text(text, encoding="utf-8")


def is_missing(value: object) -> bool:
    """None, NaN, pd.NA or NaT; a list, tuple, array or dict is never missing (it may be empty)."""
    if value is None:
        return True
    if isinstance(value, (str, bytes, list, tuple, dict, set)):
        return False
    if isinstance(value, float):
        return math.isnan(value)
    import pandas as pd

    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # an array-like: not a single missing value
        return False


def table_format(path: str | os.PathLike, what: str = "table") -> str:
    """'parquet', 'csv', 'tsv' or 'jsonl' from the suffix; an InputError for any other suffix."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise InputError(f"unknown file type '{suffix}' for {what}; expected {_EXPECTED}", path=path)
    return TABLE_SUFFIXES[suffix]


def _read_jsonl(path: Path, what: str) -> pd.DataFrame:
    import pandas as pd

    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise InputError(f"line {number} of {what} is not JSON ({exc})", path=path) from None
            if not isinstance(record, dict):
                raise InputError(f"line {number} of {what} is not a JSON object", path=path)
            records.append(record)
    return pd.DataFrame.from_records(records) if records else pd.DataFrame()


def _id_text(value: object) -> object:
    if is_missing(value) or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():  # an integer id column with gaps, read as floats
        return str(int(value))
    return str(value)


def read_table(path: str | os.PathLike, *, what: str = "the table",
               ids: Sequence[str] = ID_COLUMNS) -> pd.DataFrame:
    """A table from Parquet, CSV, TSV or JSONL (by suffix), read by the rules in the module docstring.

    `what` names the table in error messages ("the labels", "the validation set"); `ids`: the columns
    read as strings.
    """
    import pandas as pd

    path = Path(path)
    kind = table_format(path, what)
    if not path.exists():
        raise InputError("no such file", path=path)
    try:
        if kind == "parquet":
            frame = pd.read_parquet(path)
        elif kind == "jsonl":
            frame = _read_jsonl(path, what)
        else:
            frame = pd.read_csv(path, sep="\t" if kind == "tsv" else ",", dtype=str, keep_default_na=False,
                                na_values=[""])
    except InputError:
        raise
    except pd.errors.EmptyDataError:
        frame = pd.DataFrame()
    except (ValueError, OSError, ImportError) as exc:  # ArrowInvalid, ParserError, UnicodeDecodeError are ValueErrors
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot read {what} ({message})", path=path) from None
    for column in ids:
        if column in frame.columns:
            frame[column] = frame[column].map(_id_text).astype(object)
    return frame


def _json_value(value: object) -> object:
    import numpy as np
    import pandas as pd

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (pd.Timestamp, np.datetime64)):
        return pd.Timestamp(value).isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _cell(value: object) -> object:
    """A cell as JSON wants it: missing -> None, arrays -> lists."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.tolist()
    return None if is_missing(value) else value


def write_table(frame: pd.DataFrame, path: str | os.PathLike, *, what: str = "the table") -> Path:
    """Write a table atomically as Parquet, CSV, TSV or JSONL (by suffix); returns the path."""
    path = Path(path)
    kind = table_format(path, what)
    with atomic_path(path) as tmp:
        if kind == "parquet":
            frame.to_parquet(tmp, index=False)
        elif kind == "jsonl":
            with open(tmp, "w", encoding="utf-8") as handle:
                columns = [str(c) for c in frame.columns]
                for row in frame.itertuples(index=False, name=None):
                    record = {c: _cell(v) for c, v in zip(columns, row, strict=True)}
                    handle.write(json.dumps(record, ensure_ascii=False, default=_json_value) + "\n")
        else:  # a list cell (tags) as a JSON list, never as Python's repr
            import numpy as np

            def as_text(value: object) -> object:
                if isinstance(value, (list, tuple, dict, np.ndarray)):
                    return json.dumps(_cell(value), ensure_ascii=False, default=_json_value)
                return value

            out = frame.copy()
            for column in out.columns:
                if out[column].dtype == object:
                    out[column] = out[column].map(as_text)
            out.to_csv(tmp, index=False, sep="\t" if kind == "tsv" else ",")
    return path
