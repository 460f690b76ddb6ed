"""`mhaudit audit agreement` and `mhaudit audit certify`: people's labels against the weak labeler (human-human
agreement, the weak labeler against the reference), and a model certified on a target from the same kind of
labels (docs/validation.md). Heavy modules are imported inside the commands, so `mhaudit --help` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mhaudit.cli import audit
from mhaudit.cli.console import out, print_table, stage_progress, write_report
from mhaudit.cli.labels import LabelsOpt
from mhaudit.cli.options import with_options


def register(root: typer.Typer) -> None:
    audit.app.command("agreement")(agreement)
    audit.app.command("certify")(certify)


OutOpt = Annotated[Path, typer.Option("--out", help="Folder for report.{json,html,md}.")]


@with_options("mhaudit.audits.agreement.options:AgreementOptions")
def agreement(
    labels: LabelsOpt,
    out_dir: OutOpt,
    options,
    sample_path: Annotated[
        Path | None,
        typer.Option("--sample", help="Validation set the items were drawn in: adds design-weighted estimates."),
    ] = None,
    items: Annotated[
        Path | None,
        typer.Option(
            help="Post store or corpus / items table with an 'author' column: the bootstraps then resample "
            "authors, not posts."
        ),
    ] = None,
) -> None:
    """Agreement: human-human kappa (and alpha), the weak labeler against the reference, error sources.

    The bootstraps resample authors when the items have them (--items, an 'author' column in --sample, or
    post-store ids at://AUTHOR/...)."""
    from mhaudit.audits.agreement import AgreementInputs, audit_agreement

    inputs = AgreementInputs.from_files(labels, validation_set=sample_path, items=items)
    result = audit_agreement(inputs, options, progress=stage_progress())
    out.print(result.summary, highlight=False)
    out.print(f"bootstrap: {result.options['bootstrap_unit']}", highlight=False)
    print_table(
        "Weak labeler against the reference",
        result.table("weak_vs_reference")[["metric", "estimate", "ci_low", "ci_high", "n"]],
    )
    print_table("Confusion matrix (rows: reference)", result.table("confusion_matrix"))
    human = result.table("human_agreement")
    if (human["status"] != "unavailable").any():
        print_table(
            "Human-human agreement (before adjudication)",
            human[["annotator_a", "annotator_b", "n", "observed_agreement", "kappa", "ci_low", "ci_high", "status"]],
        )
    if "weak_vs_reference_weighted" in result.tables:
        print_table(
            "Design-weighted estimates for the sampled pool",
            result.table("weak_vs_reference_weighted")[["metric", "estimate", "ci_low", "ci_high", "n"]],
        )
    if options.models:
        print_table(
            "Models against the reference",
            result.table("models_vs_reference")[["labeler", "metric", "estimate", "ci_low", "ci_high", "n"]],
        )
    if options.combined:
        shown = ["labeler", "coverage", "kappa", "kappa_lo", "kappa_hi", "precision", "recall"]
        print_table(
            "Combined labeler, its sources and their majority vote", result.table("combined_vs_reference")[shown]
        )
        accuracy = ["source", "votes", "estimated", "votes_on_reference", "measured", "measured_lo", "measured_hi"]
        print_table("Source accuracy: estimated without labels vs measured", result.table("source_accuracy")[accuracy])
    paths = write_report(result, out_dir)
    out.print(f"report: {paths[0].parent / 'report.html'} (also .md and .json)")


@with_options("mhaudit.audits.certify.options:CertifyOptions")
def certify(
    labels: LabelsOpt,
    out_dir: OutOpt,
    sample_path: Annotated[
        Path,
        typer.Option("--sample", help="The sample from `labels sample --strategy estimate` (its design beside it)."),
    ],
    predictions: Annotated[
        list[str],
        typer.Option(
            help="The model's scores on every pooled item (the files the sample was drawn from; several may "
            "follow one --predictions)."
        ),
    ],
    options,
    run: Annotated[
        str | None,
        typer.Option(
            help="The run to certify when --predictions hold several: MODEL:SEED, MODEL, or its run-<k> folder "
            "(default: the run the sample was drawn for)."
        ),
    ] = None,
) -> None:
    """Certify a model on a target: its prevalence, accuracy and macro-F1 from people's labels on the sample
    and the model's scores on the pool (prediction-powered inference; docs/validation.md)."""
    from mhaudit.audits.certify import CertifyInputs, audit_certify

    inputs = CertifyInputs.from_files(labels, sample_path, predictions, run=run)
    result = audit_certify(inputs, options, progress=stage_progress())
    out.print(result.summary, highlight=False)
    table = result.table("certified")
    cells = table.assign(value=[f"{r.estimate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]" for r in table.itertuples()])
    wide = cells.pivot(index="metric", columns="estimator", values="value")
    wide = wide.reindex(index=list(dict.fromkeys(table["metric"])), columns=list(dict.fromkeys(table["estimator"])))
    print_table(f"Estimates on the target with {result.options['n_labels']} human labels (95% CIs)", wide.reset_index())
    paths = write_report(result, out_dir)
    out.print(f"report: {paths[0].parent / 'report.html'} (also .md and .json)")
