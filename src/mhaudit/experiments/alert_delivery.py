"""Delivering the monitor's alerts with apprise: one URL scheme for Slack, Discord, Matrix, e-mail, JSON webhooks
and more (docs/monitor.md, "Alerts").

Each alert (window × kind) goes to each target once: the post store records a delivery the moment a send
succeeds (weak_supervision.collect.alert_log), so a restart, even after kill -9, neither repeats a delivered
alert nor drops an undelivered one. The one gap left is the few milliseconds between a target accepting a
message and that record being committed: a kill exactly there repeats the alert once, and every message carries
an alert id a receiver can drop repeats by. A failed send is tried again with backoff (`ATTEMPTS`, `BACKOFF_S`),
then left for the next round; a failing target never stops the round. URLs are kept out of the store and the
reports: a target is named by apprise's redacted form of its URL.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from mhaudit.audits.monitor.alerts import alert_message, alerts_shown
from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.collect import alert_log

__all__ = ["ATTEMPTS", "BACKOFF_S", "Sink", "sinks", "DeliveryReport", "deliver", "with_deliveries", "send_test"]

ATTEMPTS = 4  # tries per alert and target in one round: a receiver that fails three times still gets it
BACKOFF_S = 0.5  # the wait before the second try; doubled before each next one (0.5, 1, 2 s)


@dataclass(frozen=True)
class Sink:
    """A notification target: its apprise plugin, a key (SHA-256 of the URL) and a label without secrets."""

    plugin: object = field(repr=False)
    key: str
    label: str


def sinks(urls: list[str]) -> list[Sink]:
    """The targets of `--notify URL`s; a URL apprise cannot send to is an InputError naming it (redacted)."""
    import apprise

    found = []
    for url in urls:
        plugin = apprise.Apprise.instantiate(url, suppress_exceptions=True)
        if not plugin:
            scheme = url.split("://", 1)[0] if "://" in url else url[:12]
            raise InputError(
                f"--notify {scheme}://… is not a URL apprise can send to (see https://github.com/caronc/apprise/wiki "
                "for the schemes, e.g. json://host/path, mailto://..., slack://...)"
            )
        found.append(Sink(plugin, hashlib.sha256(url.encode()).hexdigest(), plugin.url(privacy=True)))
    return found


@dataclass
class DeliveryReport:
    """One round's deliveries: how many sends succeeded and failed, and one line per failure (no URL secrets)."""

    sent: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)


def deliver(
    store,
    model_digest: str,
    alerts: pd.DataFrame,
    targets: list[Sink],
    *,
    model: str,
    followed: str,
    report: str,
    samples: dict[str, str],
    sleep: Callable[[float], None] = time.sleep,
) -> DeliveryReport:
    """Send each alert of this round's `alerts` that a target has not received (alert_log.undelivered), oldest
    first, recording each success at once. `samples`: window -> the suggested sample's description."""
    done = DeliveryReport()
    by_key = {(a["window"], a["kind"]): a for a in alerts.to_dict("records")}
    for sink in targets:
        pending = sorted(alert_log.undelivered(store, model_digest, sink.key) & set(by_key))
        for window, kind in pending:
            title, body = alert_message(
                by_key[(window, kind)], model=model, followed=followed, report=report, sample=samples.get(window)
            )
            tries, error = _send(sink, title, body, sleep)
            alert_log.note_delivery(store, model_digest, window, kind, sink.key, attempts=tries, error=error)
            if error is None:
                done.sent += 1
                continue
            done.failed += 1
            done.failures.append(f"{kind} alert of {window} to {sink.label}: {error} after {tries} tries")
            break  # this target is down: its other alerts wait for the next round instead of more backoff
    return done


def with_deliveries(result, seen: pd.DataFrame, recorded: pd.DataFrame, done: DeliveryReport):
    """The result with each alert's record in its Alerts table (`first_seen` from the store's `seen` alerts;
    `delivered`: to how many targets so far, `last_error`, from its `recorded` deliveries), this round's failures in
    its notes and the counts in `outputs["alerts_sent"]` and `outputs["alerts_failed"]`."""
    from dataclasses import replace

    from mhaudit.report.result import Section

    alerts = result.outputs["alerts"].merge(seen[["window", "kind", "first_seen"]], on=["window", "kind"], how="left")
    if len(recorded):
        state = recorded.assign(got=recorded["delivered_at"].notna()).groupby(["window", "kind"], sort=False)
        counts = state.agg(delivered=("got", "sum"), last_error=("last_error", "last")).reset_index()
        alerts = alerts.merge(counts, on=["window", "kind"], how="left")
        alerts["delivered"] = alerts["delivered"].fillna(0).astype(int)
        alerts["last_error"] = alerts["last_error"].where(alerts["delivered"] == 0, None)
    shown = alerts_shown(alerts)
    sections = [
        Section(s.title, s.text, {**s.tables, "alerts": shown}, s.figures) if "alerts" in s.tables else s
        for s in result.sections
    ]
    notes = [f"alert delivery failed: {line}; tried again next round" for line in done.failures]
    outputs = {**result.outputs, "alerts": alerts, "alerts_sent": done.sent, "alerts_failed": done.failed}
    return replace(result, sections=sections, notes=[*result.notes, *notes], outputs=outputs)


def send_test(targets: list[Sink]) -> DeliveryReport:
    """`--notify-test`: one test message to every target."""
    done = DeliveryReport()
    for sink in targets:
        tries, error = _send(sink, "mhaudit monitor: test message", "The monitor can reach this target.", time.sleep)
        done.sent += error is None
        done.failed += error is not None
        if error is not None:
            done.failures.append(f"test message to {sink.label}: {error} after {tries} tries")
    return done


def _send(sink: Sink, title: str, body: str, sleep: Callable[[float], None]) -> tuple[int, str | None]:
    """Try up to ATTEMPTS times; (tries, None) on success, else (tries, apprise's last complaint)."""
    error = "the target refused the message"
    for attempt in range(ATTEMPTS):
        if attempt:
            sleep(BACKOFF_S * 2 ** (attempt - 1))
        with _captured_log() as said:
            try:
                if sink.plugin.notify(body=body, title=title):  # type: ignore[attr-defined]  # apprise's NotifyBase
                    return attempt + 1, None
            except Exception as exc:  # noqa: BLE001 - a plugin may raise anything; the round must go on
                said.append(f"{type(exc).__name__}: {exc}")
        error = said[-1] if said else error
    return ATTEMPTS, error


class _captured_log:
    """apprise's warnings for one send, kept for the report instead of printed (library code never prints)."""

    def __enter__(self) -> list[str]:
        self.lines: list[str] = []
        self.logger = logging.getLogger("apprise")
        self.handler = _ListHandler(self.lines)
        self.saved = (self.logger.propagate, self.logger.level)
        self.logger.addHandler(self.handler)
        self.logger.propagate, self.logger.level = False, logging.WARNING
        return self.lines

    def __exit__(self, *exc) -> None:
        self.logger.removeHandler(self.handler)
        self.logger.propagate, self.logger.level = self.saved


class _ListHandler(logging.Handler):
    def __init__(self, lines: list[str]):
        super().__init__(logging.WARNING)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(" ".join(record.getMessage().split()))
