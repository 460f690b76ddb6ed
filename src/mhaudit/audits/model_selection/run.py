"""One model-selection run, step by step: settle the options, check every model once, take the labelled
rows (and a stratified subsample where asked), draw the folds, run the fold jobs, score them against every
label source and build the report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from mhaudit.audits.model_selection.folds import make_folds, stratified_take
from mhaudit.audits.model_selection.jobs import check_model, fit_and_predict, fit_options, plan_jobs
from mhaudit.audits.model_selection.options import ModelSelectionOptions, ModelSpec, Protocol
from mhaudit.audits.model_selection.report import introduction, sections
from mhaudit.audits.model_selection.scores import score_jobs
from mhaudit.audits.model_selection.sources import CORPUS_SOURCE, checked_sources
from mhaudit.audits.model_selection.tables import report_tables
from mhaudit.audits.model_selection.verdicts import model_selection_verdicts
from mhaudit.core.errors import InputError
from mhaudit.core.executors import run_jobs
from mhaudit.core.progress import Progress, ensure
from mhaudit.report import AuditResult
from mhaudit.report.result import provenance
from mhaudit.stats.undefined import quiet_undefined
from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.digest import digest_frame


@quiet_undefined()  # the tables carry each undefined value's reason
def audit_model_selection(corpus: Corpus, options: ModelSelectionOptions, *, train_labels: pd.Series | None = None,
                          train_source: str = CORPUS_SOURCE, references: Mapping[str, pd.Series] | None = None,
                          title: str | None = None, progress: Progress | None = None) -> AuditResult:
    """Compare `options.models` on the rows of a binary `corpus` (its own labels are used unless
    `train_labels` are given; its `synthetic` mark carries into the result) under every protocol.

    `train_labels` (class names indexed by row id; default: the frame's label column) are what the models
    learn and the folds are stratified by; rows without one are left out. `references` maps a source name to
    class names indexed by id (any subset of the rows); every model is also scored against each. The
    result's outputs hold the out-of-fold predictions (one row per model x protocol x fold x test row).
    """
    progress = ensure(progress)
    preset, specs, protocols = options.resolved()
    frame, classes = corpus.frame, [str(c) for c in corpus.classes]
    positive, negative = _positive_and_negative(classes, options.positive)
    model_options = fit_options(specs, options.seed)
    fingerprints = {spec.label: check_model(spec, model_options[spec.label]) for spec in specs}
    rows, sources, dropped = _labelled_rows(frame, classes, train_labels, train_source, references)
    rows = _subsample(rows, sources[train_source], positive, options)
    labels = rows["id"].map(sources[train_source]).to_numpy()
    y = (labels == positive).astype(int)
    folds = make_folds(y, protocols, options.seed, options.val_fraction)
    jobs, placed = plan_jobs(folds, specs, rows=rows, labels=labels, y=y, classes=classes,
                             model_options=model_options, fingerprints=fingerprints, options=options)
    if options.cache_dir:
        Path(options.cache_dir).mkdir(parents=True, exist_ok=True)
    with progress.stage(f"{len(jobs)} fold jobs, seed {options.seed}", total=len(jobs)):
        results = run_jobs(fit_and_predict, jobs, executor=options.executor, workers=options.workers,
                           progress=progress)
    for index, (job, result) in enumerate(zip(placed, results, strict=True)):
        took = "read from the cache" if result["cached"] else (
            f"trained in {result['train_seconds']:.1f} s, predicted in {result['infer_seconds']:.1f} s")
        progress.note(f"[{index + 1}/{len(jobs)}] {job.spec.label} seed {options.seed} · {job.fold.where}: {took}")
    fold_scores, predictions, notes = score_jobs(placed, results, rows=rows, sources=sources,
                                                 train_source=train_source, classes=classes, positive=positive,
                                                 negative=negative)
    tables = report_tables(fold_scores=fold_scores, notes=notes, folds=folds, y=y, rows=rows, sources=sources,
                           train_source=train_source, positive=positive, dropped=dropped)
    intro = introduction(n_rows=len(rows), positive=positive, train_source=train_source, sources=sources,
                         protocols=protocols, specs=specs, preset=preset, options=options)
    with progress.stage("tables and figures"):
        parts = sections(tables, "", references=len(sources) > 1, figures=options.figures)
    inputs = {"corpus": digest_frame(frame), **({"train_labels": digest_frame(train_labels.to_frame())}
                                                if train_labels is not None else {})}
    return AuditResult(title or f"Model selection: {len(specs)} model(s), {len(protocols)} protocol(s)", parts,
                       summary=intro, verdicts=model_selection_verdicts(tables["protocol_effect"], train_source),
                       synthetic=corpus.synthetic,
                       options=_recorded_options(specs, protocols, options, positive, train_source, sources),
                       provenance=provenance(inputs, progress.seconds), outputs={"predictions": predictions})


def _positive_and_negative(classes: list[str], positive: str | None) -> tuple[str, str]:
    """The positive class (the last unless given) and the other one, of a binary corpus."""
    if len(classes) != 2:
        raise InputError(f"the benchmark needs a binary corpus (two classes); this one has {len(classes)}: "
                         f"{', '.join(classes)}")
    positive = positive if positive is not None else classes[-1]
    if positive not in classes:
        raise InputError(f"positive class '{positive}' is not one of the classes {', '.join(classes)}")
    return positive, classes[0] if positive == classes[1] else classes[1]


def _labelled_rows(frame: pd.DataFrame, classes: list[str], train_labels: pd.Series | None, train_source: str,
                   references: Mapping[str, pd.Series] | None) -> tuple[pd.DataFrame, dict[str, pd.Series], int]:
    """The rows with a training label (ids and texts as strings), every label source, and how many rows
    were left out for want of a training label."""
    rows = frame.reset_index(drop=True)
    rows = rows.assign(id=rows["id"].astype(str), text=rows["text"].astype(str))
    sources = checked_sources(rows, classes, train_labels, train_source, references)
    labelled = rows["id"].map(sources[train_source]).notna()
    dropped = int((~labelled).sum())
    rows = rows[labelled].reset_index(drop=True)
    if rows.empty:
        raise InputError(f"no row has a label from the training source '{train_source}'")
    return rows, sources, dropped


def _subsample(rows: pd.DataFrame, train_labels: pd.Series, positive: str,
               options: ModelSelectionOptions) -> pd.DataFrame:
    """A stratified, seeded subsample of `options.subsample` rows, drawn before the folds (all rows without one)."""
    if options.subsample is None:
        return rows
    if options.subsample < len(rows):
        y_all = (rows["id"].map(train_labels) == positive).to_numpy().astype(int)
        rows = rows.iloc[stratified_take(y_all, n=options.subsample, seed=options.seed, keep_one=False)]
        rows = rows.reset_index(drop=True)
    return rows


def _recorded_options(specs: list[ModelSpec], protocols: list[Protocol], options: ModelSelectionOptions,
                      positive: str, train_source: str, sources: Mapping[str, pd.Series]) -> dict:
    """Every option, models with their settled options, protocols by name, the positive class and label sources."""
    return {**asdict(options), "cache_dir": None if options.cache_dir is None else str(options.cache_dir),
            "models": [dict(label=s.label, name=s.name, options=s.options, val=s.val, subsample=s.subsample)
                       for s in specs],
            "protocols": [p.label for p in protocols], "positive": positive, "train_source": train_source,
            "references": [s for s in sources if s != train_source]}


__all__ = ["audit_model_selection"]
