"""The stream monitor's round as Prometheus gauges, for dashboards (docs/monitor.md, "Metrics for dashboards").

`round_metrics` turns one round's `AuditResult` (experiments.monitor_round, audits.monitor.audit_monitor) into a
fresh `CollectorRegistry` (never prometheus_client's global one): every gauge is named `mhaudit_monitor_*` and
labelled by model, and by window and class where it applies, with the window as the windows table prints it.
`write_metrics_file` writes a registry for node_exporter's textfile collector; `MetricsServer` serves the latest
one at `/metrics`, on a loopback address unless told otherwise. Aggregates only: no post text, no author.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterator, Mapping
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import TypeAlias
from urllib.parse import urlsplit

import pandas as pd
from prometheus_client import CollectorRegistry, generate_latest, write_to_textfile
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

from mhaudit.audits.monitor import MonitorOptions
from mhaudit.audits.monitor.alerts import alarms
from mhaudit.core.errors import InputError, os_fault
from mhaudit.core.serving import HostCheck, address_family, bind_address, listen_error, refuse_exposed_host, server_url
from mhaudit.report import AuditResult
from mhaudit.report.result import SEVERITIES

__all__ = ["round_metrics", "check_metrics_file", "write_metrics_file", "MetricsServer", "PREFIX", "DELIVERY_OUTCOMES"]

PREFIX = "mhaudit_monitor_"
DELIVERY_OUTCOMES = ("sent", "failed")
Time: TypeAlias = str | pd.Timestamp | datetime | None

# Per window: (the windows table's column, the gauge's name after PREFIX, its help). A column the table lacks
# (the ensemble's, with one model) gives no gauge.
WINDOW_GAUGES = (
    ("n_posts", "window_posts", "Scored posts in the window (by createdAt; the window label is its UTC start)."),
    ("expected_macro_f1", "expected_macro_f1", "Label-free estimate (CBPE) of the model's macro-F1 in the window."),
    ("expected_ci_low", "expected_macro_f1_ci_low", "Lower bound of the estimated macro-F1's 95% CI."),
    ("expected_ci_high", "expected_macro_f1_ci_high", "Upper bound of the estimated macro-F1's 95% CI."),
    ("estimate_trusted", "estimate_trusted", "1 when the estimated macro-F1 passes the trust rule, else 0."),
    ("ensemble_accuracy", "ensemble_accuracy_ratio", "Deployed run's accuracy from the runs' agreement line."),
    ("ensemble_ci_low", "ensemble_accuracy_ci_low_ratio", "Lower bound of the agreement line accuracy's 95% CI."),
    ("ensemble_ci_high", "ensemble_accuracy_ci_high_ratio", "Upper bound of the agreement line accuracy's 95% CI."),
    ("ensemble_trusted", "ensemble_trusted", "1 when the runs' agreement line passes its trust rule, else 0."),
    ("psi_score", "psi_score", "PSI of the window's scores against the reference predictions' (drift)."),
    ("js_score", "js_score", "Jensen-Shannon distance of the window's scores from the reference's (drift)."),
    ("ks_score", "ks_score", "Kolmogorov-Smirnov statistic of the window's scores against the reference's."),
    (
        "cusum_z",
        "cusum_z",
        "Self-starting CUSUM z of the mean positive-class probability (NaN: its start, or not judged).",
    ),
    ("change_alarm", "change_alarm", "1 when the change detector (CUSUM) alarms in the window, else 0."),
)
# Per window and class: (the column's prefix before the class name, the gauge's name after PREFIX, its help).
CLASS_GAUGES = (
    ("predicted_", "predicted_prevalence_ratio", "Share of the window's posts the model predicts as the class."),
    ("em_prior_", "em_prevalence_ratio", "EM estimate of the class's prevalence in the window (label shift)."),
    ("em_ci_low_", "em_prevalence_ci_low_ratio", "Lower bound of the EM prevalence's 95% bootstrap CI."),
    ("em_ci_high_", "em_prevalence_ci_high_ratio", "Upper bound of the EM prevalence's 95% bootstrap CI."),
)
ALERT_HELP = (
    "The window's alert level as the verdicts judge it: 0 none, 1 warn (score PSI at or above psi_warn), "
    "2 fail (PSI at or above psi_fail, or a change alarm); windows under min_posts posts are not judged (0)."
)


def round_metrics(
    result: AuditResult,
    *,
    round_seconds: float,
    newest_post: Time,
    deliveries: Mapping[str, int] | None = None,
    now: Time = None,
) -> CollectorRegistry:
    """A fresh registry with the round's gauges. `result`: the round's AuditResult (its "windows" table, options
    and verdicts); `round_seconds`: how long the round took; `newest_post`: the newest scored post's createdAt
    (None or unreadable: unknown, so its timestamp and lag are NaN); `deliveries`: this round's alert deliveries by
    outcome, {"sent": 2, "failed": 1} (None when no sink is set up: no delivery gauge); `now`: when the lag is
    measured (default: the current time; naive times are UTC). NaN in the table stays NaN in the gauges."""
    model = _model_name(result)
    at = _utc(now) if now is not None else pd.Timestamp.now(tz="UTC")
    if at is None:
        raise InputError(f"the time '{now}' is not a date and time")
    newest = _utc(newest_post)
    info = _gauge(
        "model_info",
        "The model the monitor watches (name, digest, positive class, SYNTHETIC data or not); always 1.",
        ["model", "model_digest", "positive_class", "synthetic"],
    )
    options = result.options
    digest, positive = str(options.get("model_digest", "")), str(options.get("positive", ""))
    info.add_metric([model, digest, positive, "true" if result.synthetic else "false"], 1.0)
    scalars = {
        "round_scored_posts": ("Posts scored in this round (new to the model).", options.get("scored_now")),
        "round_duration_seconds": ("How long the round took: scoring, analysis and writing.", round_seconds),
        "round_timestamp_seconds": ("When these metrics were made (Unix time).", at.timestamp()),
        "newest_post_timestamp_seconds": (
            "The newest scored post's createdAt (Unix time; NaN: unknown).",
            None if newest is None else newest.timestamp(),
        ),
        "newest_post_lag_seconds": (
            "Seconds from the newest scored post's createdAt to when these metrics were made (NaN: unknown).",
            None if newest is None else (at - newest).total_seconds(),
        ),
    }
    families = [info]
    for name, (text, value) in scalars.items():
        families.append(_gauge(name, text, ["model"]))
        families[-1].add_metric([model], _number(value))
    families += _window_families(result, model)
    families += [_verdict_family(result.verdicts, model), _threshold_family(result.options, model)]
    if deliveries is not None:
        families.append(_delivery_family(deliveries, model))
    registry = CollectorRegistry()
    registry.register(_Snapshot(families))
    return registry


def _window_families(result: AuditResult, model: str) -> list[GaugeMetricFamily]:
    """The per-window gauges (WINDOW_GAUGES), the per-window-and-class ones (CLASS_GAUGES) and the alert level."""
    table = result.table("windows")
    windows = table["window"].astype(str).tolist()
    families = []
    start = _gauge("window_start_timestamp_seconds", "The window's start (Unix time, UTC).", ["model", "window"])
    for window in windows:
        start.add_metric([model, window], pd.Timestamp(window, tz="UTC").timestamp())
    families.append(start)
    for column, name, text in WINDOW_GAUGES:
        if column in table.columns:
            families.append(_gauge(name, text, ["model", "window"]))
            for window, value in zip(windows, table[column]):
                families[-1].add_metric([model, window], _number(value))
    classes = [str(c) for c in result.options.get("classes", [])]
    for prefix, name, text in CLASS_GAUGES:
        present = [c for c in classes if f"{prefix}{c}" in table.columns]
        if present:
            families.append(_gauge(name, text, ["model", "window", "class"]))
            for c in present:
                for window, value in zip(windows, table[f"{prefix}{c}"]):
                    families[-1].add_metric([model, window, c], _number(value))
    alert = _gauge("alert_level", ALERT_HELP, ["model", "window"])
    for window, level in zip(windows, alert_levels(table, result.options)):
        alert.add_metric([model, window], float(level))
    families.append(alert)
    return families


def alert_levels(table: pd.DataFrame, options: Mapping) -> list[int]:
    """Each window's alert level, by the alerts' one rule (audits.monitor.alerts.alarms): 2 for a change alarm or
    a score PSI at or above psi_fail, 1 for a PSI at or above psi_warn, else 0; a window of fewer than min_posts
    posts is not judged. The thresholds are the result's options (else their defaults)."""
    warn, fail, min_posts = _thresholds(options)
    change, drift = alarms(table, SimpleNamespace(psi_warn=warn, psi_fail=fail, min_posts=min_posts))
    levels = drift.astype(int)
    levels[change | (drift & (pd.to_numeric(table["psi_score"], errors="coerce") >= fail))] = 2
    return levels.tolist()


def _verdict_family(verdicts: pd.DataFrame, model: str) -> GaugeMetricFamily:
    family = _gauge(
        "verdicts",
        "The round's verdict rows by severity (pass, warn, fail, undefined), as in the report.",
        ["model", "severity"],
    )
    counts = verdicts["severity"].value_counts()
    for severity in SEVERITIES:
        family.add_metric([model, severity], float(counts.get(severity, 0)))
    return family


def _thresholds(options: Mapping) -> tuple[float, float, int]:
    """psi_warn, psi_fail and min_posts of the result's options, else MonitorOptions' defaults."""
    defaults = MonitorOptions()
    return (
        float(options.get("psi_warn", defaults.psi_warn)),
        float(options.get("psi_fail", defaults.psi_fail)),
        int(options.get("min_posts", defaults.min_posts)),
    )


def _threshold_family(options: Mapping, model: str) -> GaugeMetricFamily:
    """The PSI thresholds, so that a dashboard draws them from the monitor's own options."""
    family = _gauge(
        "psi_threshold", "The score PSI at which a window warns (warn) or fails (fail).", ["model", "level"]
    )
    warn, fail, _ = _thresholds(options)
    family.add_metric([model, "warn"], warn)
    family.add_metric([model, "fail"], fail)
    return family


def _delivery_family(deliveries: Mapping[str, int], model: str) -> GaugeMetricFamily:
    unknown = sorted(set(deliveries) - set(DELIVERY_OUTCOMES))
    if unknown:
        raise ValueError(f"delivery outcomes {unknown} are not among {DELIVERY_OUTCOMES}")
    family = _gauge(
        "alert_deliveries", "Alert deliveries in this round by outcome (sent, failed).", ["model", "outcome"]
    )
    for outcome in DELIVERY_OUTCOMES:
        family.add_metric([model, outcome], float(deliveries.get(outcome, 0)))
    return family


def _gauge(name: str, text: str, labels: list[str] | None = None) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, text, labels=labels or [])


class _Snapshot(Collector):
    """The round's gauges, made once: every scrape or write gives the same numbers."""

    def __init__(self, families: list[GaugeMetricFamily]):
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)


def _model_name(result: AuditResult) -> str:
    """The model's name: the result's options' "model", else the verdicts' subject (the model, with an ensemble
    its deployed run), else the start of its digest."""
    if isinstance(result.options.get("model"), str):
        return result.options["model"]
    subjects = result.verdicts["subject"].dropna().astype(str)
    return subjects.iat[0] if len(subjects) else str(result.options.get("model_digest", ""))[:12]


def _utc(value: Time) -> pd.Timestamp | None:
    """A time as a UTC Timestamp (a naive one is taken as UTC), or None when missing or unreadable."""
    if value is None:
        return None
    parsed = pd.to_datetime(value, utc=True, errors="coerce", format="ISO8601" if isinstance(value, str) else None)
    return None if pd.isna(parsed) else pd.Timestamp(parsed)


def _number(value) -> float:
    """A gauge's value: a bool as 1 or 0, a missing value (None, NaN, NA) as NaN."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return math.nan
    return float(value)


def check_metrics_file(path: str | Path) -> Path:
    """The refusals of `write_metrics_file`, said before any round: its folder must exist and be writable, and
    the path must not be a folder. Writes nothing."""
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        raise InputError(f"cannot write the metrics file {path}: the folder {folder} does not exist; create it first")
    if path.is_dir():
        raise InputError(f"cannot write the metrics file {path}: it is a folder; name a file in it (mhaudit.prom)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"cannot write the metrics file {path}: the folder {folder} is not writable")
    return path


def write_metrics_file(registry: CollectorRegistry, path: str | Path) -> Path:
    """Write the registry in the text format node_exporter's textfile collector reads (it reads `*.prom` files
    only). Atomic: prometheus_client's `write_to_textfile` writes `<path>.<pid>.<thread>` in the same folder and
    renames it over `path`, so a reader sees the old file or the new one, never half of one; on a failed write the
    temporary file is removed and the old file kept. A missing or unwritable folder (`check_metrics_file`), a full
    disk: one sentence."""
    path = check_metrics_file(path)
    try:
        write_to_textfile(str(path), registry)
    except OSError as exc:
        if (fault := os_fault(exc, path, kept=True)) is None:
            raise
        raise fault from None
    return path


class MetricsServer:
    """Serves `/metrics` (the Prometheus text format) of the latest registry given to `update` (before the first,
    an empty page). Binds when made, so `url` is ready and a scraper may connect at once; `start` serves from a
    daemon thread, `stop` ends it within a poll interval and frees the port. The rules of core.serving: loopback
    only unless `public`, and on loopback a request naming another host is refused (400: DNS rebinding). A
    context manager, or `start` and `stop`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, public: bool = False):
        refuse_exposed_host(host, public, exposes="the monitor's metrics")
        if not 0 <= port <= 65535:
            raise InputError(f"the metrics port {port} is not a port number (0 to 65535)")
        self._server = _Server(host, port, HostCheck.serving(host, public))
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"{server_url(self._server.host, self.port)}/metrics"

    def update(self, registry: CollectorRegistry) -> None:
        """Serve this registry's metrics from now on (the next scrape gives them)."""
        self._server.registry = registry

    def start(self) -> MetricsServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="mhaudit-metrics", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port (idempotent)."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> MetricsServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, host: str, port: int, hosts: HostCheck):
        self.host, self.hosts = host, hosts
        self.registry = CollectorRegistry()
        self.address_family = address_family(host)
        try:
            super().__init__((bind_address(host), port), _Handler)
        except OSError as exc:
            raise listen_error(host, port, exc, flag="--metrics-port") from None

    def handle_error(self, request, client_address) -> None:
        """A dropped connection or a bug while answering: the scraper sees it; nothing is printed (a library)."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "mhaudit-metrics"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        if not self.server.hosts.allows(self.headers.get("Host", "")):
            status, content, kind = 400, b"this server answers only to the address it printed\n", "text/plain"
        elif urlsplit(self.path).path != "/metrics":
            status, content, kind = 404, b"the metrics are at /metrics\n", "text/plain"
        else:
            status, content, kind = 200, generate_latest(self.server.registry), CONTENT_TYPE_PLAIN_0_0_4
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        if body:
            self.wfile.write(content)

    def log_message(self, format: str, *args) -> None:
        """No request log: a library never prints."""
