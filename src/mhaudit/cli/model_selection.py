"""`mhaudit audit model-selection`: several models on one labelled binary corpus under holdout and
cross-validation (docs/model_selection.md). Heavy modules are imported inside the command, so `mhaudit --help`
stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mhaudit.cli import audit
from mhaudit.cli.console import err, guarded, out, print_table, stage_progress, write_report
from mhaudit.core.errors import InputError


def register(root: typer.Typer) -> None:
    audit.app.command("model-selection")(model_selection)


def _read_labels(paths: list[Path]):
    import pandas as pd

    from mhaudit.tables.label_store import KEY, read_labels

    frame = pd.concat([read_labels(p) for p in paths], ignore_index=True)
    dup = frame.duplicated(list(KEY))
    if dup.any():
        first = frame[dup].iloc[0]
        raise InputError(f"item '{first['item_id']}' has two labels from '{first['labeler']}' for task "
                         f"'{first['task']}' across the --labels files")
    return frame


@guarded
def model_selection(
        corpus: Annotated[Path, typer.Option(help="Binary corpus (Parquet from mhaudit data import).")],
        model: Annotated[list[str], typer.Option(
            help="Model to compare, repeatable: a registered name (tfidf-lr, char-tfidf-lr, transformer, "
                 "bert-lstm, bert-lstm-attention) or minilm, optionally with options "
                 "'NAME:key=value,key=value' (label=..., val=true|false, subsample=N are the audit's).")],
        out_dir: Annotated[Path, typer.Option("--out", help="Folder for report.{json,html,md}, figures, "
                                                             "predictions.parquet and the job cache.")],
        labels: Annotated[list[Path] | None, typer.Option(
            help="Labels table(s) (.sqlite, .parquet, .csv, .jsonl) holding the label sources.")] = None,
        train_labeler: Annotated[str, typer.Option(
            help="Label source the models learn: 'corpus' (the corpus's labels) or a labeler in --labels.")]
        = "corpus",
        reference_labeler: Annotated[list[str] | None, typer.Option(
            help="Label source to score against as well (repeatable): 'corpus' or a labeler in --labels.")] = None,
        task: Annotated[str | None, typer.Option(help="Task in the labels table (si, mh, ...).")] = None,
        preset: Annotated[str | None, typer.Option(help="The paper's settings: si or mh (overridable).")] = None,
        protocol: Annotated[list[str] | None, typer.Option(
            help="holdout[:TEST_SHARE], cv[:K] (stratified k-fold) or kfold[:K] (plain); repeatable. "
                 "Default: the preset's, else holdout and cv.")] = None,
        folds: Annotated[int | None, typer.Option(help="k for cv / kfold without ':K' (default 5).")] = None,
        test_size: Annotated[float, typer.Option(help="Holdout test share.")] = 0.3,
        val_fraction: Annotated[float, typer.Option(
            help="Share of each fold's training rows held out for early stopping / calibration.")] = 0.1,
        subsample: Annotated[int | None, typer.Option(
            help="Benchmark a stratified subsample of this many rows (drawn before the folds).")] = None,
        dataset: Annotated[str | None, typer.Option(help="Use only this data set (or platform) of the corpus.")]
        = None,
        positive: Annotated[str | None, typer.Option(help="Positive class (default: the corpus's last class).")]
        = None,
        seed: Annotated[int, typer.Option(help="Seed of folds, validation rows, subsamples and models.")] = 0,
        executor: Annotated[str, typer.Option(help="local (processes) or ray.")] = "local",
        workers: Annotated[int, typer.Option(help="Local worker processes for the fold jobs.")] = 1,
        resume: Annotated[bool, typer.Option(
            help="Reuse finished fold jobs from OUT/jobs; --no-resume retrains them (and writes them over).")] = True,
) -> None:
    """Compare models on one labelled corpus under a stratified holdout and cross-validation, side by side."""
    from dataclasses import replace

    from mhaudit.audits.model_selection import ModelSelectionOptions, audit_model_selection
    from mhaudit.audits.model_selection.sources import label_sources
    from mhaudit.audits.model_selection.tables import summary_lines
    from mhaudit.tables.corpus.schema import Corpus
    from mhaudit.tables.io import write_table

    c = Corpus.read(corpus)
    if dataset is not None:
        c = replace(c, frame=c.frame[(c.frame["dataset"] == dataset) | (c.frame["platform"] == dataset)])
        if c.frame.empty:
            raise InputError(f"the corpus has no data set or platform '{dataset}'", path=corpus)
    table = _read_labels(labels) if labels else None
    train, refs = label_sources(c.frame, c.classes, table, train_labeler=train_labeler,
                                reference_labelers=reference_labeler or [], task=task, positive=positive)
    options = ModelSelectionOptions(models=model, protocols=protocol, folds=folds, test_size=test_size,
                                    val_fraction=val_fraction, seed=seed, preset=preset, positive=positive,
                                    subsample=subsample, executor=executor, workers=workers,
                                    cache_dir=out_dir / "jobs", resume=resume)
    run = audit_model_selection(c, options, train_labels=train, train_source=train_labeler, references=refs,
                                title=f"Model selection on {corpus.name}", progress=stage_progress())
    if c.synthetic:
        err.print("[yellow]note:[/] the corpus is SYNTHETIC", highlight=False)
    print_table("Scores (mean ± SD over folds)", summary_lines(run.table("summary")))
    effect = run.table("protocol_effect")
    if not effect.empty:
        f1 = effect[effect["metric"] == "f1"][["model", "scored_against", "cv", "holdout_value", "cv_mean",
                                               "difference"]]
        print_table("Protocol effect on F1 (CV − holdout)", f1)
    paths = write_report(run, out_dir)
    write_table(run.outputs["predictions"], out_dir / "predictions.parquet")
    out.print(f"report: {paths[0].parent / 'report.html'} (also .md and .json); out-of-fold predictions: "
              f"{out_dir / 'predictions.parquet'}")
