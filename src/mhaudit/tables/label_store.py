"""The labels table: many labels per item, one writer per labeler (docs/labels.md lists the columns).

`LabelStore` keeps the table in one SQLite file (WAL) so that labelers can write one item at a time and
resume: (item_id, task, labeler) is the key, and every `add` is its own transaction, so an interrupted
run loses nothing it already wrote. Label files may also hold kind `model` (a classifier's predicted labels). A
`combined` labeler (weak_supervision.combine) also writes `probability`, its label model's probability of class 1.
"""

from __future__ import annotations

import ast
import contextlib
import json
import numbers
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.store_versions import migrate_sqlite
from mhaudit.tables.io import TABLE_SUFFIXES, is_missing, read_table, require_file, write_table

STORE_KINDS = ("llm", "human", "adjudicated", "lexicon", "combined")  # what the labelers write to the store
KINDS = (*STORE_KINDS, "model")  # label files may also hold a classifier's predicted labels
KEY = ("item_id", "task", "labeler")
COLUMNS = (*KEY, "kind", "value", "raw_answer", "prompt_hash", "latency_ms", "tags", "note", "created_at")
OPTIONAL_COLUMNS = ("probability",)  # a label file without it reads as null there; written only where one is set
ALL_COLUMNS = (*COLUMNS, *OPTIONAL_COLUMNS)  # the store's columns in order (a version 1 store lacks the last)
APPLICATION_ID = 0x6D68_6C31  # "mhl1": marks a file as an mhaudit label store
# PRAGMA user_version. 0: the same table, written before label stores were stamped (9b679af to 2b85693), so its
# step to 1 only stamps it (after a backup copy, core.store_versions). 1 -> 2: kind 'combined' and the column
# `probability`; SQLite cannot change a CHECK constraint in place, so the table is rebuilt with every row.
SCHEMA_VERSION = 2
SQLITE_MAGIC = b"SQLite format 3\x00"
STORE_SUFFIXES = (".sqlite", ".db", ".sqlite3")
TAG_SEPARATOR = ";"

_SCHEMA = """
CREATE TABLE labels (
    item_id TEXT NOT NULL,
    task TEXT NOT NULL,
    labeler TEXT NOT NULL,         -- model name, annotator name, 'consensus', lexicon name
    kind TEXT NOT NULL CHECK (kind IN ('llm', 'human', 'adjudicated', 'lexicon', 'combined')),
    value INTEGER CHECK (value IN (0, 1)),  -- NULL: the answer was not exactly 0 or 1 (see raw_answer)
    raw_answer TEXT,
    prompt_hash TEXT,
    latency_ms REAL,
    tags TEXT,                     -- JSON list of error-source tags
    note TEXT,
    created_at TEXT NOT NULL,
    probability REAL CHECK (probability IS NULL OR (probability >= 0 AND probability <= 1)),  -- P(class 1), combined
    PRIMARY KEY (item_id, task, labeler)
) WITHOUT ROWID;
"""


def _rebuild_with_probability(conn: sqlite3.Connection) -> None:
    """Version 1 -> 2, inside the migration's transaction: the table made anew (kind 'combined' allowed, the column
    `probability`), every row copied with a null probability."""
    old = ", ".join(COLUMNS)
    conn.execute("ALTER TABLE labels RENAME TO labels_v1")
    conn.execute(_SCHEMA)
    conn.execute(f"INSERT INTO labels ({old}) SELECT {old} FROM labels_v1")
    conn.execute("DROP TABLE labels_v1")


MIGRATIONS = {0: lambda conn: None, 1: _rebuild_with_probability}


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def check_label_value(value: object, where: str) -> int | None:
    """0 or 1 (also '1', '1.0' and 1.0 as spreadsheets write them), None for an empty value."""
    if is_missing(value) or (isinstance(value, str) and not value.strip()):
        return None
    number = value
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value)  # float() ignores the spaces around the number
    if isinstance(number, numbers.Real) and float(number) in (0.0, 1.0):
        return int(float(number))
    raise InputError(f"{where}: label value {value!r} is not 0, 1 or empty")


def check_probability(value: object, where: str) -> float | None:
    """A probability of class 1 in [0, 1], None for an empty value."""
    if is_missing(value) or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]  # a str or a number; anything else is the error below
    except (TypeError, ValueError):
        number = float("nan")
    if not 0.0 <= number <= 1.0:
        raise InputError(f"{where}: probability {value!r} is not a number between 0 and 1")
    return number


def parse_tags(raw: object) -> tuple[str, ...]:
    """Error-source tags from any way a table holds them; the one parser for the labels table's `tags`.

    * missing (None, NaN, an empty string) -> no tags;
    * a list, tuple or NumPy array (a Parquet list column) -> its elements;
    * a string holding a JSON list (what mhaudit writes: '["news", "hypothetical"]') or a JSON string;
    * a Python-style list ("['news']", as a CSV written from a list column shows it) -> its elements;
    * any other string: tags separated by ';' ("news; hypothetical"). A comma belongs to the tag, so a
      tag written this way can contain ',' but never ';' (in a JSON list any character is allowed).

    Tags are stripped; empty and repeated tags are dropped; the order is kept.
    """
    if isinstance(raw, (list, tuple, np.ndarray)):
        items = list(raw)
    elif is_missing(raw):
        return ()
    else:
        text = str(raw).strip()
        if not text:
            return ()
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
            if text.startswith("[") and text.endswith("]"):
                with contextlib.suppress(ValueError, SyntaxError):
                    parsed = ast.literal_eval(text)
            if not isinstance(parsed, list):
                parsed = text.split(TAG_SEPARATOR)
        items = parsed if isinstance(parsed, list) else [] if parsed is None else [parsed]
    tags = (str(t).strip() for t in items if not is_missing(t))
    return tuple(dict.fromkeys(t for t in tags if t))


def _tags_json(raw: object) -> str | None:
    """The stored form of tags: a JSON list ('[]' for an explicitly empty list), None when absent."""
    if not isinstance(raw, (list, tuple, np.ndarray)) and (is_missing(raw) or not str(raw).strip()):
        return None
    return json.dumps(list(parse_tags(raw)))


def _text(value: object) -> str | None:
    return None if is_missing(value) else str(value)


def _row(label: Mapping, where: str) -> tuple:
    for column in (*KEY, "kind"):
        if is_missing(label.get(column)) or str(label[column]) == "":
            raise InputError(f"{where}: column '{column}' is empty")
    if label["kind"] not in KINDS:
        raise InputError(f"{where}: kind {label['kind']!r} is not one of {', '.join(KINDS)}")
    latency = label.get("latency_ms")
    try:
        latency = None if latency is None or is_missing(latency) or str(latency).strip() == "" else float(latency)
    except (TypeError, ValueError):
        raise InputError(f"{where}: latency_ms {latency!r} is not a number") from None
    created = _text(label.get("created_at")) or now()
    return (
        str(label["item_id"]),
        str(label["task"]),
        str(label["labeler"]),
        label["kind"],
        check_label_value(label.get("value"), where),
        _text(label.get("raw_answer")),
        _text(label.get("prompt_hash")),
        latency,
        _tags_json(label.get("tags")),
        _text(label.get("note")),
        created,
        check_probability(label.get("probability"), where),
    )


def sqlite_advice(exc: sqlite3.Error) -> str:
    """What to do about an SQLite error, from its error code (a full disk, a read-only folder, a lock)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith(("SQLITE_FULL", "SQLITE_IOERR")):
        return "the disk may be full (or the file-size limit reached): free some space and run again"
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
        return "the file or its folder is not writable (SQLite also writes -wal and -shm files beside the store)"
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return "another process holds it: run again when it is done"
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return "the file is damaged: restore it from a copy"
    return "it may be locked by another process, or damaged"


class LabelStore:
    """The labels table in one SQLite file; safe to share between threads of one process."""

    def __init__(self, path: str | Path, *, durable: bool = False):
        """`durable`: sync every commit to disk (SQLite synchronous=FULL), so that a label acknowledged to a
        person survives a power cut too; the default (NORMAL, WAL) survives a killed process, not a power cut."""
        self.path = Path(path)
        if self.path.exists() and self.path.stat().st_size:
            with open(self.path, "rb") as handle:
                if handle.read(16) != SQLITE_MAGIC:
                    raise InputError("not a label store (not an SQLite file)", path=self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.backup: Path | None = None  # the copy kept when opening migrated the store
        try:  # a DatabaseError while connecting or while reading the schema: one sentence
            self._conn = sqlite3.connect(self.path, timeout=10, check_same_thread=False, isolation_level=None)
            try:
                app_id = self._conn.execute("PRAGMA application_id").fetchone()[0]
                tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if not tables:
                    self._conn.execute("PRAGMA journal_mode=WAL")
                    self._conn.executescript(
                        f"BEGIN; {_SCHEMA} PRAGMA application_id={APPLICATION_ID}; "
                        f"PRAGMA user_version={SCHEMA_VERSION}; COMMIT;"
                    )
                elif app_id != APPLICATION_ID or "labels" not in tables:
                    raise InputError("is an SQLite file but not an mhaudit label store", path=self.path)
                else:
                    found = self._conn.execute("PRAGMA user_version").fetchone()[0]
                    self.backup = migrate_sqlite(
                        self._conn,
                        self.path,
                        found,
                        SCHEMA_VERSION,
                        MIGRATIONS,
                        what="this label store",
                        advice="export it with the mhaudit that wrote it (mhaudit labels export) and import the labels",
                    )
                self._conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            except BaseException:
                self._conn.close()
                raise
        except sqlite3.DatabaseError as exc:
            raise InputError(f"cannot open the label store ({exc}); {sqlite_advice(exc)}", path=self.path) from None

    def add(self, labels: Iterable[Mapping[str, object]], *, replace: bool = False) -> int:
        """Write labels in one transaction; an existing (item, task, labeler) label is kept unless `replace`.

        Returns the number of rows written.
        """
        return self._write(labels, "INSERT OR REPLACE" if replace else "INSERT OR IGNORE")

    def replace_labeler(self, task: str, labeler: str, labels: Iterable[Mapping[str, object]]) -> int:
        """All of `labeler`'s labels for `task` replaced by `labels` in one transaction (a re-made combined labeler:
        an item it no longer labels keeps no old label). Returns the number of rows written."""
        labels = list(labels)
        other = [
            i + 1 for i, label in enumerate(labels) if (label.get("task"), label.get("labeler")) != (task, labeler)
        ]
        if other:
            raise ValueError(f"label {other[0]} is not of task {task!r} and labeler {labeler!r}")
        return self._write(labels, "INSERT", clear=(task, labeler))

    def _write(self, labels: Iterable[Mapping[str, object]], verb: str, clear: tuple[str, str] | None = None) -> int:
        """The rows checked, then (after deleting the (task, labeler) in `clear`) written in one transaction."""
        rows = [_row(label, f"{self.path} label {i + 1}") for i, label in enumerate(labels)]
        for i, row in enumerate(rows):
            if row[3] not in STORE_KINDS:
                raise InputError(
                    f"label {i + 1}: kind '{row[3]}' is kept in label files, not in the store "
                    f"(kinds here: {', '.join(STORE_KINDS)})",
                    path=self.path,
                )
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                if clear is not None:
                    self._conn.execute("DELETE FROM labels WHERE task = ? AND labeler = ?", clear)
                before = self._conn.total_changes
                self._conn.executemany(f"{verb} INTO labels VALUES ({', '.join('?' * len(ALL_COLUMNS))})", rows)
                written = self._conn.total_changes - before
                self._conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:  # locked, full disk, read-only folder, a damaged file
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError)):
                    raise  # the rows were checked above: a bug
                raise InputError(
                    f"cannot write labels ({exc}); {sqlite_advice(exc)}; none of these labels was stored",
                    path=self.path,
                ) from None
        return written

    def labelled(self, task: str, labeler: str) -> set[str]:
        """Items that already carry a label (valid or invalid) from this labeler for this task."""
        with self._lock:
            rows = self._conn.execute("SELECT item_id FROM labels WHERE task = ? AND labeler = ?", (task, labeler))
            return {r[0] for r in rows}

    def frame(self, **where: str) -> pd.DataFrame:
        """The labels as a table, filtered by equality on any columns (task=..., labeler=..., kind=...)."""
        unknown = set(where) - set(ALL_COLUMNS)
        if unknown:
            raise ValueError(f"unknown label columns: {sorted(unknown)}")
        clause = " AND ".join(f"{column} = ?" for column in where) or "1"
        with self._lock:
            frame = pd.read_sql_query(
                f"SELECT * FROM labels WHERE {clause} ORDER BY task, labeler, item_id",
                self._conn,
                params=list(where.values()),
            )
        return frame.astype({"value": "Int64", "probability": "float64"})

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> LabelStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def labels_frame(
    items, values: Mapping[str, tuple], task: str, *, note: str | None = None, created_at: str | None = None
) -> pd.DataFrame:
    """A labels table (COLUMNS) from labeler -> (kind, 0/1 value per item[, which items]): e.g. a model's
    predicted labels entered as a labeler, or simulated annotators."""
    items = np.asarray(items).astype(str)
    parts = []
    for name, (kind, value, *where) in values.items():
        keep = where[0] if where else np.ones(len(items), dtype=bool)
        parts.append(
            pd.DataFrame(
                {"item_id": items[keep], "labeler": name, "kind": kind, "value": np.asarray(value)[keep].astype(int)}
            )
        )
    table = pd.concat(parts, ignore_index=True).assign(task=task, created_at=created_at or now(), note=note)
    return table.reindex(columns=list(COLUMNS)).astype({"value": "Int64"})


def read_labels(path: str | Path) -> pd.DataFrame:
    """A labels table from a label store, Parquet, CSV or JSONL file, validated row by row.

    Files are read with `mhaudit.tables.io.read_table`: only an empty cell is missing, so an item called "NA"
    stays "NA".
    """
    path = Path(path)
    if path.suffix.lower() in STORE_SUFFIXES:
        with LabelStore(require_file(path)) as store:
            return store.frame()
    if path.suffix.lower() not in TABLE_SUFFIXES:
        raise InputError(
            f"unknown label file type '{path.suffix.lower()}'; expected .sqlite, .parquet, .csv, .tsv or .jsonl",
            path=path,
        )
    frame = read_table(path, what="the labels", required=(*KEY, "kind", "value"))
    # row n is the n-th data row, header not counted, whatever the file type (as every reader here says it)
    rows = [_row(record, f"{path} row {i + 1}") for i, record in enumerate(frame.to_dict("records"))]
    result = pd.DataFrame(rows, columns=list(ALL_COLUMNS)).astype({"value": "Int64", "probability": "float64"})
    duplicated = result.duplicated(list(KEY))
    if duplicated.any():
        first = result[duplicated].iloc[0]
        raise InputError(
            f"item '{first['item_id']}' has two labels from '{first['labeler']}' for task "
            f"'{first['task']}'; one labeler writes one label per item",
            path=path,
        )
    return result


def read_label_files(paths) -> pd.DataFrame:
    """Several labels tables (`read_labels` each) as one; a label given in two files is an InputError."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    frame = pd.concat([read_labels(p).assign(_file=str(p)) for p in paths], ignore_index=True)
    dup = frame.duplicated(list(KEY), keep=False)
    if dup.any():
        first = frame[dup].iloc[0]
        same = (frame[list(KEY)] == first[list(KEY)]).all(axis=1)
        raise InputError(
            f"item '{first['item_id']}' has a label from '{first['labeler']}' for task '{first['task']}' "
            f"in more than one file ({', '.join(sorted(set(frame.loc[same, '_file'])))})"
        )
    return frame.drop(columns="_file")


def write_labels(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write a labels table atomically as Parquet, CSV or JSONL (by suffix); `probability` only where a row has one,
    so a file without combined labels keeps the columns it always had."""
    keep = [c for c in ALL_COLUMNS if c in frame.columns and (c not in OPTIONAL_COLUMNS or frame[c].notna().any())]
    return write_table(frame.loc[:, keep], path, what="the labels")
