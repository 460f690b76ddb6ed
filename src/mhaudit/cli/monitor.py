"""`mhaudit audit monitor`: a deployed model on the collected stream, window by window, one round after another
(mhaudit.experiments.monitor_service), and `mhaudit audit monitor-ack`: acknowledge its alerts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mhaudit.cli.console import ctrl_c_stops, err, guarded, out, print_table, stage_progress, warning_notes
from mhaudit.cli.models import MappingOpt, RuntimeOpt, TrustPickleOpt
from mhaudit.cli.options import with_options

StoreOpt = Annotated[str, typer.Option(help="Post store: posts.sqlite or postgresql://... (mhaudit collect).")]
ModelOpt = Annotated[
    Path,
    typer.Option(
        help="Model folder from mhaudit train, or a folder of several runs (run-*/ or seed-*/): then every "
        "run scores the posts and each window gets the deployed run's accuracy from their agreement. Or an "
        "outside model: a Hugging Face folder (save_pretrained) or a scikit-learn pipeline (.skops)."
    ),
]
ReferenceOpt = Annotated[
    list[str],
    typer.Option(
        help="The model's predictions on the labelled sample it was validated on (files or globs); with "
        "several runs, every run's, told apart by the seed column (mhaudit predict --model DIR)."
    ),
]
OutOpt = Annotated[Path, typer.Option("--out", help="Folder for report.{json,html,md}, figures, alert/.")]
DeployedOpt = Annotated[
    str | None,
    typer.Option(help="With a folder of several runs: the one deployed, by folder name (default: the first)."),
]
ExecutorOpt = Annotated[str, typer.Option(help="local, or ray: score the new posts on Ray workers.")]
WorkersOpt = Annotated[
    int, typer.Option(help="Processes scoring at once with --executor local (Ray uses its cluster's CPUs).")
]
FollowOpt = Annotated[
    float | None,
    typer.Option(help="Repeat every this many minutes (Ctrl-C stops); each round scores only the new posts."),
]
RoundsOpt = Annotated[int | None, typer.Option(help="With --follow: stop after this many rounds.")]
NotifyOpt = Annotated[
    list[str],
    typer.Option(
        help="Deliver each new alert once to this apprise URL (json://, mailto://, slack://, ...; repeatable). "
        "The message has the numbers, no post text."
    ),
]
NotifyTestOpt = Annotated[bool, typer.Option(help="Send one test message to each --notify target, then stop.")]
MetricsPortOpt = Annotated[int | None, typer.Option(help="Serve Prometheus /metrics on this port (loopback).")]
MetricsFileOpt = Annotated[
    Path | None, typer.Option(help="Write the metrics to this file after each round (node_exporter textfile).")
]
ServeOpt = Annotated[int | None, typer.Option(help="Serve the latest report on this port (loopback), live.")]
FailOnOpt = Annotated[
    str | None, typer.Option(help="Exit 1 when the last round has a verdict at this level or worse: warn or fail.")
]


def register(root: typer.Typer) -> None:
    from mhaudit.cli import audit

    audit.app.command(name="monitor")(monitor)
    audit.app.command(name="monitor-ack")(monitor_ack)


@with_options("mhaudit.audits.monitor.options:MonitorOptions")
def monitor(
    store: StoreOpt,
    model: ModelOpt,
    reference: ReferenceOpt,
    out_dir: OutOpt,
    options,
    deployed: DeployedOpt = None,
    mapping: MappingOpt = None,
    trust_pickle: TrustPickleOpt = False,
    runtime: RuntimeOpt = "torch",
    executor: ExecutorOpt = "local",
    workers: WorkersOpt = 1,
    follow: FollowOpt = None,
    rounds: RoundsOpt = None,
    notify: NotifyOpt = [],  # noqa: B006 - typer reads the default; never mutated
    notify_test: NotifyTestOpt = False,
    metrics_port: MetricsPortOpt = None,
    metrics_file: MetricsFileOpt = None,
    serve: ServeOpt = None,
    fail_on: FailOnOpt = None,
) -> None:
    """Score the posts not yet scored, then report per window: volume, mix, predicted prevalence, prior shift,
    score, length and language drift, the label-free estimate with its trust verdict, and change alarms; with a
    folder of several runs, the deployed run's accuracy from the runs' agreement; on a new alert, a suggested
    validation sample of post ids, delivered once to each --notify target. Windows unchanged since the last round
    are read from the store, not recomputed (docs/monitor.md)."""
    from mhaudit.experiments.alert_delivery import send_test, sinks
    from mhaudit.experiments.monitor_round import load_deployment, load_reference
    from mhaudit.experiments.monitor_service import MonitorService, at_or_above, check_fail_on
    from mhaudit.experiments.monitor_service import run_monitor

    if notify_test:
        _say_deliveries(send_test(sinks(notify)), what="test messages")
        return
    service = MonitorService(tuple(notify), metrics_file, metrics_port, serve)
    if fail_on is not None:
        check_fail_on(fail_on)
    deployment = load_deployment(model, deployed, mapping=mapping, trust_pickle=trust_pickle, runtime=runtime)
    ref = load_reference(reference, deployment)
    if deployment.ensemble is not None:
        which = (
            f"one of {len(deployment.runs)} runs"
            if deployed
            else f"the first of {len(deployment.runs)} runs (--deployed names another)"
        )
        out.print(f"deployed: {deployment.deployed.name}, {which}; every run scores the posts", highlight=False)
    last, done = None, 0

    def on_round(this, number: int) -> None:
        nonlocal last, done
        last, done = this, number
        _print_round(this, out_dir)

    try:
        with ctrl_c_stops():  # also SIGTERM, and SIGINT where a background start ignored it
            run_monitor(
                store,
                deployment,
                ref,
                options,
                out_dir=out_dir,
                service=service,
                every_minutes=follow,
                rounds=rounds,
                on_start=_print_where,
                on_round=on_round,
                executor=executor,
                workers=workers,
                notes=warning_notes,
                progress=stage_progress(),
            )
    except KeyboardInterrupt:  # Ctrl-C ends --follow; every committed batch of scores and alert stays
        out.print(
            f"stopped after {done} round(s); the report is of the last finished one"
            if done
            else "stopped before the first round finished; no report was written"
        )
    if fail_on is not None and last is not None and at_or_above(last.verdicts, fail_on):
        err.print(f"a verdict is at {fail_on} or worse (--fail-on {fail_on}): exit 1", highlight=False)
        raise typer.Exit(1)


def _print_where(urls: dict[str, str]) -> None:
    for name, url in urls.items():
        if url:
            out.print(f"{name}: {url}", highlight=False)


def _print_round(result, out_dir: Path) -> None:
    """A round in the terminal: the summary, the alerts with the new ones marked, what was delivered."""
    out.print(result.summary, highlight=False)
    alerts = result.outputs["alerts"]
    new = alerts[alerts["status"] == "new"]
    if len(new):
        columns = ["window", "kind", "severity", "statistic", "value", "em_prevalence", "em_ci_low", "em_ci_high"]
        print_table("NEW alerts", new[columns + (["delivered"] if "delivered" in new else [])])
    if len(alerts) > len(new):
        seen = alerts["status"].value_counts().drop("new", errors="ignore")
        out.print(
            f"{len(alerts) - len(new)} alert(s) seen before: "
            + ", ".join(f"{n} {status}" for status, n in seen.items())
            + " (the report's Alerts table)",
            highlight=False,
        )
    sent, failed = result.outputs["alerts_sent"], result.outputs["alerts_failed"]
    if sent or failed:
        why = " (why: the report's notes)" if failed else ""
        out.print(f"alert messages: {sent} delivered, {failed} failed{why}", highlight=False)
    out.print(f"report: {out_dir / 'report.html'} (also report.md, report.json, figures/)")


def _say_deliveries(done, *, what: str) -> None:
    out.print(f"{what}: {done.sent} delivered, {done.failed} failed", highlight=False)
    for line in done.failures:
        err.print(f"delivery failed: {line}", highlight=False)


@guarded
def monitor_ack(
    store: StoreOpt,
    model: ModelOpt,
    window: Annotated[
        list[str], typer.Option(help="The alerting window to acknowledge, as the report prints it (repeatable).")
    ] = [],  # noqa: B006 - typer reads the default; never mutated
    all_windows: Annotated[bool, typer.Option("--all", help="Acknowledge every alert not yet acknowledged.")] = False,
    kind: Annotated[str | None, typer.Option(help="Only this kind: change or drift (default: both).")] = None,
    note: Annotated[str, typer.Option(help="Why, kept with the alert (e.g. the certify report's path).")] = "",
    deployed: DeployedOpt = None,
) -> None:
    """Acknowledge the monitor's alerts: they are not delivered again, and while the same kind of alarm goes on
    firing in the windows after an acknowledged one, those are recorded as continuing, not delivered, and draw no
    new validation sample. To adopt a newer validated reference, run the monitor with it as --reference."""
    from mhaudit.experiments.monitor_round import acknowledge_alerts

    count = acknowledge_alerts(store, model, window or None, all_windows, kind, note, deployed)
    out.print(f"acknowledged {count} alert(s)", highlight=False)
