"""The parse cache: one SQLite file holding each text's parse, keyed by the text's content and the parser.

A key is SHA-256 of (parser identity, parse settings, text), so any subset, reordering or merge of texts
that were parsed before reads them back and parses nothing new. One row per distinct text: its token
columns as a small blob (`encode` / `decode`). The file is in WAL mode and every write is one
`INSERT OR IGNORE` transaction, so two processes can fill it at once (both parsing the same text just
store it once); a reader never sees half a row. A damaged file is renamed aside and rebuilt: the cache
costs speed, never correctness.

Where: `$MHAUDIT_CACHE/parses/parses.sqlite`, default `~/.cache/mhaudit`. `cache_report` sizes it and
`clear_cache` removes it (`mhaudit cache info|clear`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import struct
import zlib
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from mhaudit.core.errors import InputError
from mhaudit.core.store_versions import migrate_sqlite

__all__ = [
    "ParseCache",
    "cache_path",
    "cache_report",
    "clear_cache",
    "text_key",
    "encode",
    "decode",
    "STRING_COLUMNS",
    "FLAG_COLUMNS",
]

STRING_COLUMNS = ("word", "lower", "tag", "pos", "dep")
FLAG_COLUMNS = ("is_stop", "is_punct", "is_alpha", "like_num", "sent_start", "space_after")
FILE_NAME = "parses.sqlite"
APPLICATION_ID = 0x6D68_7031  # "mhp1": marks a file as an mhaudit parse cache
BLOB_FORMAT = 1  # part of every key: a new blob layout reads no old row
# PRAGMA user_version. 0: the same table, written before the cache was stamped (400c387 to 2b85693), so its step
# to 1 only stamps it (after a backup copy, core.store_versions). Older still, one Parquet file per list of texts
# (dd493d1 to ac4e2b0): keyed by the whole list, without its texts, so never read; `legacy_files` counts them.
SCHEMA_VERSION = 1
MIGRATIONS = {0: lambda conn: None}
SCHEMA = """
CREATE TABLE IF NOT EXISTS parses (
    key TEXT PRIMARY KEY,          -- text_key(model, settings, text)
    model TEXT NOT NULL,
    n_tokens INTEGER NOT NULL,
    truncated INTEGER NOT NULL,    -- 1: parsed on its first MAX_CHARS characters
    tokens BLOB NOT NULL,          -- encode(): zlib of strings as JSON, head, idx (int32), flag bits (uint8)
    created_at TEXT NOT NULL
) WITHOUT ROWID
"""
_LOOKUP_BATCH = 900  # keys per SELECT: under SQLite's default limit of 999 bound parameters


def cache_path() -> Path:
    root = os.environ.get("MHAUDIT_CACHE") or Path.home() / ".cache" / "mhaudit"
    return Path(root) / "parses" / FILE_NAME


def text_key(model: str, settings: str, text: str) -> str:
    """The cache key of one text: its content, the parser and every setting that changes a parse."""
    digest = hashlib.sha256(f"{BLOB_FORMAT}\0{model}\0{settings}\0".encode())
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------- blobs
def encode(columns: dict[str, np.ndarray], lo: int, hi: int) -> bytes:
    """Tokens lo:hi of flat parse columns as one blob; `head` is stored relative to the document (lo)."""
    strings = json.dumps(
        [columns[k][lo:hi].tolist() for k in STRING_COLUMNS], ensure_ascii=False, separators=(",", ":")
    ).encode("utf-8", "surrogatepass")
    flags = np.zeros(hi - lo, dtype=np.uint8)
    for bit, name in enumerate(FLAG_COLUMNS):
        flags |= columns[name][lo:hi].astype(np.uint8) << bit
    # zlib level 1: a third of the size (50 -> 16 MB on 15,169 real posts) for 0.3 s more per warm read of them
    return zlib.compress(
        b"".join(
            [
                struct.pack("<I", len(strings)),
                strings,
                (columns["head"][lo:hi] - lo).astype("<i4").tobytes(),
                columns["idx"][lo:hi].astype("<i4").tobytes(),
                flags.tobytes(),
            ]
        ),
        1,
    )


def decode(blob: bytes, n_tokens: int) -> tuple[list[list[str]], np.ndarray, np.ndarray, np.ndarray]:
    """(string columns, doc-relative head, idx, flag bits) of one blob written by `encode`."""
    blob = zlib.decompress(blob)
    (size,) = struct.unpack_from("<I", blob)
    strings = json.loads(blob[4 : 4 + size].decode("utf-8", "surrogatepass"))
    at = 4 + size
    head = np.frombuffer(blob, "<i4", n_tokens, at)
    idx = np.frombuffer(blob, "<i4", n_tokens, at + 4 * n_tokens)
    flags = np.frombuffer(blob, np.uint8, n_tokens, at + 8 * n_tokens)
    return strings, head, idx, flags


# --------------------------------------------------------------------------------------------- store
class ParseCache:
    """The cache file, opened for reading and writing; `get` and `put` by key."""

    def __init__(self, path: Path | None = None, *, timeout: float = 60.0):
        self.path = Path(path) if path is not None else cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.backup: Path | None = None  # the copy kept when opening migrated the cache
        self.conn = self._open(timeout)

    def _open(self, timeout: float) -> sqlite3.Connection:
        for attempt in (1, 2):
            conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
            try:
                app_id = conn.execute("PRAGMA application_id").fetchone()[0]
                if app_id not in (0, APPLICATION_ID):
                    raise sqlite3.DatabaseError("not a parse cache")
                if app_id == APPLICATION_ID:  # before any pragma below can change the file
                    found = conn.execute("PRAGMA user_version").fetchone()[0]
                    self.backup = migrate_sqlite(
                        conn,
                        self.path,
                        found,
                        SCHEMA_VERSION,
                        MIGRATIONS,
                        what="this parse cache",
                        advice="remove it (mhaudit cache clear)",
                    )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("PRAGMA journal_size_limit=8388608")  # the WAL shrinks back to 8 MB after a checkpoint
                if app_id == 0:
                    conn.execute("BEGIN IMMEDIATE")
                    conn.execute(SCHEMA)
                    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                    conn.execute("COMMIT")
                conn.execute("SELECT count(*) FROM parses LIMIT 1").fetchone()
                return conn
            except (sqlite3.OperationalError, InputError):  # locked, read-only, disk full (the caller goes without),
                conn.close()  # or a newer cache (refused): never set aside
                raise
            except sqlite3.DatabaseError:
                conn.close()
                if attempt == 2:
                    raise
                # A damaged or foreign file: keep it aside for inspection, start a new cache.
                self.path.replace(self.path.with_name(self.path.name + ".damaged"))
        raise AssertionError("unreachable")

    def get(self, keys: Sequence[str]) -> dict[str, tuple[int, int, bytes]]:
        """key -> (n_tokens, truncated, blob) for the keys the cache holds."""
        found: dict[str, tuple[int, int, bytes]] = {}
        for start in range(0, len(keys), _LOOKUP_BATCH):
            batch = keys[start : start + _LOOKUP_BATCH]
            query = f"SELECT key, n_tokens, truncated, tokens FROM parses WHERE key IN ({','.join('?' * len(batch))})"
            found.update((key, (n, truncated, blob)) for key, n, truncated, blob in self.conn.execute(query, batch))
        return found

    def put(self, model: str, rows: Iterable[tuple[str, int, int, bytes]]) -> None:
        """Store (key, n_tokens, truncated, blob) rows in one transaction; rows already there are kept."""
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany(
                "INSERT OR IGNORE INTO parses VALUES (?, ?, ?, ?, ?, ?)",
                [(k, model, n, t, b, now) for k, n, t, b in rows],
            )
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> ParseCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def cache_report(path: Path | None = None) -> dict:
    """What the cache holds: `path`, `bytes` (the file with its WAL), `texts`, `tokens` and `models`
    (model -> texts), and `legacy_files`: Parquet files of the older cache beside it, never read. An absent
    cache reports zeros."""
    path = Path(path) if path is not None else cache_path()
    files = [path, path.with_name(path.name + "-wal")]
    report: dict = {
        "path": str(path),
        "bytes": sum(f.stat().st_size for f in files if f.exists()),
        "texts": 0,
        "tokens": 0,
        "models": {},
        "legacy_files": len(list(path.parent.glob("*.parquet"))),
    }
    if not path.exists():
        return report
    with ParseCache(path) as cache:
        for model, texts, tokens in cache.conn.execute(
            "SELECT model, count(*), coalesce(sum(n_tokens), 0) FROM parses GROUP BY model ORDER BY model"
        ):
            report["models"][model] = texts
            report["texts"] += texts
            report["tokens"] += tokens
    return report


def clear_cache(path: Path | None = None) -> int:
    """Remove the cache (and what earlier versions left: one Parquet file per list of texts, and the copies
    kept by a migration); the bytes freed."""
    path = Path(path) if path is not None else cache_path()
    folder = path.parent
    victims = [
        path,
        path.with_name(path.name + "-wal"),
        path.with_name(path.name + "-shm"),
        path.with_name(path.name + ".damaged"),
        *folder.glob("*.parquet"),
        *folder.glob(f"{path.name}.v*.bak"),
    ]
    freed = 0
    for victim in victims:
        if victim.exists():
            freed += victim.stat().st_size
            victim.unlink()
    return freed
