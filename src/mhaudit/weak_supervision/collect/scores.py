"""The scores table: one row per post and model, in the post store's own database, and its typed readers.

`scores(uri, model_digest, scores, predicted, scored_at)`, keyed by post and model digest, so a re-run scores only
posts without a row for this model and another model gets its own rows; its schema version sits in `mhaudit_meta`
(key `scores_schema_version`). The collector may write posts meanwhile (docs/monitor.md, "Scores": one
transaction per batch, and how SQLite and PostgreSQL let the two sides share the store). This module, store.py
and window_cache.py hold every SQL statement on the post store.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.predictions import logit_column
from mhaudit.weak_supervision.collect.migrations import check_scores_table

__all__ = [
    "SCORES_SCHEMA_VERSION",
    "SCORED_COLUMNS",
    "ensure_scores_table",
    "pending_posts",
    "store_scores",
    "scored_posts",
    "newest_scored",
    "run_predictions",
    "post_times",
]

SCORES_SCHEMA_VERSION = 1
SCORED_COLUMNS = ("uri", "created_at", "length", "langs", "categories")  # then logit_<class>, one per class
_TABLE = """CREATE TABLE IF NOT EXISTS scores (
    uri {key} NOT NULL,
    model_digest TEXT NOT NULL,
    scores TEXT NOT NULL,
    predicted INTEGER NOT NULL,
    scored_at TEXT NOT NULL,
    PRIMARY KEY (uri, model_digest)
)"""


def ensure_scores_table(store) -> None:
    def create(conn) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS mhaudit_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute(_TABLE.format(key=store.dialect.key))
        found = conn.execute("SELECT value FROM mhaudit_meta WHERE key = ?", ("scores_schema_version",)).fetchone()
        if found is None:
            conn.execute(
                "INSERT INTO mhaudit_meta (key, value) VALUES (?, ?)",
                ("scores_schema_version", str(SCORES_SCHEMA_VERSION)),
            )
        else:
            check_scores_table(int(found[0]), SCORES_SCHEMA_VERSION, store.location)  # migrations.py

    store.transaction(create)


def pending_posts(store, digest: str) -> pd.DataFrame:
    """uri and text of the posts this model has not scored, in uri order."""
    rows = store.read(
        "SELECT p.uri, p.text FROM posts p WHERE NOT EXISTS (SELECT 1 FROM scores s WHERE "
        "s.uri = p.uri AND s.model_digest = ?) ORDER BY p.uri",
        (digest,),
    )
    return pd.DataFrame(rows, columns=["uri", "text"], dtype=object)


def store_scores(store, digest: str, uris: list[str], logits: np.ndarray) -> int:
    """One transaction: the batch's scores (a post scored meanwhile by another run is kept as it was)."""
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    rows = [(u, digest, json.dumps([float(v) for v in row]), int(np.argmax(row)), now) for u, row in zip(uris, logits)]
    sql = store.dialect.insert_ignore.format(
        table="scores", rest="(uri, model_digest, scores, predicted, scored_at) VALUES (?,?,?,?,?)"
    )
    return store.transaction(lambda conn: conn.executemany(sql, rows).rowcount)


def _since_day(since: pd.Timestamp) -> str:
    """The SQL bound on the createdAt text for posts at or after `since`: the day before, as 'YYYY-MM-DD'. The text
    is the client's local time (an offset of -12 to +14 hours), and a date compares below every time of that day
    whatever follows it ('T' or ' '), in SQLite and under any PostgreSQL collation of these characters."""
    return (since.tz_convert("UTC") - pd.Timedelta("1D")).strftime("%Y-%m-%d")


def newest_scored(store, digest: str) -> pd.Timestamp | None:
    """The largest createdAt text of the posts this model scored, parsed (UTC), or None when there is none or it is
    unreadable. Text order is not time order across offsets: a post up to a day later may exist (see `scored_posts`)."""
    (newest,) = store.read(
        "SELECT max(p.created_at) FROM posts p JOIN scores s ON s.uri = p.uri AND s.model_digest = ?", (digest,)
    )[0]
    time = pd.to_datetime(newest, utc=True, errors="coerce", format="ISO8601") if newest else pd.NaT
    return None if pd.isna(time) else time


def scored_posts(store, digest: str, classes: list[str], since: pd.Timestamp | None = None) -> pd.DataFrame:
    """Every post this model scored: uri, created_at (as the client sent it), length (of the text, in
    characters), langs and categories (lists), then logit_<class> per class, in (created_at, uri) order. The
    text itself stays in the database. `since` (a UTC time, or None: all): only the posts whose createdAt is at or
    after it, selected in SQL with a day's slack on the text (so memory follows the posts kept), then exactly."""
    bound, params = ("", (digest,)) if since is None else (" WHERE p.created_at >= ?", (digest, _since_day(since)))
    rows = store.read(
        "SELECT p.uri, p.created_at, length(p.text), p.langs, p.categories, s.scores FROM posts p "
        f"JOIN scores s ON s.uri = p.uri AND s.model_digest = ?{bound} ORDER BY p.created_at, p.uri",
        params,
    )
    frame = pd.DataFrame(rows, columns=[*SCORED_COLUMNS, "scores"])
    if since is not None:
        times = pd.to_datetime(frame["created_at"], utc=True, errors="coerce", format="ISO8601")
        frame = frame[(times >= since).to_numpy()].reset_index(drop=True)
    frame["length"] = frame["length"].astype(np.int64)
    for column in ("langs", "categories"):
        frame[column] = frame[column].map(lambda cell: json.loads(cell) if cell else [])
    parsed = [json.loads(s) for s in frame.pop("scores")]
    wrong = next((p for p in parsed if len(p) != len(classes)), None)
    if wrong is not None:
        raise InputError(
            f"the stored scores have {len(wrong)} classes, the model {len(classes)} ({', '.join(classes)})",
            path=store.location,
        )
    logits = np.array(parsed, dtype=float).reshape(len(parsed), len(classes))
    for c, name in enumerate(classes):
        frame[logit_column(name)] = logits[:, c]
    return frame


def run_predictions(store, digests: dict[str, str], since: pd.Timestamp | None = None) -> pd.DataFrame:
    """Several models' predicted class codes (the argmax of their scores), one column per name of `digests` (name
    -> model digest), for the posts every one of them scored, by uri (`uri` column, in uri order). `since`: only
    posts whose createdAt text is on or after the day before it (a superset of `scored_posts(..., since)`'s)."""
    frame = None
    for name, digest in digests.items():
        rows = (
            store.read("SELECT uri, predicted FROM scores WHERE model_digest = ? ORDER BY uri", (digest,))
            if since is None
            else store.read(
                "SELECT s.uri, s.predicted FROM scores s JOIN posts p ON p.uri = s.uri WHERE "
                "s.model_digest = ? AND p.created_at >= ? ORDER BY s.uri",
                (digest, _since_day(since)),
            )
        )
        one = pd.DataFrame(rows, columns=["uri", name]).astype({"uri": object, name: np.int64})
        frame = one if frame is None else frame.merge(one, on="uri", how="inner")
    return pd.DataFrame(columns=["uri"]) if frame is None else frame.sort_values("uri").reset_index(drop=True)


def post_times(store) -> pd.Series:
    """The createdAt of every post, as the clients sent it (scored or not)."""
    return pd.Series([t for (t,) in store.read("SELECT created_at FROM posts")], name="created_at", dtype=object)
