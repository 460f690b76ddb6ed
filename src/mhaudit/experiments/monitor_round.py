"""The stream monitor's round, as `mhaudit audit monitor` runs it (docs/monitor.md): `load_deployment` once, then
`monitor_round` each round (`--follow` repeats it with the same deployment)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable

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
from mhaudit.audits.monitor.alerts import KINDS
from mhaudit.audits.monitor.windows import check_resolution
from mhaudit.core.errors import InputError
from mhaudit.core.executors import EXECUTORS
from mhaudit.core.progress import Progress, ensure
from mhaudit.experiments.alert_delivery import Sink, deliver, with_deliveries
from mhaudit.models import Model, load_model
from mhaudit.models.hf_hub import model_files
from mhaudit.models.seeds import model_folders
from mhaudit.report import AuditResult, write_report
from mhaudit.tables.certification_sample import write_certification_sample
from mhaudit.tables.io import write_table
from mhaudit.tables.prediction_files import read_predictions
from mhaudit.tables.predictions import PredictionSet
from mhaudit.weak_supervision.collect.alert_log import (
    acknowledge,
    deliveries,
    record_alerts,
    recorded_alerts,
    register_sinks,
)
from mhaudit.weak_supervision.collect.scores import post_times
from mhaudit.weak_supervision.collect.scoring import loaded_model, model_digest, score_posts
from mhaudit.weak_supervision.collect.store import PostStore
from mhaudit.weak_supervision.collect.window_cache import read_windows, write_windows

__all__ = [
    "Deployment",
    "Run",
    "deployed_first",
    "load_deployment",
    "load_reference",
    "monitor_round",
    "acknowledge_alerts",
]


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
    # what loads a run's folder in the scoring jobs (picklable, for worker processes): `load_model`, or it with an
    # outside model's mapping and trust_pickle
    load: Callable[[str], Any] = load_model

    @property
    def deployed(self) -> Run:
        return self.runs[0]

    @property
    def classes(self) -> list[str]:
        return list(self.deployed.model.classes)


def deployed_first(model_dir: str | Path, deployed: str | None = None) -> list[Path]:
    """The model folder, or its runs' folders with the deployed one (by folder name; default: the first) first."""
    folders = model_folders(Path(model_dir))
    names = [f.name for f in folders]
    if deployed is not None and deployed not in names:
        raise InputError(
            f"the deployed run {deployed} is not one of the {len(folders)} runs in {model_dir} ({', '.join(names)})"
            if len(folders) > 1
            else f"the deployed run {deployed}: {model_dir} holds one model, not a folder of runs"
        )
    chosen = names.index(deployed) if deployed is not None else 0
    return [folders[chosen], *(f for i, f in enumerate(folders) if i != chosen)]


def acknowledge_alerts(
    store: str | Path,
    model_dir: str | Path,
    windows: list[str] | None,
    all_windows: bool = False,
    kind: str | None = None,
    note: str = "",
    deployed: str | None = None,
) -> int:
    """Acknowledge the deployed model's recorded alerts of `windows` (or every one with `all_windows`), of one
    `kind` or both; how many were acknowledged (audits.monitor.alerts: what an acknowledgement does)."""
    if bool(windows) == all_windows:
        raise InputError("name the alerting windows to acknowledge (--window, repeatable) or give --all, not both")
    if kind is not None and kind not in KINDS:
        raise InputError(f"the alert kind '{kind}' must be {' or '.join(KINDS)}")
    digest = model_digest(model_files(deployed_first(model_dir, deployed)[0]))
    with PostStore(store, create=False) as posts:
        known = set(recorded_alerts(posts, digest)["window"])
        unknown = sorted(set(windows or ()) - known)
        if unknown:
            raise InputError(
                f"no alert of {model_dir} was recorded for the window {unknown[0]}; recorded: "
                + (", ".join(sorted(known)) or "none (run mhaudit audit monitor first)")
            )
        return acknowledge(posts, digest, windows=windows or None, kind=kind, note=note)


def load_deployment(
    model_dir: str | Path,
    deployed: str | None = None,
    *,
    mapping=None,
    trust_pickle: bool = False,
    runtime: str = "torch",
) -> Deployment:
    """The model in `model_dir`, or its runs (run-*/ or seed-*/ folders, `deployed` naming the deployed one by
    folder name; default: the first). Every run must have the deployed run's classes. `mapping`, `trust_pickle`
    and `runtime`: as `load_model`, for an outside model (a Hugging Face folder, a skops pipeline file)."""
    folders = deployed_first(model_dir, deployed)
    names = [f.name for f in model_folders(Path(model_dir))]
    outside = mapping is not None or trust_pickle or runtime != "torch"
    load = partial(load_model, mapping=mapping, trust_pickle=trust_pickle, runtime=runtime) if outside else load_model
    # loaded once per process: the scoring jobs in this process use the same copies
    models = {f: loaded_model(load, f) for f in folders}
    # an outside model knows its files' digest (a Hub id's: its snapshot's); our own folders are hashed here
    runs = tuple(Run(f.name, models[f], f, getattr(models[f], "digest", None) or model_digest(f)) for f in folders)
    if len(runs) == 1:
        return Deployment(runs, load=load)
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
        load,
    )


def load_reference(files, deployment: Deployment) -> PredictionSet:
    """The reference predictions (files or globs, as `read_predictions` reads them): a file without a model column
    is the deployed model's; one whose model column names another model is refused, since drift against another
    model's scores is no drift of this one."""
    reference = read_predictions(files, classes=deployment.classes, model=deployment.deployed.model.name)
    others = sorted(set(reference.frame["model"].astype(str)) - {deployment.deployed.model.name})
    if others:
        raise InputError(
            f"the reference predictions were made by {', '.join(others)}, not by the deployed model "
            f"{deployment.deployed.model.name}; predict the validated sample with it (mhaudit predict --model DIR)"
        )
    return reference


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
    notify: list[Sink] | tuple = (),
    notes: Callable[[], Iterable[str]] | None = None,
    progress: Progress | None = None,
) -> AuditResult:
    """Score the posts of `store` (a SQLite path or postgresql:// URL) that a run has not scored yet (the deployed
    run first; `executor` and `workers` as core.executors.run_jobs), audit every scored post against `reference`
    (the deployed model's predictions on its labelled sample; with an ensemble, every run's, told apart by seed),
    reusing the windows unchanged since the last round; record the alerts in the store and deliver the new ones to
    `notify` (experiments.alert_delivery.sinks); write report.{json,md,html} and, for the latest new alert, its
    suggested sample under alert/<window>/ into `out_dir`. `first`: False in a later round, which waits out a
    database restart (a wrong address in the first is said at once). `synthetic`: the posts are, and the report
    says so. `notes()`: lines added to the report's notes when it is written (the command's gathered warnings).
    Bad input is said before anything is scored."""
    if executor not in EXECUTORS:
        raise InputError(f"the executor '{executor}' must be {' or '.join(EXECUTORS)}")
    if workers < 1:
        raise InputError(f"workers must be at least 1, got {workers}")
    check_reference(reference, deployment.classes, options.positive, deployment.ensemble)
    progress = ensure(progress)
    with PostStore(store, wait_for_server=not first, create=False) as posts:
        if posts.count() == 0:
            raise InputError(
                "the post store has no posts; collect some first (mhaudit collect bluesky)", path=posts.location
            )
        check_resolution(post_times(posts), options.window_length, options.window)
    scored_now = _score(store, deployment, executor, workers, progress)
    result, context = _audit(store, deployment, reference, options, scored_now, synthetic, progress)
    rows, computed = result.outputs["window_rows"], int(result.outputs["windows_recomputed"] or 0)
    total = len(rows) if isinstance(rows, pd.DataFrame) else 0
    progress.note(f"{computed:,} of {total:,} windows computed; {total - computed:,} read from the store")
    samples = _write_sample(result, out_dir)
    with PostStore(store, wait_for_server=True) as posts:
        write_windows(posts, context, result.outputs["window_rows"])
        # a target gets the alerts first seen from its first round on: registered before they are recorded
        register_sinks(posts, deployment.deployed.digest, [(s.key, s.label) for s in notify])
        record_alerts(posts, deployment.deployed.digest, result.outputs["alerts"])
        sent = deliver(
            posts,
            deployment.deployed.digest,
            result.outputs["alerts"],
            list(notify),
            model=deployment.deployed.model.name,
            followed=result.options["positive"],
            report=str(Path(out_dir) / "report.html"),
            samples=samples,
        )
        digest = deployment.deployed.digest
        result = with_deliveries(result, recorded_alerts(posts, digest), deliveries(posts, digest), sent)
    if notes is not None:
        result = replace(result, notes=[*result.notes, *notes()])
    write_report(result, out_dir)
    return result


def _score(store, deployment: Deployment, executor: str, workers: int, progress: Progress) -> list[int]:
    """Score the posts each run has not scored, the deployed run first; how many each scored."""
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
                score_posts(store, deployment.load, run.folder, run.digest, executor=executor, workers=workers)
            )
    if len(scored_now) > 1:
        progress.note(f"the other {len(scored_now) - 1} runs scored {sum(scored_now[1:]):,} new posts")
    return scored_now


def _audit(store, deployment, reference, options, scored_now, synthetic, progress) -> tuple[AuditResult, str]:
    """The audit of every scored post, with the store's cached windows and recorded alerts; and the window
    context its windows are cached under."""
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
            model_source=getattr(deployment.deployed.model, "source", "mhaudit"),
        )
        context = window_context(inputs, options)  # the last round's unchanged windows are not recomputed
        inputs = replace(inputs, cached_windows=read_windows(posts, context))
    # no connection is held through the audit, the long part: a database restart meanwhile is waited out after
    return audit_monitor(inputs, options, progress=progress), context


def _write_sample(result: AuditResult, out_dir: str | Path) -> dict[str, str]:
    """Write the latest new alert's suggested sample (none when the store keeps raw DIDs in its post ids); then
    window -> a description of each alerting window's sample on disk, for the alerts' messages (a round killed
    after writing its sample and before delivering names that sample when it is run again)."""
    if "suggested_sample" in result.outputs:
        window, sample = str(result.outputs["alert_window"]), result.outputs["suggested_sample"]
        folder = Path(out_dir) / alert_folder(window)
        write_table(
            result.outputs["suggested_predictions"], folder / "predictions.parquet", what="the window's predictions"
        )
        write_certification_sample(sample, result.outputs["suggested_design"], folder / "sample.parquet")
    alerts = result.outputs["alerts"]
    assert isinstance(alerts, pd.DataFrame)
    samples = {}
    for window in alerts["window"].unique():
        path = Path(out_dir) / alert_folder(window) / "sample.parquet"
        if path.is_file():
            import pyarrow.parquet as pq

            samples[window] = f"{pq.ParquetFile(path).metadata.num_rows:,} posts to label in {path}"
    return samples
