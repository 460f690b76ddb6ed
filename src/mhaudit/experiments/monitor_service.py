"""The monitor as a service: rounds one after another (`--follow`), each followed by what tells people, the alert
deliveries, the metrics for dashboards and the live page (docs/monitor.md, "Running it as a service").

`run_monitor` is what `mhaudit audit monitor` runs; the command only prints each round. Everything that can be refused
(an alert URL, a busy metrics or page port, a metrics folder that does not exist) is refused before the first
round scores anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.experiments.alert_delivery import sinks
from mhaudit.experiments.monitor_round import Deployment, monitor_round
from mhaudit.report.result import AuditResult
from mhaudit.report.scorecard import SEVERITY_RANK

__all__ = ["MonitorService", "run_monitor", "check_fail_on", "at_or_above", "FAIL_ON"]

FAIL_ON = ("warn", "fail")


@dataclass(frozen=True)
class MonitorService:
    """What surrounds the rounds. `notify`: apprise URLs, each alert delivered once to each; `metrics_file`: a
    node_exporter textfile written after each round; `metrics_port` and `serve_port`: /metrics and the live report
    page on `host` (loopback unless `public`)."""

    notify: tuple[str, ...] = ()
    metrics_file: Path | None = None
    metrics_port: int | None = None
    serve_port: int | None = None
    host: str = "127.0.0.1"
    public: bool = False

    def __post_init__(self):
        object.__setattr__(self, "notify", tuple(self.notify))
        if self.metrics_file is not None:
            from mhaudit.experiments.monitor_metrics import check_metrics_file

            check_metrics_file(self.metrics_file)


def check_fail_on(level: str) -> str:
    """`--fail-on`'s level, warn or fail; anything else is one sentence (said before any round)."""
    if level not in FAIL_ON:
        raise InputError(f"--fail-on must be {' or '.join(FAIL_ON)}, not '{level}'")
    return level


def at_or_above(verdicts: pd.DataFrame, level: str) -> bool:
    """Whether any verdict is at `level` (warn or fail) or worse: `--fail-on`'s test."""
    return bool((verdicts["severity"].map(SEVERITY_RANK) <= SEVERITY_RANK[check_fail_on(level)]).any())


def run_monitor(
    store,
    deployment: Deployment,
    reference,
    options,
    *,
    out_dir: str | Path,
    service: MonitorService = MonitorService(),
    every_minutes: float | None = None,
    rounds: int | None = None,
    on_start: Callable[[dict[str, str]], None] | None = None,
    on_round: Callable[[AuditResult, int], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    **round_options,
) -> AuditResult | None:
    """Run monitor rounds (experiments.monitor_round; `round_options`: executor, workers, synthetic, notes,
    progress) until `rounds` are done, or once when `every_minutes` is None, else every `every_minutes`; returns
    the last round's result (None if none finished). `on_start(urls)`: where the page and metrics are served;
    `on_round(round, number)` after each round has told people. Ctrl-C (KeyboardInterrupt) propagates."""
    if every_minutes is not None and every_minutes <= 0:
        raise InputError(f"--follow {every_minutes} must be a positive number of minutes")
    if rounds is not None and rounds < 1:
        raise InputError(f"--rounds must be at least 1, got {rounds}")
    targets = sinks(list(service.notify))
    last, done = None, 0
    with ExitStack() as stack:
        metrics, page = _servers(service, Path(out_dir), stack)
        if on_start is not None:
            on_start({"page": page.url if page else "", "metrics": metrics.url if metrics else ""})
        while True:
            started = time.perf_counter()
            last = monitor_round(
                store, deployment, reference, options, out_dir=out_dir, first=done == 0, notify=targets, **round_options
            )
            done += 1
            _tell(last, time.perf_counter() - started, service, metrics, page, bool(targets))
            if on_round is not None:
                on_round(last, done)
            if every_minutes is None or (rounds is not None and done >= rounds):
                return last
            sleep(every_minutes * 60)


def _servers(service: MonitorService, out_dir: Path, stack: ExitStack):
    """The metrics server and the live page, bound now (a busy port is said before any round)."""
    metrics = page = None
    if service.metrics_port is not None:
        from mhaudit.experiments.monitor_metrics import MetricsServer

        metrics = stack.enter_context(MetricsServer(service.host, service.metrics_port, public=service.public))
    if service.serve_port is not None:
        from mhaudit.report.live import LivePage

        page = stack.enter_context(LivePage(out_dir, service.host, service.serve_port, public=service.public))
    return metrics, page


def _tell(last: AuditResult, seconds: float, service: MonitorService, metrics, page, notifying: bool) -> None:
    """After a round: the metrics (file and /metrics) and the live page."""
    if metrics is not None or service.metrics_file is not None:
        from mhaudit.experiments.monitor_metrics import round_metrics, write_metrics_file

        sent = {"sent": int(last.outputs["alerts_sent"] or 0), "failed": int(last.outputs["alerts_failed"] or 0)}
        registry = round_metrics(
            last,
            round_seconds=seconds,
            newest_post=last.outputs.get("newest_post"),  # type: ignore[arg-type]  # an ISO string or None
            deliveries=sent if notifying else None,
        )
        if service.metrics_file is not None:
            write_metrics_file(registry, service.metrics_file)
        if metrics is not None:
            metrics.update(registry)
    if page is not None:
        page.published()
