"""The stream monitor's round, as `mhaudit audit monitor` runs it (docs/monitor.md): `load_deployment` once, then
`monitor_round` each round (`--follow` repeats it with the same deployment)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable

import pandas as pd

from mhaudit.audits.monitor import (
    MonitorEnsemble,
    MonitorInputs,
    MonitorOptions,
    alert_folder,
    audit_monitor,
    check_reference,
    window_context,
)
from mhaudit.audits.monitor.windows import check_resolution
from mhaudit.core.errors import InputError
from mhaudit.core.executors import EXECUTORS
from mhaudit.core.progress import Progress, ensure
from mhaudit.models import Model, load_model
from mhaudit.models.seeds import model_folders
from mhaudit.report import AuditResult, write_report
from mhaudit.tables.certification_sample import write_certification_sample
from mhaudit.tables.io import write_table
from mhaudit.tables.predictions import PredictionSet
from mhaudit.weak_supervision.collect.scores import post_times
from mhaudit.weak_supervision.collect.scoring import loaded_model, model_digest, score_posts
from mhaudit.weak_supervision.collect.store import PostStore
from mhaudit.weak_supervision.collect.window_cache import read_windows, write_windows

__all__ = ["Deployment", "Run", "load_deployment", "monitor_round"]


@dataclass(frozen=True)
class Run:
    name: str  # the model folder's name (run-2)
    model: Model  # the loaded model
    folder: Path
    digest: str  # weak_supervision.collect.scoring.model_digest: the scores table's key


@dataclass(frozen=True)
class Deployment:
    """The runs that score the stream, the deployed one first, and with several runs their `MonitorEnsemble`
    (its per-post classes are read in each round; None for one model)."""

    runs: tuple[Run, ...]
    ensemble: MonitorEnsemble | None = None

    @property
    def deployed(self) -> Run:
        return self.runs[0]

    @property
    def classes(self) -> list[str]:
        return list(self.deployed.model.classes)


def load_deployment(model_dir: str | Path, deployed: str | None = None) -> Deployment:
    """The model in `model_dir`, or its runs (run-*/ or seed-*/ folders, `deployed` naming the deployed one by
    folder name; default: the first). Every run must have the deployed run's classes."""
    folders = model_folders(Path(model_dir))
    names = [f.name for f in folders]
    if deployed is not None and deployed not in names:
        raise InputError(
            f"the deployed run {deployed} is not one of the {len(folders)} runs in {model_dir} ({', '.join(names)})"
            if len(folders) > 1
            else f"the deployed run {deployed}: {model_dir} holds one model, not a folder of runs"
        )
    chosen = names.index(deployed) if deployed is not None else 0
    order = [chosen, *(i for i in range(len(folders)) if i != chosen)]
    # loaded once per process: the scoring jobs in this process use the same copies
    runs = tuple(
        Run(names[i], loaded_model(load_model, folders[i]), folders[i], model_digest(folders[i])) for i in order
    )
    if len(runs) == 1:
        return Deployment(runs)
    for run in runs[1:]:
        if list(run.model.classes) != list(runs[0].model.classes):
            raise InputError(
                f"run {run.name}'s classes ({', '.join(run.model.classes)}) differ from the deployed "
                f"{runs[0].name}'s ({', '.join(runs[0].model.classes)})"
            )
    by_folder = sorted(runs, key=lambda r: names.index(r.name))
    seeds = [int(r.model.options.get("seed", 0)) for r in by_folder]  # a run's seed is its seed in predictions
    return Deployment(
        runs,
        MonitorEnsemble(
            names, seeds, runs[0].name, pd.DataFrame(columns=["uri", *names]), tuple(r.digest for r in by_folder)
        ),
    )


def monitor_round(
    store: str | Path,
    deployment: Deployment,
    reference: PredictionSet,
    options: MonitorOptions,
    *,
    out_dir: str | Path,
    executor: str = "local",
    workers: int = 1,
    first: bool = True,
    synthetic: bool = False,
    notes: Callable[[], Iterable[str]] | None = None,
    progress: Progress | None = None,
) -> AuditResult:
    """Score the posts of `store` (a SQLite path or postgresql:// URL) that a run has not scored yet (the deployed
    run first; `executor` and `workers` as core.executors.run_jobs), audit every scored post against `reference`
    (the deployed model's predictions on its labelled sample; with an ensemble, every run's, told apart by seed),
    reusing the windows unchanged since the last round, and write report.{json,md,html} and, on an alert with a
    sample, alert/<window>/{predictions,sample}.parquet into `out_dir`. `first`: False in a later round, which waits
    out a database restart (a wrong address in the first is said at once). `synthetic`: the posts are, and the
    report says so. `notes()`: lines added to the report's notes when it is written (the command's gathered
    warnings). Bad input is said before anything is scored."""
    if executor not in EXECUTORS:
        raise InputError(f"the executor '{executor}' must be {' or '.join(EXECUTORS)}")
    if workers < 1:
        raise InputError(f"workers must be at least 1, got {workers}")
    check_reference(reference, deployment.classes, options.positive, deployment.ensemble)
    progress = ensure(progress)
    with PostStore(store, wait_for_server=not first) as posts:
        if posts.count() == 0:
            raise InputError(
                "the post store has no posts; collect some first (mhaudit collect bluesky)", path=posts.location
            )
        check_resolution(post_times(posts), options.window_length, options.window)
    # Closed while scoring, which opens the store again: in a process holding an SQLite store, opening a second one
    # (its header check opens and closes the file) drops the first's POSIX locks, and a write by another process
    # then leaves the first a "malformed" database (seen with Ray workers).
    scored_now: list[int] = []
    for run in deployment.runs:  # the deployed run first: every post it scored, the others score after
        with progress.stage(
            "score new posts"
            if deployment.ensemble is None
            else f"score new posts with {run.name}" + ("" if scored_now else " (deployed)")
        ):
            scored_now.append(
                score_posts(store, load_model, run.folder, run.digest, executor=executor, workers=workers)
            )
    if len(scored_now) > 1:
        progress.note(f"the other {len(scored_now) - 1} runs scored {sum(scored_now[1:]):,} new posts")
    with PostStore(store, wait_for_server=True) as posts:  # reached above: a restart since is waited out
        digests = {r.name: r.digest for r in deployment.runs}  # the deployed run first
        inputs = MonitorInputs.from_store(
            posts,
            reference,
            deployment.deployed.model.name,
            digests,
            deployment.classes,
            options,
            ensemble=deployment.ensemble,
            scored_now=scored_now[0],
            synthetic=synthetic,
        )
        context = window_context(inputs, options)  # the last round's unchanged windows are not recomputed
        inputs = replace(inputs, cached_windows=read_windows(posts, context))
    # no connection is held through the audit, the long part: a database restart meanwhile is waited out below
    result = audit_monitor(inputs, options, progress=progress)
    with PostStore(store, wait_for_server=True) as posts:
        write_windows(posts, context, result.outputs["window_rows"])
    computed, total = result.outputs["windows_recomputed"], len(result.outputs["window_rows"])
    progress.note(f"{computed:,} of {total:,} windows computed; {total - computed:,} read from the store")
    if "suggested_sample" in result.outputs:  # none when the store keeps raw DIDs in its post ids
        folder = Path(out_dir) / alert_folder(result.outputs["alert_window"])
        write_table(
            result.outputs["suggested_predictions"], folder / "predictions.parquet", what="the window's predictions"
        )
        write_certification_sample(
            result.outputs["suggested_sample"], result.outputs["suggested_design"], folder / "sample.parquet"
        )
    if notes is not None:
        result = replace(result, notes=[*result.notes, *notes()])
    write_report(result, out_dir)
    return result
