"""`mhaudit audit`: every audit is one command of this group (docs/cli.md). Here the cross-platform (`cpfe`) and
the label-source (`divergence`) audits; estimate, model_selection, agreement (with certify) and monitor add theirs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from mhaudit.cli.console import out, print_scorecard, print_summary, stage_progress, write_report
from mhaudit.cli.options import with_options

app = typer.Typer(
    help="Run an audit: cpfe, divergence, agreement, model-selection, estimate, certify, monitor.", no_args_is_help=True
)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="audit")


@app.command()
@with_options("mhaudit.audits.cpfe.options:CPFEOptions")
def cpfe(
    predictions: Annotated[
        list[str],
        typer.Option(
            "--predictions", help="Prediction files or globs (CSV/Parquet); several may follow one --predictions."
        ),
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for report.{json,html,md} and figures.")],
    options,
    classes: Annotated[str | None, typer.Option(help="Class order, comma-separated (default: score columns).")] = None,
    corpus: Annotated[Path | None, typer.Option(help="Corpus with the texts (enables the length table).")] = None,
    attributions: Annotated[
        list[str] | None, typer.Option(help="Attribution tables (Parquet; files or globs) for axis 5.")
    ] = None,
    label_col: str = "label",
    platform_col: str = "platform",
    name_pattern: Annotated[
        str | None,
        typer.Option(
            help="Model, seed and platform from file names, e.g. '{model}_{platform}_seed{seed}_predictions'."
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name for files without a model column.")] = None,
    model_seed: Annotated[int | None, typer.Option(help="Seed for files without a seed column.")] = None,
    platform: Annotated[str | None, typer.Option(help="Platform for files without a platform column.")] = None,
) -> None:
    """The cross-platform five-axis audit (CPFE) of predictions from any model.

    Model, seed and platform come from each file's columns, else from --name-pattern, else from the flags,
    else the file name is the model and the platform. Integer labels index the score columns in order.
    """
    from mhaudit.audits.cpfe import CPFEInputs, audit_cpfe
    from mhaudit.tables.prediction_files import PredictionColumns

    inputs = CPFEInputs.from_files(
        predictions,
        corpus=corpus,
        attributions=attributions or (),
        classes=classes.split(",") if classes else None,
        columns=PredictionColumns(label=label_col, platform=platform_col),
        model=model,
        seed=model_seed,
        platform=platform,
        name_pattern=name_pattern,
    )
    result = audit_cpfe(inputs, options, progress=stage_progress())
    write_report(result, out_dir)
    print_summary(result)
    print_scorecard("Scorecard: worst verdict per axis (numbers and every check in the report)", result.verdicts)
    out.print(f"report: {out_dir / 'report.html'} (also report.md, report.json, figures/)")


@app.command()
@with_options("mhaudit.audits.divergence.options:DivergenceOptions")
def divergence(
    corpora: Annotated[list[Path], typer.Option("--corpus", help="Binary corpora (Parquet), merged.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for report.{json,html,md} and conflicts.")],
    options,
    baseline: Annotated[
        list[str] | None, typer.Option(help="Prediction files of other models, compared with the channels.")
    ] = None,
) -> None:
    """The label-source audit (TSS probe): channels A/B/C, Degree of Divergence, masking, LODO, phenotypes."""
    from mhaudit.audits.divergence import DivergenceInputs, audit_divergence
    from mhaudit.audits.divergence.conflicts import write_conflicts

    inputs = DivergenceInputs.from_files(corpora, baselines=baseline or (), positive=options.positive)
    audit = audit_divergence(inputs, options, progress=stage_progress())
    if not audit.outputs["conflict_sample"].empty:
        write_conflicts(audit.outputs["conflict_counts"], audit.outputs["conflict_sample"], out_dir)
    write_report(audit, out_dir)
    out.print(escape(audit.summary))
    extra = ", conflicts.csv/.xlsx" if not audit.outputs["conflict_sample"].empty else ""
    out.print(f"report: {out_dir / 'report.html'} (also report.md, report.json{extra})")
