"""`mhaudit audit estimate`: a model's expected performance on unlabelled targets (mhaudit.audits.estimate)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mhaudit.cli import audit
from mhaudit.cli.console import out, print_table, stage_progress, write_report
from mhaudit.cli.options import with_options


def register(root: typer.Typer) -> None:
    audit.app.command(name="estimate")(estimate)


@with_options("mhaudit.audits.estimate.options:EstimateOptions")
def estimate(
    reference: Annotated[
        list[str],
        typer.Option(
            help="The model's predictions on its labelled home test set (files or globs; several may follow "
            "one --reference)."
        ),
    ],
    target: Annotated[
        list[str],
        typer.Option(
            help="Its predictions on unlabelled targets (files or globs; several may follow one --target); a "
            "label column is ignored."
        ),
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for report.{json,html,md} and figures.")],
    options,
    classes: Annotated[str | None, typer.Option(help="Class order, comma-separated (default: score columns).")] = None,
    label_col: str = "label",
    platform_col: str = "platform",
    name_pattern: Annotated[
        str | None, typer.Option(help="Model, seed and platform from file names, e.g. '{model}_{platform}_seed{seed}'.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name for files without a model column.")] = None,
) -> None:
    """Estimate accuracy, macro-F1 and macro-AUC on targets nobody has labelled (CBPE, ATC, DoC per run; with
    several runs, accuracy from their agreement, ALine), with a trust verdict per target (docs/estimate.md)."""
    from mhaudit.audits.estimate import EstimateInputs, audit_estimate
    from mhaudit.tables.prediction_files import PredictionColumns

    inputs = EstimateInputs.from_files(
        reference,
        target,
        classes=classes.split(",") if classes else None,
        columns=PredictionColumns(label=label_col, platform=platform_col),
        model=model,
        name_pattern=name_pattern,
    )
    for note in inputs.targets.notes:
        if "is ignored" in note:
            out.print(f"note: {note}", highlight=False)
    result = audit_estimate(inputs, options, progress=stage_progress())
    write_report(result, out_dir)
    out.print(result.summary, highlight=False)
    raised = result.verdicts[result.verdicts["severity"] != "pass"]
    if not raised.empty:
        print_table(
            "verdicts other than pass", raised[["severity", "subject", "target", "statistic", "value", "reason"]]
        )
    out.print(f"report: {out_dir / 'report.html'} (also report.md, report.json, figures/)")
