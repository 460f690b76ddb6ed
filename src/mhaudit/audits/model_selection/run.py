"""One model-selection run, step by step: settle the options, check every model once, take the labelled
rows (and a stratified subsample where asked), draw the folds, run the fold jobs, score them against every
label source and build the report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.audits.model_selection.folds import make_folds, stratified_take
from mhaudit.audits.model_selection.jobs import (
    FoldJob,
    SoftLabels,
    check_model,
    fit_and_predict,
    fit_options,
    plan_jobs,
)
from mhaudit.audits.model_selection.options import ModelSelectionInputs, ModelSelectionOptions, ModelSpec, Protocol
from mhaudit.audits.model_selection.report import introduction, sections
from mhaudit.audits.model_selection.scores import score_jobs
from mhaudit.audits.model_selection.sources import sides
from mhaudit.audits.model_selection.tables import report_tables
from mhaudit.audits.model_selection.verdicts import model_selection_verdicts
from mhaudit.core.errors import InputError
from mhaudit.core.executors import run_jobs
from mhaudit.core.progress import Progress, ensure
from mhaudit.report import AuditResult
from mhaudit.report.result import provenance
from mhaudit.stats.undefined import quiet_undefined
from mhaudit.tables.digest import digest_frame


@quiet_undefined()  # the tables carry each undefined value's reason
def audit_model_selection(
    inputs: ModelSelectionInputs, options: ModelSelectionOptions, *, progress: Progress | None = None
) -> AuditResult:
    """Compare `options.models` on the rows of `inputs.corpus` with a training label under every protocol: the
    models learn `inputs.train_labels` (the folds are stratified by them) and are scored against them and every
    reference source. The result's outputs hold the out-of-fold predictions (one row per model x protocol x fold x
    test row).
    """
    progress = ensure(progress)
    preset, specs, protocols = options.resolved()
    frame, classes, train_source = inputs.corpus.frame, [str(c) for c in inputs.corpus.classes], inputs.train_source
    positive, negative = sides(classes, options.positive)
    model_options = fit_options(specs, options.seed)
    weighted = options.soft_labels and inputs.train_probabilities is not None
    fingerprints = {spec.label: check_model(spec, model_options[spec.label], weighted=weighted) for spec in specs}
    sources = inputs.sources
    rows, dropped = _labelled_rows(frame, sources[train_source])
    rows = _subsample(rows, sources[train_source], positive, options)
    labels = rows["id"].map(sources[train_source]).to_numpy()
    y = (labels == positive).astype(int)
    soft = _soft_labels(rows, inputs.train_probabilities, positive, negative) if weighted else None
    folds = make_folds(y, protocols, options.seed, options.val_fraction)
    jobs, placed = plan_jobs(
        folds,
        specs,
        rows=rows,
        labels=labels,
        y=y,
        classes=classes,
        model_options=model_options,
        fingerprints=fingerprints,
        options=options,
        soft=soft,
    )
    results = _run_fold_jobs(jobs, placed, options, progress)
    fold_scores, predictions, notes = score_jobs(
        placed,
        results,
        rows=rows,
        sources=sources,
        train_source=train_source,
        classes=classes,
        positive=positive,
        negative=negative,
    )
    tables = report_tables(
        fold_scores=fold_scores,
        notes=notes,
        folds=folds,
        y=y,
        rows=rows,
        sources=sources,
        train_source=train_source,
        positive=positive,
        dropped=dropped,
    )
    intro = introduction(
        n_rows=len(rows),
        positive=positive,
        train_source=train_source,
        sources=sources,
        protocols=protocols,
        specs=specs,
        preset=preset,
        options=options,
        soft=soft is not None,
    )
    with progress.stage("tables and figures"):
        parts = sections(tables, "", references=len(sources) > 1, figures=options.figures)
    title = inputs.title or f"Model selection: {len(specs)} model(s), {len(protocols)} protocol(s)"
    return AuditResult(
        title,
        parts,
        summary=intro,
        verdicts=model_selection_verdicts(tables["protocol_effect"], train_source),
        synthetic=inputs.corpus.synthetic,
        options=_recorded_options(specs, protocols, options, positive, train_source, sources),
        provenance=provenance(_digests(inputs), progress.seconds),
        outputs={"predictions": predictions},
    )


def _run_fold_jobs(
    jobs: list[dict], placed: list[FoldJob], options: ModelSelectionOptions, progress: Progress
) -> list[dict]:
    """Every fold job through the executor, then a note per job: trained (and how long) or read from the cache."""
    if options.cache_dir:
        Path(options.cache_dir).mkdir(parents=True, exist_ok=True)
    with progress.stage(f"{len(jobs)} fold jobs, seed {options.seed}", total=len(jobs)):
        results = run_jobs(fit_and_predict, jobs, executor=options.executor, workers=options.workers, progress=progress)
    for index, (job, result) in enumerate(zip(placed, results, strict=True)):
        took = (
            "read from the cache"
            if result["cached"]
            else (f"trained in {result['train_seconds']:.1f} s, predicted in {result['infer_seconds']:.1f} s")
        )
        progress.note(f"[{index + 1}/{len(jobs)}] {job.spec.label} seed {options.seed} · {job.fold.where}: {took}")
    return results


def _digests(inputs: ModelSelectionInputs) -> dict:
    """The inputs' digests for the provenance: the corpus, the files read and the training labels."""
    train_labels = inputs.train_labels
    return {
        "corpus": digest_frame(inputs.corpus.frame),
        **dict(inputs.files),
        **({"train_labels": digest_frame(train_labels.to_frame())} if train_labels is not None else {}),
    }


def _labelled_rows(frame: pd.DataFrame, train_labels: pd.Series) -> tuple[pd.DataFrame, int]:
    """The rows with a training label (ids and texts as strings), and how many were left out for want of one."""
    rows = frame.reset_index(drop=True)
    rows = rows.assign(id=rows["id"].astype(str), text=rows["text"].astype(str))
    labelled = rows["id"].map(train_labels).notna()
    return rows[labelled].reset_index(drop=True), int((~labelled).sum())


def _soft_labels(rows: pd.DataFrame, probabilities: pd.Series | None, positive: str, negative: str) -> SoftLabels:
    """The training labeler's probability of the positive class on every row (the rows it labels hard): soft labels."""
    probability = rows["id"].map(probabilities).to_numpy(dtype=float)
    if np.isnan(probability).any():
        missing = rows["id"][np.isnan(probability)].iloc[0]
        raise InputError(
            f"the training labeler labels item '{missing}' but gives it no probability; soft labels need one"
        )
    return SoftLabels(probability, positive, negative)


def _subsample(
    rows: pd.DataFrame, train_labels: pd.Series, positive: str, options: ModelSelectionOptions
) -> pd.DataFrame:
    """A stratified, seeded subsample of `options.subsample` rows, drawn before the folds (all rows without one)."""
    if options.subsample is None or options.subsample >= len(rows):
        return rows
    y_all = (rows["id"].map(train_labels) == positive).to_numpy().astype(int)
    keep = stratified_take(y_all, n=options.subsample, seed=options.seed, keep_one=False)
    return rows.iloc[keep].reset_index(drop=True)


def _recorded_options(
    specs: list[ModelSpec],
    protocols: list[Protocol],
    options: ModelSelectionOptions,
    positive: str,
    train_source: str,
    sources: Mapping[str, pd.Series],
) -> dict:
    """Every option, models with their settled options, protocols by name, the positive class and label sources."""
    return {
        **asdict(options),
        "cache_dir": None if options.cache_dir is None else str(options.cache_dir),
        "models": [asdict(s) for s in specs],
        "protocols": [p.label for p in protocols],
        "positive": positive,
        "train_source": train_source,
        "references": [s for s in sources if s != train_source],
    }


__all__ = ["audit_model_selection"]
