"""Reading and writing tables: the one `read_table` / `write_table` pair, and atomic writes.

* `atomic_path` / `write_text_atomic`: write to a temporary name in the same folder, then rename, so a
  crash or a validation error never leaves a half-written file under the final name; a full disk or a
  read-only folder is one sentence (`OutputError`) and leaves the earlier file as it was.
  `write_files_atomic`: several files, none renamed until all are written (a report). They live in
  `tables.atomic_files` and are imported from here.
* `read_table` / `write_table`: one table as Parquet, CSV, TSV or JSONL, by the file's suffix (or `sep`), with one
  rule for every reader (docs/cli.md, "Reading tables": only an empty cell or a JSON null is missing, CSV cells are
  text, ids are strings, every fault one `InputError` naming the file). `place=True` adds `_file` and `_row` (the
  1-based data row), so later checks can name the row.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mhaudit.core.errors import InputError, first_line
from mhaudit.tables.atomic_files import (  # re-exported ("x as x"): callers import the atomic writes from here
    atomic_path as atomic_path,
    current_umask as current_umask,
    write_files_atomic as write_files_atomic,
    write_text_atomic as write_text_atomic,
)

if TYPE_CHECKING:
    import pandas as pd

TABLE_SUFFIXES = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
}
ID_COLUMNS = ("id", "item_id", "sample_id")
SOURCE_FILE, SOURCE_ROW = "_file", "_row"  # where each row came from, for messages that name the row
_EXPECTED = ".parquet, .csv, .tsv or .jsonl"
_SEPARATORS = {"csv": ",", "tsv": "\t"}


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
        raise InputError(
            f"unknown file type '{suffix}' for {what}; expected {_EXPECTED} (or pass --sep for another delimited file)",
            path=path,
        )
    return TABLE_SUFFIXES[suffix]


def require_file(path: Path) -> Path:
    if not path.exists():
        raise InputError("no such file", path=path)
    if path.is_dir():
        raise InputError("is a folder; expected a file", path=path)
    return path


def require_columns(
    frame: pd.DataFrame,
    required: Sequence[str],
    path: object = None,
    *,
    sep: str | None = None,
    argument: str | None = None,
) -> None:
    """Raise InputError naming the file (or, for a DataFrame passed in Python, the argument), the missing
    column(s) and the columns found."""
    missing = [c for c in required if c not in frame.columns]
    if not missing:
        return
    hint = ""
    if sep is not None and len(frame.columns) == 1:
        only = str(frame.columns[0])
        other = next((d for d in (";", "\t", ",", "|") if d != sep and d in only), None)
        if other:
            hint = f"; the header is one column '{only[:60]}', is the delimiter {other!r}?"
    where = f"argument '{argument}': " if argument else ""
    raise InputError(
        f"{where}missing column(s) {', '.join(missing)}; found {', '.join(map(str, frame.columns))}{hint}", path=path
    )


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


def read_delimited(
    path: Path,
    *,
    sep: str,
    encoding: str = "utf-8",
    header: bool = True,
    names: list[str] | None = None,
    required: Sequence[str] = (),
    quoting: int = csv.QUOTE_MINIMAL,
) -> pd.DataFrame:
    """A CSV/TSV (or any `sep`) as text cells, only empty cells missing; see `read_table`."""
    import pandas as pd

    require_file(path)
    try:
        frame = pd.read_csv(
            path,
            sep=sep,
            header=0 if header else None,
            names=names,
            dtype=str,
            keep_default_na=False,
            na_values=[""],
            encoding=encoding,
            quoting=quoting,
        )
    except UnicodeDecodeError as exc:
        raise InputError(
            f"bytes at {_decode_error_place(path, encoding, exc)} are not valid {encoding}; "
            f"pass --encoding with the file's real encoding (e.g. --encoding {_suggest(path)})",
            path=path,
        ) from None
    except pd.errors.EmptyDataError:  # not even a header: an error only where columns are required
        if required:
            raise InputError("the file is empty; expected a header and data rows", path=path) from None
        return pd.DataFrame()
    except pd.errors.ParserError as exc:
        raise InputError(
            f"cannot be parsed as '{sep}'-separated text ({str(exc).strip()}); check the delimiter and quoting",
            path=path,
        ) from None
    except LookupError:
        raise InputError(f"unknown encoding '{encoding}'", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror or exc})", path=path) from None
    require_columns(frame, required, path, sep=sep)
    return frame


def _read_jsonl(path: Path, encoding: str, what: str) -> pd.DataFrame:
    """One JSON object per line (blank lines skipped); values keep their JSON types, nothing is converted."""
    import pandas as pd

    records = []
    if path.suffix.lower() == ".json" and (array := _json_array(path, encoding)) is not None:
        return pd.DataFrame.from_records(array) if array else pd.DataFrame()
    try:
        with open(path, encoding=encoding) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(
                        f"line {number} of {what} is not valid JSON ({exc.msg}); expected JSON Lines, "
                        "one object per line",
                        path=path,
                    ) from None
                if not isinstance(record, dict):
                    raise InputError(
                        f"line {number} of {what} is not a JSON object; expected JSON Lines, one object per line",
                        path=path,
                    )
                records.append(record)
    except UnicodeDecodeError:
        raise InputError(f"is not valid {encoding}; pass --encoding with the file's real encoding", path=path) from None
    except LookupError:
        raise InputError(f"unknown encoding '{encoding}'", path=path) from None
    return pd.DataFrame.from_records(records) if records else pd.DataFrame()


def _json_array(path: Path, encoding: str) -> list[dict] | None:
    """A `.json` file that holds one array of objects (as many tools export a table), else None (JSON Lines)."""
    try:
        text = path.read_text(encoding=encoding)
    except (UnicodeDecodeError, LookupError):
        return None  # reported by the JSON Lines reader, which names the encoding
    if not text.lstrip().startswith("["):
        return None
    try:
        array = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"is not valid JSON (line {exc.lineno}: {exc.msg}); expected an array of objects or JSON Lines", path=path
        ) from None
    bad = next((i for i, item in enumerate(array, start=1) if not isinstance(item, dict)), None)
    if bad is not None:
        raise InputError(f"item {bad} of the JSON array is not an object; expected one object per row", path=path)
    return array


def parquet_problem(exc: BaseException) -> str:
    """pyarrow's reason a Parquet file cannot be read, as one clause (without the path it repeats)."""
    text = re.sub(r"^Could not open Parquet input source '.*?': ", "", first_line(exc))
    if "magic bytes not found" in text:  # also what a file cut short (a copy stopped half-way) gives
        return "no Parquet footer: the file was cut short, or is not Parquet"
    return text.rstrip(".")


def _read_parquet(path: Path, what: str) -> pd.DataFrame:
    import pandas as pd

    try:
        return pd.read_parquet(path)
    except (ValueError, OSError, ImportError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise InputError(f"cannot read {what} ({parquet_problem(exc)})", path=path) from None


def _id_text(value: object) -> object:
    if is_missing(value) or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():  # an integer id column with gaps, read as floats
        return str(int(value))
    return str(value)


def read_table(
    path: str | os.PathLike,
    *,
    what: str = "the table",
    required: Sequence[str] = (),
    encoding: str = "utf-8",
    sep: str | None = None,
    place: bool = False,
) -> pd.DataFrame:
    """A table from Parquet, CSV, TSV or JSONL, read by the rules in the module docstring.

    `what` names the table in error messages ("the labels", "the validation set"); `required`: columns
    that must be there; `sep`: a delimiter that overrides the suffix; `place`: add `_file` / `_row`.
    """
    path = Path(path)
    kind = "delimited" if sep else table_format(path, what)
    require_file(path)
    if kind == "parquet":
        frame = _read_parquet(path, what)
    elif kind == "jsonl":
        frame = _read_jsonl(path, encoding, what)
        if frame.empty and required:
            raise InputError("the file is empty; expected one JSON object per line", path=path)
    else:
        frame = read_delimited(path, sep=sep or _SEPARATORS[kind], encoding=encoding, required=required)
    require_columns(frame, required, path)
    for column in ID_COLUMNS:
        if column in frame.columns:
            frame[column] = frame[column].map(_id_text).astype(object)
    return with_place(frame, path) if place else frame


def with_place(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Add `_file` and `_row` (1-based data row of the file) to a freshly read table."""
    frame[SOURCE_FILE], frame[SOURCE_ROW] = str(path), range(1, len(frame) + 1)
    return frame


def text_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose list cells (tags) are JSON lists, never Python's repr, as CSV and TSV hold them."""
    import numpy as np

    def as_text(value: object) -> object:
        if isinstance(value, (list, tuple, dict, np.ndarray)):
            return json.dumps(value, ensure_ascii=False, default=_json_value)
        return value

    out = frame.copy()
    for column in out.columns[out.dtypes.eq(object)]:
        out[column] = out[column].map(as_text)
    return out


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
    """A cell as JSON wants it: missing -> None; an array (never missing) `_json_value` writes as a list."""
    import numpy as np

    return value if isinstance(value, np.ndarray) or not is_missing(value) else None


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
        else:
            text_cells(frame).to_csv(tmp, index=False, sep="\t" if kind == "tsv" else ",")
    return path
