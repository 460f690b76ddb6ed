"""The monitor's window cache: each window's costly statistics from the last round, in the post store's database.

`monitor_windows(context, key, cells, written_at)` (docs/monitor.md, "Where"): `context` is a digest of what every
window's statistics depend on (audits.monitor.reuse.window_context), `key` a digest of that and of one window,
`cells` the window's statistics as JSON (floats as Python writes them, so they read back bit for bit; NaN as
NaN). Each round replaces its context's rows in one transaction; the table is only a cache.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pandas as pd

__all__ = ["read_windows", "write_windows"]

_TABLE = """CREATE TABLE IF NOT EXISTS monitor_windows (
    context {key} NOT NULL,
    key {key} NOT NULL,
    cells TEXT NOT NULL,
    written_at TEXT NOT NULL,
    PRIMARY KEY (context, key)
)"""


def _ensure(store) -> None:
    store.transaction(lambda conn: conn.execute(_TABLE.format(key=store.dialect.key)))


def read_windows(store, context: str) -> pd.DataFrame:
    """The cached windows of `context`: a `key` column, then one column per statistic (empty when none). A row
    that does not read as a JSON object is left out: its window is computed again and the row replaced."""
    _ensure(store)
    rows = [
        {"key": key, **cells}
        for key, text in store.read("SELECT key, cells FROM monitor_windows WHERE context = ? ORDER BY key", (context,))
        if isinstance(cells := _cells(text), dict)
    ]
    return pd.DataFrame(rows, columns=None if rows else ["key"])


def _cells(text: str):
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def write_windows(store, context: str, windows: pd.DataFrame) -> None:
    """Replace the rows of `context` with `windows` (a `key` column and the statistics), in one transaction."""
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    records = windows.drop(columns="key").to_dict("records")  # Python floats, bools and strings
    rows = [(context, key, json.dumps(cells), now) for key, cells in zip(windows["key"], records)]
    insert = store.dialect.insert_ignore.format(
        table="monitor_windows", rest="(context, key, cells, written_at) VALUES (?,?,?,?)"
    )

    def replace(conn) -> None:
        conn.execute("DELETE FROM monitor_windows WHERE context = ?", (context,))
        if rows:
            conn.executemany(insert, rows)

    _ensure(store)
    store.transaction(replace)
