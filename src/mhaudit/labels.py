"""The labels table: many labels per item, one writer per labeler (docs/labels.md).

Columns: item_id, task, labeler, kind (llm | human | adjudicated | lexicon), value (0/1, or null when the
labeler's answer was invalid), raw_answer, prompt_hash, latency_ms, tags (JSON list), note, created_at.

`LabelStore` keeps the table in one SQLite file (WAL) so that labelers can write one item at a time and
resume: (item_id, task, labeler) is the key, and every `add` is its own transaction, so an interrupted
run loses nothing it already wrote. `read_labels` / `write_labels` move the table to and from Parquet,
CSV and JSONL for teams that label elsewhere.
"""

from __future__ import annotations

import json
import numbers
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from mhaudit.errors import InputError
from mhaudit.io import atomic_path

KINDS = ("llm", "human", "adjudicated", "lexicon")
KEY = ("item_id", "task", "labeler")
COLUMNS = (*KEY, "kind", "value", "raw_answer", "prompt_hash", "latency_ms", "tags", "note", "created_at")
APPLICATION_ID = 0x6D68_6C31  # "mhl1": marks a file as an mhaudit label store
SQLITE_MAGIC = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE labels (
    item_id TEXT NOT NULL,
    task TEXT NOT NULL,
    labeler TEXT NOT NULL,         -- model name, annotator name, 'consensus', lexicon name
    kind TEXT NOT NULL CHECK (kind IN ('llm', 'human', 'adjudicated', 'lexicon')),
    value INTEGER CHECK (value IN (0, 1)),  -- NULL: the answer was not exactly 0 or 1 (see raw_answer)
    raw_answer TEXT,
    prompt_hash TEXT,
    latency_ms REAL,
    tags TEXT,                     -- JSON list of error-source tags
    note TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (item_id, task, labeler)
) WITHOUT ROWID;
"""


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _check_value(value: object, where: str) -> int | None:
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NA:
        return None
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return int(value.strip())
    if isinstance(value, numbers.Real) and float(value) in (0.0, 1.0):
        return int(value)
    raise InputError(f"{where}: label value {value!r} is not 0, 1 or empty")


def _row(label: Mapping[str, object], where: str) -> tuple:
    for column in (*KEY, "kind"):
        if label.get(column) is None or str(label[column]) == "":
            raise InputError(f"{where}: column '{column}' is empty")
    if label["kind"] not in KINDS:
        raise InputError(f"{where}: kind {label['kind']!r} is not one of {', '.join(KINDS)}")
    tags = label.get("tags")
    if tags is not None and not isinstance(tags, str):
        tags = json.dumps(list(tags))
    latency = label.get("latency_ms")
    return (str(label["item_id"]), str(label["task"]), str(label["labeler"]), label["kind"],
            _check_value(label.get("value"), where), label.get("raw_answer"), label.get("prompt_hash"),
            None if latency is None or pd.isna(latency) else float(latency), tags, label.get("note"),
            str(label.get("created_at") or now()))


class LabelStore:
    """The labels table in one SQLite file; safe to share between threads of one process."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if self.path.exists() and self.path.stat().st_size:
            with open(self.path, "rb") as handle:
                if handle.read(16) != SQLITE_MAGIC:
                    raise InputError("not a label store (not an SQLite file)", path=self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(self.path, timeout=10, check_same_thread=False, isolation_level=None)
            app_id = self._conn.execute("PRAGMA application_id").fetchone()[0]
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not tables:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.executescript(f"BEGIN; {_SCHEMA} PRAGMA application_id={APPLICATION_ID}; COMMIT;")
            elif app_id != APPLICATION_ID or "labels" not in tables:
                raise InputError("is an SQLite file but not an mhaudit label store", path=self.path)
            self._conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            raise InputError(f"cannot open the label store ({exc}); is it locked by another process "
                             "or corrupt?", path=self.path) from None

    def add(self, labels: Iterable[Mapping[str, object]], *, replace: bool = False) -> int:
        """Write labels in one transaction; an existing (item, task, labeler) label is kept unless `replace`.

        Returns the number of rows written.
        """
        rows = [_row(label, f"{self.path} label {i + 1}") for i, label in enumerate(labels)]
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                before = self._conn.total_changes
                self._conn.executemany(f"{verb} INTO labels VALUES ({', '.join('?' * len(COLUMNS))})", rows)
                written = self._conn.total_changes - before
                self._conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise InputError(f"cannot write labels ({exc}); is the file locked by another process?",
                                 path=self.path) from None
        return written

    def labelled(self, task: str, labeler: str) -> set[str]:
        """Items that already carry a label (valid or invalid) from this labeler for this task."""
        with self._lock:
            rows = self._conn.execute("SELECT item_id FROM labels WHERE task = ? AND labeler = ?", (task, labeler))
            return {r[0] for r in rows}

    def frame(self, **where: str) -> pd.DataFrame:
        """The labels as a table, filtered by equality on any columns (task=..., labeler=..., kind=...)."""
        unknown = set(where) - set(COLUMNS)
        if unknown:
            raise ValueError(f"unknown label columns: {sorted(unknown)}")
        clause = " AND ".join(f"{column} = ?" for column in where) or "1"
        with self._lock:
            frame = pd.read_sql_query(f"SELECT * FROM labels WHERE {clause} ORDER BY task, labeler, item_id",
                                      self._conn, params=list(where.values()))
        frame["value"] = frame["value"].astype("Int64")
        return frame

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> LabelStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_labels(path: str | Path) -> pd.DataFrame:
    """A labels table from a label store, Parquet, CSV or JSONL file, validated row by row."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", path=path)
    suffix = path.suffix.lower()
    if suffix in (".sqlite", ".db", ".sqlite3"):
        with LabelStore(path) as store:
            return store.frame()
    try:
        if suffix == ".parquet":
            frame = pd.read_parquet(path)
        elif suffix == ".csv":
            frame = pd.read_csv(path, dtype={"item_id": str}, keep_default_na=True)
        elif suffix in (".jsonl", ".ndjson"):
            frame = pd.read_json(path, lines=True, dtype=False)
        else:
            raise InputError(f"unknown label file type '{suffix}'; expected .sqlite, .parquet, .csv or .jsonl",
                             path=path)
    except (ValueError, OSError) as exc:
        raise InputError(f"cannot read labels ({exc})", path=path) from None
    missing = [c for c in (*KEY, "kind", "value") if c not in frame.columns]
    if missing:
        raise InputError(f"missing column '{missing[0]}'; a labels table needs {', '.join((*KEY, 'kind', 'value'))}",
                         path=path)
    rows = [_row({k: (None if not isinstance(v, (list, tuple)) and pd.isna(v) else v) for k, v in record.items()},
                 f"{path} row {i + 2 if suffix == '.csv' else i + 1}")
            for i, record in enumerate(frame.to_dict("records"))]
    result = pd.DataFrame(rows, columns=list(COLUMNS))
    result["value"] = result["value"].astype("Int64")
    duplicated = result.duplicated(list(KEY))
    if duplicated.any():
        first = result[duplicated].iloc[0]
        raise InputError(f"item '{first['item_id']}' has two labels from '{first['labeler']}' for task "
                         f"'{first['task']}'; one labeler writes one label per item", path=path)
    return result


def write_labels(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write a labels table atomically as Parquet, CSV or JSONL (by suffix)."""
    path = Path(path)
    suffix = path.suffix.lower()
    frame = frame.loc[:, [c for c in COLUMNS if c in frame.columns]]
    with atomic_path(path) as tmp:
        if suffix == ".parquet":
            frame.to_parquet(tmp, index=False)
        elif suffix == ".csv":
            frame.to_csv(tmp, index=False)
        elif suffix in (".jsonl", ".ndjson"):
            frame.to_json(tmp, orient="records", lines=True, force_ascii=False)
        else:
            raise InputError(f"unknown label file type '{suffix}'; expected .parquet, .csv or .jsonl", path=path)
    return path
