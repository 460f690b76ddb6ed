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
            model: Annotated[Path, typer.Option(
                help="Model folder from mhaudit train, or a folder of several runs (run-*/ or seed-*/): then every "
                     "run scores the posts and each window gets the deployed run's accuracy from their agreement.")],
            reference: Annotated[list[str], typer.Option(
                help="The model's predictions on the labelled sample it was validated on (files or globs); with "
                     "several runs, every run's, told apart by the seed column (mhaudit predict --model DIR).")],
            out_dir: Annotated[Path, typer.Option("--out", help="Folder for report.{json,html,md}, figures, alert/.")],
            deployed: Annotated[str | None, typer.Option(
                help="With a folder of several runs: the one deployed, by folder name (default: the first).")] = None,
            window: Annotated[str, typer.Option(help="Window length: 1d, 6h, 30min, ...")] = "1d",
            positive: Annotated[str | None, typer.Option(help="Class to follow (default: the last).")] = None,
            executor: Annotated[str, typer.Option(help="local, or ray: score the new posts on Ray workers.")] = "local",
            workers: Annotated[int, typer.Option(
                help="Processes scoring at once with --executor local (Ray uses its cluster's CPUs).")] = 1,
            n_boot: Annotated[int, typer.Option(help="Bootstrap resamples of each window's estimates.")] = 200,
            follow: Annotated[float | None, typer.Option(
                help="Repeat every this many minutes (Ctrl-C stops); each round scores only the new posts.")] = None,
            rounds: Annotated[int | None, typer.Option(help="With --follow: stop after this many rounds.")] = None,
            history: Annotated[str | None, typer.Option(
                help="Analyse only the whole windows within this long of the newest post (e.g. 90d), reading only "
                     "their posts, so a weeks-long --follow keeps its memory flat (default: every post).")] = None,
            seed: Annotated[int, typer.Option(help="Seed of the bootstrap and the suggested sample.")] = 0) -> None:
    """Score the posts not yet scored, then report per window: volume, mix, predicted prevalence, prior shift,
    score, length and language drift, the label-free estimate with its trust verdict, and change alarms; with a
    folder of several runs, the deployed run's accuracy from the runs' agreement; on an alert, a suggested
    validation sample of post ids. Windows unchanged since the last round are read from the store, not recomputed
    (docs/monitor.md)."""
    from mhaudit.audits.monitor import MonitorOptions, reference_of
    from mhaudit.audits.monitor.ensemble import deployed_reference
    from mhaudit.core.errors import InputError
    from mhaudit.core.executors import EXECUTORS
    from mhaudit.tables.prediction_files import read_predictions

    if executor not in EXECUTORS:
        raise InputError(f"--executor '{executor}' must be local or ray")
    if workers < 1:
        raise InputError(f"--workers {workers} must be at least 1")
    if follow is not None and follow <= 0:
        raise InputError(f"--follow {follow} must be a positive number of minutes")
    options = MonitorOptions(window=window, positive=positive, n_boot=n_boot, seed=seed, history=history)
    runs, ensemble = _runs(model, deployed)
    deployed_model = runs[0][1]  # the scoring jobs in this process use the same copies
    ref = read_predictions(reference, classes=list(deployed_model.classes))
    # a bad reference, a missing run or a bad class is said before any scoring
    reference_of(deployed_reference(ref, ensemble), list(deployed_model.classes), positive)
    if ensemble is not None:
        from mhaudit.audits.monitor.ensemble import ensemble_reference
        ensemble_reference(ref, ensemble)
        which = f"the first of {len(runs)} runs (--deployed names another)" if deployed is None else \
            f"one of {len(runs)} runs"
        out.print(f"deployed: {ensemble.deployed}, {which}; every run scores the posts", highlight=False)
    done = 0
    try:
        while True:
            result = _round(store, runs, ref, ensemble, options, executor, workers, out_dir, first=done == 0)
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


def _runs(model: Path, deployed: str | None):
    """[(name, loaded model, folder, digest)], the deployed run first, and the ensemble (its scores not yet read;
    None for one model folder)."""
    import pandas as pd

    from mhaudit.audits.monitor.ensemble import MonitorEnsemble
    from mhaudit.core.errors import InputError
    from mhaudit.models import load_model
    from mhaudit.models.seeds import model_folders
    from mhaudit.weak_supervision.collect.scoring import loaded_model, model_digest

    folders = model_folders(model)
    names = [f.name for f in folders]
    if deployed is not None and len(folders) > 1 and deployed not in names:
        raise InputError(f"--deployed {deployed} is not one of the {len(folders)} runs in {model} ({', '.join(names)})")
    if deployed is not None and len(folders) == 1 and deployed != names[0]:
        raise InputError(f"--deployed {deployed}: {model} holds one model, not a folder of runs")
    chosen = names.index(deployed) if deployed is not None else 0
    order = [chosen, *(i for i in range(len(folders)) if i != chosen)]
    runs = [(names[i], loaded_model(load_model, folders[i]), folders[i], model_digest(folders[i])) for i in order]
    if len(runs) == 1:
        return runs, None
    for name, run, _, _ in runs[1:]:
        if list(run.classes) != list(runs[0][1].classes):
            raise InputError(f"run {name}'s classes ({', '.join(run.classes)}) differ from the deployed "
                             f"{runs[0][0]}'s ({', '.join(runs[0][1].classes)})")
    by_folder = sorted(runs, key=lambda r: names.index(r[0]))
    seeds = tuple(int(r[1].options.get("seed", 0)) for r in by_folder)  # a run's seed is its seed in predictions
    return runs, MonitorEnsemble(tuple(names), seeds, runs[0][0], pd.DataFrame(columns=["uri", *names]),
                                 tuple(r[3] for r in by_folder))


def _round(store: str, runs: list, ref, ensemble, options, executor: str, workers: int, out_dir: Path, *,
           first: bool = True):
    """Score the new posts (the deployed run first, then the others), audit every scored post, write the report
    and any suggested sample."""
    from dataclasses import replace

    from mhaudit.audits.monitor import MonitorInputs, alert_folder, audit_monitor, window_context
    from mhaudit.audits.monitor.windows import check_resolution
    from mhaudit.core.errors import InputError
    from mhaudit.models import load_model
    from mhaudit.tables.certification_sample import write_certification_sample
    from mhaudit.tables.io import write_table
    from mhaudit.weak_supervision.collect.scores import post_times, run_predictions, scored_posts
    from mhaudit.weak_supervision.collect.scoring import score_posts
    from mhaudit.weak_supervision.collect.store import PostStore
    from mhaudit.weak_supervision.lexicons.measured import collection_filters
    from mhaudit.weak_supervision.collect.window_cache import read_windows, write_windows

    # a wrong address is said at once; a later --follow round waits out a database restart (docs/collect.md)
    with PostStore(store, wait_for_server=not first) as posts:
        if posts.count() == 0:
            raise InputError("the post store has no posts; collect some first (mhaudit collect bluesky)",
                             path=posts.location)
        check_resolution(post_times(posts), options.window_length, options.window)  # before anything is scored
    progress = stage_progress()
    scored_now = []
    for name, _, folder, digest in runs:  # the deployed run first: every post it scored, the others score after
        with progress.stage("score new posts" if ensemble is None else
                            f"score new posts with {name}" + (" (deployed)" if not scored_now else "")):
            scored_now.append(score_posts(store, load_model, folder, digest, executor=executor, workers=workers))
    name, deployed, _, digest = runs[0]
    with PostStore(store) as posts:
        since = _history_since(posts, digest, options)
        if ensemble is not None:
            ensemble = replace(ensemble, predicted=run_predictions(posts, {r[0]: r[3] for r in runs}, since))
        inputs = MonitorInputs(scored_posts(posts, digest, list(deployed.classes), since), ref, deployed.name, digest,
                               deployed.classes, scored_now[0], ensemble=ensemble,
                               collection=collection_filters(posts))
        context = window_context(inputs, options)  # the last round's unchanged windows are not recomputed
        inputs = replace(inputs, cached_windows=read_windows(posts, context))
    if ensemble is not None:
        progress.note(f"the other {len(runs) - 1} runs scored {sum(scored_now[1:]):,} new posts")
    result = audit_monitor(inputs, options, progress=progress)
    with PostStore(store) as posts:
        write_windows(posts, context, result.outputs["window_rows"])
    computed, total = result.options["windows_recomputed"], len(result.outputs["window_rows"])
    progress.note(f"{computed:,} of {total:,} windows computed; {total - computed:,} read from the store")
    if result.options["alert_window"] is not None:
        folder = out_dir / alert_folder(result.options["alert_window"])
        write_table(result.outputs["suggested_predictions"], folder / "predictions.parquet",
                    what="the window's predictions")
        write_certification_sample(result.outputs["suggested_sample"], result.outputs["suggested_design"],
                                   folder / "sample.parquet")
    write_report(result, out_dir)
    return result


def _history_since(posts, digest: str, options):
    """With a history, the first moment its posts are read from (audit_monitor keeps the exact whole windows of the
    posts read); None reads every scored post."""
    from mhaudit.audits.monitor.windows import history_start
    from mhaudit.weak_supervision.collect.scores import newest_scored

    newest = None if options.history is None else newest_scored(posts, digest)
    return None if newest is None else history_start(newest, options.history_length, options.window_length)
