"""The monitor's alerts and their deliveries, in the post store's database (docs/monitor.md, "Alerts").

Three tables, keyed so that a round redone after a crash writes nothing twice:
- `monitor_alerts(model_digest, window_start, kind, ..., first_seen, suppressed, acknowledged_at, note)`: every alert
  (audits.monitor.alerts) the first time a round saw it; `suppressed` for one that continues an acknowledged
  alarm (never delivered);
- `alert_sinks(model_digest, sink, label, added_at)`: each notification target by the SHA-256 of its URL (the
  URL itself may hold a token and is never stored; `label` is apprise's redacted form). A sink receives the
  alerts first seen since it was added, not the store's history;
- `alert_deliveries(model_digest, window_start, kind, sink, attempts, delivered_at, last_error)`: one row per alert and
  sink once a delivery was tried; `delivered_at` is set in its own transaction the moment a send succeeds.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd

__all__ = [
    "register_sinks",
    "record_alerts",
    "recorded_alerts",
    "undelivered",
    "note_delivery",
    "acknowledge",
    "deliveries",
]

_TABLES = (
    """CREATE TABLE IF NOT EXISTS monitor_alerts (
    model_digest {key} NOT NULL,
    window_start {key} NOT NULL,
    kind {key} NOT NULL,
    severity TEXT NOT NULL,
    statistic TEXT NOT NULL,
    value DOUBLE PRECISION,
    first_seen TEXT NOT NULL,
    suppressed INTEGER NOT NULL,
    acknowledged_at TEXT,
    note TEXT,
    PRIMARY KEY (model_digest, window_start, kind)
)""",
    """CREATE TABLE IF NOT EXISTS alert_sinks (
    model_digest {key} NOT NULL,
    sink {key} NOT NULL,
    label TEXT NOT NULL,
    added_at TEXT NOT NULL,
    PRIMARY KEY (model_digest, sink)
)""",
    """CREATE TABLE IF NOT EXISTS alert_deliveries (
    model_digest {key} NOT NULL,
    window_start {key} NOT NULL,
    kind {key} NOT NULL,
    sink {key} NOT NULL,
    attempts INTEGER NOT NULL,
    delivered_at TEXT,
    last_error TEXT,
    PRIMARY KEY (model_digest, window_start, kind, sink)
)""",
)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _ensure(store) -> None:
    def create(conn) -> None:
        for table in _TABLES:
            conn.execute(table.format(key=store.dialect.key))

    store.transaction(create)


def register_sinks(store, model_digest: str, sinks: list[tuple[str, str]]) -> None:
    """Add the (sink key, label) pairs not yet known for this model; a known sink keeps its first `added_at`."""
    if not sinks:
        return
    _ensure(store)
    insert = store.dialect.insert_ignore.format(
        table="alert_sinks", rest="(model_digest, sink, label, added_at) VALUES (?,?,?,?)"
    )
    now = _now()
    store.transaction(lambda conn: conn.executemany(insert, [(model_digest, k, label, now) for k, label in sinks]))


def record_alerts(store, model_digest: str, alerts: pd.DataFrame) -> None:
    """Record the alerts (window, kind, severity, statistic, value, status) not recorded before; an alert whose
    status is `continuing` is recorded as suppressed."""
    _ensure(store)
    insert = store.dialect.insert_ignore.format(
        table="monitor_alerts",
        rest="(model_digest, window_start, kind, severity, statistic, value, first_seen, suppressed) "
        "VALUES (?,?,?,?,?,?,?,?)",
    )
    now = _now()
    rows = [
        (
            model_digest,
            a.window,
            a.kind,
            a.severity,
            a.statistic,
            None if pd.isna(a.value) else float(a.value),
            now,
            int(a.status == "continuing"),
        )
        for a in alerts.itertuples(index=False)
    ]
    if rows:
        store.transaction(lambda conn: conn.executemany(insert, rows))


def recorded_alerts(store, model_digest: str) -> pd.DataFrame:
    """The model's recorded alerts: window, kind, first_seen, suppressed, acknowledged (bool), acknowledged_at."""
    _ensure(store)
    rows = store.read(
        "SELECT window_start, kind, first_seen, suppressed, acknowledged_at FROM monitor_alerts WHERE model_digest = ? "
        "ORDER BY window_start, kind",
        (model_digest,),
    )
    frame = pd.DataFrame(rows, columns=["window", "kind", "first_seen", "suppressed", "acknowledged_at"])
    return frame.assign(acknowledged=frame["acknowledged_at"].notna(), suppressed=frame["suppressed"].astype(bool))


def undelivered(store, model_digest: str, sink: str) -> set[tuple[str, str]]:
    """(window, kind) of the alerts this sink should get and has not: recorded since the sink was added, not
    suppressed, not acknowledged, not delivered to it."""
    rows = store.read(
        "SELECT a.window_start, a.kind FROM monitor_alerts a JOIN alert_sinks s "
        "ON s.model_digest = a.model_digest AND s.sink = ? "
        "LEFT JOIN alert_deliveries d ON d.model_digest = a.model_digest AND d.window_start = a.window_start "
        "AND d.kind = a.kind AND d.sink = s.sink "
        "WHERE a.model_digest = ? AND a.first_seen >= s.added_at AND a.suppressed = 0 "
        "AND a.acknowledged_at IS NULL AND d.delivered_at IS NULL",
        (sink, model_digest),
    )
    return {(str(w), str(k)) for w, k in rows}


def note_delivery(
    store, model_digest: str, window: str, kind: str, sink: str, *, attempts: int, error: str | None
) -> None:
    """Add `attempts` tries to an alert's delivery to a sink: delivered now when `error` is None, else its error."""
    _ensure(store)
    delivered = None if error is not None else _now()

    def write(conn) -> None:
        conn.execute(
            "INSERT INTO alert_deliveries (model_digest, window_start, kind, sink, attempts, delivered_at, last_error) "
            "VALUES (?,?,?,?,?,?,?) ON CONFLICT (model_digest, window_start, kind, sink) DO UPDATE SET "
            "attempts = alert_deliveries.attempts + excluded.attempts, delivered_at = excluded.delivered_at, "
            "last_error = excluded.last_error",
            (model_digest, window, kind, sink, attempts, delivered, error),
        )

    store.transaction(write)


def deliveries(store, model_digest: str) -> pd.DataFrame:
    """Per alert (window, kind): sinks, delivered (how many sinks got it), attempts, and the last error if any."""
    _ensure(store)
    rows = store.read(
        "SELECT d.window_start, d.kind, s.label, d.attempts, d.delivered_at, d.last_error FROM alert_deliveries d "
        "JOIN alert_sinks s ON s.model_digest = d.model_digest AND s.sink = d.sink WHERE d.model_digest = ?",
        (model_digest,),
    )
    return pd.DataFrame(rows, columns=["window", "kind", "sink", "attempts", "delivered_at", "last_error"])


def acknowledge(store, model_digest: str, *, windows: list[str] | None, kind: str | None, note: str = "") -> int:
    """Acknowledge the model's recorded, not yet acknowledged alerts of these windows (None: all) and kind (None:
    both); returns how many."""
    _ensure(store)
    where, params = ["model_digest = ?", "acknowledged_at IS NULL"], [model_digest]
    if windows is not None:
        where.append(f"window_start IN ({', '.join('?' * len(windows))})")
        params += windows
    if kind is not None:
        where.append("kind = ?")
        params.append(kind)
    sql = f"UPDATE monitor_alerts SET acknowledged_at = ?, note = ? WHERE {' AND '.join(where)}"
    return int(store.transaction(lambda conn: conn.execute(sql, [_now(), note, *params]).rowcount))
