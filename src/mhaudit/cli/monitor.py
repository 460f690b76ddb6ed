"""`mhaudit audit monitor`: a deployed model on the collected stream, window by window, one round after another
(mhaudit.experiments.monitor_round)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from mhaudit.cli.console import ctrl_c_stops, out, print_table, stage_progress, warning_notes
from mhaudit.cli.options import with_options


def register(root: typer.Typer) -> None:
    from mhaudit.cli import audit

    audit.app.command(name="monitor")(monitor)


@with_options("mhaudit.audits.monitor.options:MonitorOptions")
def monitor(
    store: Annotated[str, typer.Option(help="Post store: posts.sqlite or postgresql://... (mhaudit collect).")],
    model: Annotated[
        Path,
        typer.Option(
            help="Model folder from mhaudit train, or a folder of several runs (run-*/ or seed-*/): then every "
            "run scores the posts and each window gets the deployed run's accuracy from their agreement."
        ),
    ],
    reference: Annotated[
        list[str],
        typer.Option(
            help="The model's predictions on the labelled sample it was validated on (files or globs); with "
            "several runs, every run's, told apart by the seed column (mhaudit predict --model DIR)."
        ),
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for report.{json,html,md}, figures, alert/.")],
    options,
    deployed: Annotated[
        str | None,
        typer.Option(help="With a folder of several runs: the one deployed, by folder name (default: the first)."),
    ] = None,
    executor: Annotated[str, typer.Option(help="local, or ray: score the new posts on Ray workers.")] = "local",
    workers: Annotated[
        int, typer.Option(help="Processes scoring at once with --executor local (Ray uses its cluster's CPUs).")
    ] = 1,
    follow: Annotated[
        float | None,
        typer.Option(help="Repeat every this many minutes (Ctrl-C stops); each round scores only the new posts."),
    ] = None,
    rounds: Annotated[int | None, typer.Option(help="With --follow: stop after this many rounds.")] = None,
) -> None:
    """Score the posts not yet scored, then report per window: volume, mix, predicted prevalence, prior shift,
    score, length and language drift, the label-free estimate with its trust verdict, and change alarms; with a
    folder of several runs, the deployed run's accuracy from the runs' agreement; on an alert, a suggested
    validation sample of post ids. Windows unchanged since the last round are read from the store, not recomputed
    (docs/monitor.md)."""
    from mhaudit.core.errors import InputError
    from mhaudit.experiments.monitor_round import load_deployment, monitor_round
    from mhaudit.tables.prediction_files import read_predictions

    if follow is not None and follow <= 0:
        raise InputError(f"--follow {follow} must be a positive number of minutes")
    deployment = load_deployment(model, deployed)
    ref = read_predictions(reference, classes=deployment.classes)
    if deployment.ensemble is not None:
        which = (
            f"the first of {len(deployment.runs)} runs (--deployed names another)"
            if deployed is None
            else f"one of {len(deployment.runs)} runs"
        )
        out.print(f"deployed: {deployment.deployed.name}, {which}; every run scores the posts", highlight=False)
    done = 0
    try:
        with ctrl_c_stops():  # also SIGTERM, and SIGINT where a background start ignored it
            while True:
                result = monitor_round(
                    store,
                    deployment,
                    ref,
                    options,
                    out_dir=out_dir,
                    executor=executor,
                    workers=workers,
                    first=done == 0,
                    notes=warning_notes,
                    progress=stage_progress(),
                )
                out.print(result.summary, highlight=False)
                raised = result.verdicts[result.verdicts["severity"] != "pass"]
                if not raised.empty:
                    print_table("alerts", raised[["severity", "statistic", "value", "reason"]])
                out.print(f"report: {out_dir / 'report.html'} (also report.md, report.json, figures/)")
                done += 1
                if follow is None or (rounds is not None and done >= rounds):
                    break
                time.sleep(follow * 60)
    except KeyboardInterrupt:  # Ctrl-C ends --follow; every committed batch of scores stays
        out.print(
            f"stopped after {done} round(s); the report is of the last finished one"
            if done
            else "stopped before the first round finished; no report was written"
        )
