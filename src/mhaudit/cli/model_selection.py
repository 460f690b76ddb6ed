"""`mhaudit audit model-selection`: several models on one labelled binary corpus under holdout and
cross-validation (docs/model_selection.md). Heavy modules are imported inside the command, so `mhaudit --help`
stays fast."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from mhaudit.cli import audit
from mhaudit.cli.console import err, out, print_table, stage_progress, write_report
from mhaudit.cli.options import with_options


def register(root: typer.Typer) -> None:
    audit.app.command("model-selection")(model_selection)


@with_options("mhaudit.audits.model_selection.options:ModelSelectionOptions")
def model_selection(
    corpus: Annotated[Path, typer.Option(help="Binary corpus (Parquet from mhaudit data import).")],
    out_dir: Annotated[
        Path,
        typer.Option("--out", help="Folder for report.{json,html,md}, figures, predictions.parquet and the job cache."),
    ],
    options,
    labels: Annotated[
        list[Path] | None,
        typer.Option(help="Labels table(s) (.sqlite, .parquet, .csv, .jsonl) holding the label sources."),
    ] = None,
    train_labeler: Annotated[
        str,
        typer.Option(help="Label source the models learn: 'corpus' (the corpus's labels) or a labeler in --labels."),
    ] = "corpus",
    reference_labeler: Annotated[
        list[str] | None,
        typer.Option(help="Label source to score against as well (repeatable): 'corpus' or a labeler in --labels."),
    ] = None,
    task: Annotated[str | None, typer.Option(help="Task in the labels table (si, mh, ...).")] = None,
    dataset: Annotated[str | None, typer.Option(help="Use only this data set (or platform) of the corpus.")] = None,
) -> None:
    """Compare models on one labelled corpus under a stratified holdout and cross-validation, side by side."""
    from mhaudit.audits.model_selection import ModelSelectionInputs, audit_model_selection
    from mhaudit.audits.model_selection.tables import summary_lines
    from mhaudit.tables.io import write_table

    inputs = ModelSelectionInputs.from_files(
        corpus,
        labels=labels or (),
        train_labeler=train_labeler,
        reference_labelers=reference_labeler or (),
        task=task,
        dataset=dataset,
        positive=options.positive,
    )
    run = audit_model_selection(inputs, replace(options, cache_dir=out_dir / "jobs"), progress=stage_progress())
    if inputs.corpus.synthetic:
        err.print("[yellow]note:[/] the corpus is SYNTHETIC", highlight=False)
    print_table("Scores (mean ± SD over folds)", summary_lines(run.table("summary")))
    effect = run.table("protocol_effect")
    if not effect.empty:
        f1 = effect[effect["metric"] == "f1"][
            ["model", "scored_against", "cv", "holdout_value", "cv_mean", "difference"]
        ]
        print_table("Protocol effect on F1 (CV − holdout)", f1)
    paths = write_report(run, out_dir)
    write_table(run.outputs["predictions"], out_dir / "predictions.parquet")
    out.print(
        f"report: {paths[0].parent / 'report.html'} (also .md and .json); out-of-fold predictions: "
        f"{out_dir / 'predictions.parquet'}"
    )
