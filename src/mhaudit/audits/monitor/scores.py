"""The monitor's scores: one row per post and model, in the post store's own database.

`scores(uri, model_digest, scores, predicted, scored_at)`, keyed by post and model digest (a hash of the
model folder's files), so a re-run scores only posts without a row for this model, and another model gets
its own rows. Each batch of scores is one transaction: a kill -9 loses at most the batch in flight, and
the next run scores it again. The schema version sits in the database's `mhaudit_meta` table (key
`scores_schema_version`), created beside the post store's tables on first use (SQLite; PostgreSQL has it).

The collector may write posts at the same time: SQLite in WAL mode lets the monitor read while a batch is
written, and each side's write waits for the other's (the store's busy timeout); PostgreSQL serialises
them on the server.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from mhaudit.core.errors import InputError

__all__ = ["SCORES_SCHEMA_VERSION", "model_digest", "ensure_scores_table", "pending_posts", "store_scores",
           "score_posts", "read_scored"]

SCORES_SCHEMA_VERSION = 1
_TABLE = """CREATE TABLE IF NOT EXISTS scores (
    uri {key} NOT NULL,
    model_digest TEXT NOT NULL,
    scores TEXT NOT NULL,
    predicted INTEGER NOT NULL,
    scored_at TEXT NOT NULL,
    PRIMARY KEY (uri, model_digest)
)"""


def model_digest(model_dir: str | Path) -> str:
    """SHA-256 over the model folder's files, names and bytes, in name order."""
    folder = Path(model_dir)
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def ensure_scores_table(store) -> None:
    def create(conn) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS mhaudit_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute(_TABLE.format(key=store.dialect.key))
        found = conn.execute("SELECT value FROM mhaudit_meta WHERE key = ?", ("scores_schema_version",)).fetchone()
        if found is None:
            conn.execute("INSERT INTO mhaudit_meta (key, value) VALUES (?, ?)",
                         ("scores_schema_version", str(SCORES_SCHEMA_VERSION)))
        elif int(found[0]) != SCORES_SCHEMA_VERSION:
            raise InputError(f"its scores table has schema version {found[0]}; this mhaudit reads version "
                             f"{SCORES_SCHEMA_VERSION}", path=store.location)

    store.transaction(create)


def pending_posts(store, digest: str) -> list[tuple[str, str]]:
    """(uri, text) of the posts this model has not scored, in uri order."""
    return store.read("SELECT p.uri, p.text FROM posts p WHERE NOT EXISTS (SELECT 1 FROM scores s WHERE "
                      "s.uri = p.uri AND s.model_digest = ?) ORDER BY p.uri", (digest,))


def store_scores(store, digest: str, uris: list[str], logits: np.ndarray) -> int:
    """One transaction: the batch's scores (a post scored meanwhile by another run is kept as it was)."""
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    rows = [(u, digest, json.dumps([float(v) for v in row]), int(np.argmax(row)), now) for u, row in zip(uris, logits)]
    sql = store.dialect.insert_ignore.format(table="scores", rest="(uri, model_digest, scores, predicted, scored_at) "
                                                                   "VALUES (?,?,?,?,?)")
    return store.transaction(lambda conn: conn.executemany(sql, rows).rowcount)


def score_posts(store, model, digest: str, *, batch_size: int = 256, executor=None) -> int:
    """Score every post this model has not scored yet, batch by batch; returns how many were scored.

    `executor`: None scores here; otherwise a callable (list of text batches) -> list of logit arrays, e.g.
    `ray_executor.score_batches` (the same batches, so the same numbers, wherever they run)."""
    pending = pending_posts(store, digest)
    batches = [pending[i:i + batch_size] for i in range(0, len(pending), batch_size)]
    delay = float(os.environ.get("MHAUDIT_MONITOR_BATCH_DELAY", "0"))  # fault tests: slow batches to kill mid-run
    done = 0
    if executor is None:
        for batch in batches:
            done += store_scores(store, digest, [u for u, _ in batch], model.predict_logits([t for _, t in batch]))
            time.sleep(delay)
        return done
    for batch, logits in zip(batches, executor([[t for _, t in b] for b in batches])):
        done += store_scores(store, digest, [u for u, _ in batch], logits)
    return done


def read_scored(store, digest: str) -> list[tuple]:
    """(uri, created_at, text length, langs JSON, categories JSON, scores JSON) of every scored post; the text
    itself stays in the database."""
    return store.read("SELECT p.uri, p.created_at, length(p.text), p.langs, p.categories, s.scores FROM posts p "
                      "JOIN scores s ON s.uri = p.uri AND s.model_digest = ? ORDER BY p.created_at, p.uri", (digest,))
