"""`mhaudit audit monitor`: a deployed model on the collected stream, window by window (mhaudit.audits.monitor)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from mhaudit.cli.console import guarded, out, print_table, stage_progress, write_report


def register(root: typer.Typer) -> None:
    from mhaudit.cli import audit

    audit.app.command(name="monitor")(monitor)


@guarded
def monitor(store: Annotated[str, typer.Option(help="Post store: posts.sqlite or postgresql://... (mhaudit collect).")],
            model: Annotated[Path, typer.Option(help="Model folder from mhaudit train (or its parent, with one seed-*).")],
            reference: Annotated[list[str], typer.Option(
                help="The model's predictions on the labelled sample it was validated on (files or globs).")],
            out_dir: Annotated[Path, typer.Option("--out", help="Folder for report.{json,html,md}, figures, alert/.")],
            window: Annotated[str, typer.Option(help="Window length: 1d, 6h, 30min, ...")] = "1d",
            positive: Annotated[str | None, typer.Option(help="Class to follow (default: the last).")] = None,
            executor: Annotated[str, typer.Option(help="local, or ray: score the new posts on Ray workers.")] = "local",
            workers: Annotated[int, typer.Option(
                help="Processes scoring at once with --executor local (Ray uses its cluster's CPUs).")] = 1,
            n_boot: Annotated[int, typer.Option(help="Bootstrap resamples of each window's estimate.")] = 200,
            follow: Annotated[float | None, typer.Option(
                help="Repeat every this many minutes (Ctrl-C stops); each round scores only the new posts.")] = None,
            rounds: Annotated[int | None, typer.Option(help="With --follow: stop after this many rounds.")] = None,
            seed: Annotated[int, typer.Option(help="Seed of the bootstrap and the suggested sample.")] = 0) -> None:
    """Score the posts not yet scored, then report per window: volume, mix, predicted prevalence, prior shift,
    score, length and language drift, the label-free estimate with its trust verdict, and change alarms; on an
    alert, a suggested validation sample of post ids (docs/monitor.md)."""
    from mhaudit.audits.monitor import MonitorOptions, reference_of
    from mhaudit.core.errors import InputError
    from mhaudit.core.executors import EXECUTORS
    from mhaudit.models import load_model
    from mhaudit.models.seeds import model_folders
    from mhaudit.tables.prediction_files import read_predictions
    from mhaudit.weak_supervision.collect.scoring import loaded_model, model_digest

    if executor not in EXECUTORS:
        raise InputError(f"--executor '{executor}' must be local or ray")
    if workers < 1:
        raise InputError(f"--workers {workers} must be at least 1")
    if follow is not None and follow <= 0:
        raise InputError(f"--follow {follow} must be a positive number of minutes")
    options = MonitorOptions(window=window, positive=positive, n_boot=n_boot, seed=seed)
    folders = model_folders(model)
    if len(folders) > 1:
        raise InputError(f"{model} holds {len(folders)} seeds ({', '.join(f.name for f in folders)}); give the one "
                         f"deployed, e.g. --model {model}/{folders[0].name}")
    deployed = loaded_model(load_model, folders[0])  # the scoring jobs in this process use the same copy
    ref = read_predictions(reference, classes=list(deployed.classes))
    reference_of(ref, list(deployed.classes), positive)  # a bad reference or class is said before any scoring
    model_dir, digest = folders[0], model_digest(folders[0])
    done = 0
    try:
        while True:
            result = _round(store, deployed, model_dir, digest, ref, options, executor, workers, out_dir)
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
        out.print(f"stopped after {done} round(s); the report is of the last finished one" if done else
                  "stopped before the first round finished; no report was written")


def _round(store: str, deployed, model_dir: Path, digest: str, ref, options, executor: str, workers: int,
           out_dir: Path):
    """Score the new posts, audit every scored post, write the report and any suggested sample."""
    from mhaudit.audits.monitor import MonitorInputs, alert_folder, audit_monitor
    from mhaudit.audits.monitor.windows import check_resolution
    from mhaudit.core.errors import InputError
    from mhaudit.models import load_model
    from mhaudit.tables.certification_sample import write_certification_sample
    from mhaudit.tables.io import write_table
    from mhaudit.weak_supervision.collect.scores import post_times, scored_posts
    from mhaudit.weak_supervision.collect.scoring import score_posts
    from mhaudit.weak_supervision.collect.store import PostStore

    with PostStore(store) as posts:
        if posts.count() == 0:
            raise InputError("the post store has no posts; collect some first (mhaudit collect bluesky)",
                             path=posts.location)
        check_resolution(post_times(posts), options.window_length, options.window)  # before anything is scored
    progress = stage_progress()
    with progress.stage("score new posts"):
        scored_now = score_posts(store, load_model, model_dir, digest, executor=executor, workers=workers)
    with PostStore(store) as posts:
        scored = scored_posts(posts, digest, list(deployed.classes))
    result = audit_monitor(MonitorInputs(scored, ref, deployed.name, digest, deployed.classes, scored_now), options,
                           progress=progress)
    if result.outputs:
        folder = out_dir / alert_folder(result.options["alert_window"])
        write_table(result.outputs["suggested_predictions"], folder / "predictions.parquet",
                    what="the window's predictions")
        write_certification_sample(result.outputs["suggested_sample"], result.outputs["suggested_design"],
                                   folder / "sample.parquet")
    write_report(result, out_dir)
    return result
