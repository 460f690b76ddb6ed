"""`mhaudit audit`: every audit is one command of this group (docs/cli.md). Here the cross-platform (`cpfe`) and
the label-source (`divergence`) audits; estimate, model_selection, agreement (with certify) and monitor add theirs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from mhaudit.cli.console import guarded, out, print_scorecard, stage_progress, write_report
from mhaudit.core.errors import InputError

app = typer.Typer(help="Run an audit: cpfe, divergence, agreement, model-selection, estimate, certify, monitor.",
                  no_args_is_help=True)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="audit")


@app.command()
@guarded
def cpfe(predictions: Annotated[list[str], typer.Option(
             "--predictions", help="Prediction files or globs (CSV/Parquet); several may follow one --predictions.")],
         reference: Annotated[str, typer.Option(help="The models' home platform (or data set).")],
         out_dir: Annotated[Path, typer.Option("--out", help="Folder for report.{json,html,md} and figures.")],
         classes: Annotated[str | None, typer.Option(help="Class order, comma-separated (default: score columns).")]
         = None,
         n_boot: Annotated[int, typer.Option(help="Bootstrap resamples for the significance tests.")] = 2000,
         n_boot_ece: Annotated[int, typer.Option(help="Bootstrap resamples for the ECE CIs.")] = 1000,
         n_bins: Annotated[int, typer.Option(help="Equal-width confidence bins for ECE.")] = 10,
         seed: Annotated[int, typer.Option(help="Seed for bootstraps and drawn calibration splits.")] = 0,
         correction: Annotated[str, typer.Option(help="bonferroni or bh (Benjamini-Hochberg).")] = "bonferroni",
         calibration_fraction: Annotated[float, typer.Option(help="Calibration split drawn when none is stored.")]
         = 0.10,
         corpus: Annotated[Path | None, typer.Option(help="Corpus with the texts (enables the length table).")]
         = None,
         attributions: Annotated[Path | None, typer.Option(help="Attributions table (Parquet) for axis 5.")] = None,
         non_independent: Annotated[list[str] | None, typer.Option(
             help="MODEL:PLATFORM pairs where the model saw the platform's source in training (marked †).")]
         = None,
         label_col: str = "label", platform_col: str = "platform",
         name_pattern: Annotated[str | None, typer.Option(
             help="Model, seed and platform from file names, e.g. '{model}_{platform}_seed{seed}_predictions'.")]
         = None,
         model: Annotated[str | None, typer.Option(help="Model name for files without a model column.")] = None,
         model_seed: Annotated[int | None, typer.Option(help="Seed for files without a seed column.")] = None,
         platform: Annotated[str | None, typer.Option(help="Platform for files without a platform column.")] = None,
         ) -> None:
    """The cross-platform five-axis audit (CPFE) of predictions from any model.

    Model, seed and platform come from each file's columns, else from --name-pattern, else from the flags,
    else the file name is the model and the platform. Integer labels index the score columns in order.
    """
    from mhaudit.audits.cpfe import CPFEOptions, audit_cpfe
    from mhaudit.tables.attributions import read_attributions
    from mhaudit.tables.corpus.schema import Corpus
    from mhaudit.tables.prediction_files import PredictionColumns, read_predictions
    from mhaudit.tables.predictions import sha256_file

    preds = read_predictions(predictions, classes=classes.split(",") if classes else None,
                             columns=PredictionColumns(label=label_col, platform=platform_col), model=model,
                             seed=model_seed, platform=platform, name_pattern=name_pattern)
    pairs = []
    for item in non_independent or []:
        if ":" not in item:
            raise InputError(f"--non-independent '{item}' must be MODEL:PLATFORM")
        pairs.append(tuple(item.split(":", 1)))
    texts, synthetic = None, False
    if corpus:
        c = Corpus.read(corpus)
        texts, synthetic = c.frame.set_index("id")["text"], c.synthetic
    attr = read_attributions(attributions) if attributions else None
    for extra in filter(None, (corpus, attributions)):
        preds.fingerprints[str(extra)] = sha256_file(Path(extra))
    options = CPFEOptions(reference=reference, n_bins=n_bins, n_boot_ece=n_boot_ece, n_boot_significance=n_boot,
                          seed=seed, calibration_fraction=calibration_fraction, correction=correction,
                          non_independent=tuple(pairs))
    result = audit_cpfe(preds, options, texts=texts, attributions=attr, synthetic=synthetic,
                        progress=stage_progress())
    write_report(result, out_dir)
    out.print(result.summary)
    print_scorecard("Scorecard: worst verdict per axis (numbers and every check in the report)", result.verdicts)
    out.print(f"report: {out_dir / 'report.html'} (also report.md, report.json, figures/)")


@app.command()
@guarded
def divergence(corpora: Annotated[list[Path], typer.Option("--corpus", help="Binary corpora (Parquet), merged.")],
               human: Annotated[list[str], typer.Option(help="Human-labelled data set(s), by `dataset` name.")],
               auto: Annotated[list[str], typer.Option(help="Auto-labelled data set(s), by `dataset` name.")],
               out_dir: Annotated[Path, typer.Option("--out", help="Folder for report.{json,html,md} and conflicts.")],
               train: Annotated[str | None, typer.Option(
                   help="Data set whose train split fits every channel (default: first human one with a train split).")]
               = None,
               positive: Annotated[str | None, typer.Option(help="Positive class (default: the second class).")] = None,
               channels: Annotated[str, typer.Option(help="Channels and combinations, comma-separated.")]
               = "A,B,C,AB,AC,BC,ABC",
               masks: Annotated[str, typer.Option(help="Masks: none,pos_only,content_only,function_only,random_pos.")]
               = "none,pos_only,content_only,function_only,random_pos",
               mask_channels: Annotated[str, typer.Option(help="Channels refitted under each mask.")] = "C,BC",
               lodo_channels: Annotated[str, typer.Option(help="Channels for leave-one-domain-out ('' = skip).")]
               = "A,C,BC",
               lexical: Annotated[str, typer.Option(help="Channel A: char (3-5-grams) or word (uni+bigrams).")] = "char",
               n_boot: Annotated[int, typer.Option(help="Instance-bootstrap resamples per data set.")] = 10_000,
               folds: Annotated[int, typer.Option(help="Cross-fitting / threshold folds.")] = 5,
               repeats: Annotated[int, typer.Option(help="Repeated cross-fitting runs (training variance).")] = 1,
               baseline: Annotated[list[Path] | None, typer.Option(
                   help="Prediction files of other models, compared with the channels.")] = None,
               conflicts: Annotated[int, typer.Option(help="Conflict-zone rows exported per data set.")] = 200,
               include_text: Annotated[bool, typer.Option(help="Put post text in the conflict export.")] = False,
               zero_division: Annotated[float | None, typer.Option(
                   help="Count an F1 with no true and no predicted instance as 0 (scikit-learn's default, "
                        "zero_division=0) instead of leaving it undefined.")] = None,
               seed: int = 0) -> None:
    """The label-source audit (TSS probe): channels A/B/C, Degree of Divergence, masking, LODO, phenotypes."""
    from mhaudit.audits.divergence import DivergenceOptions, audit_divergence
    from mhaudit.audits.divergence.baselines import baselines_from_predictions
    from mhaudit.audits.divergence.conflicts import write_conflicts
    from mhaudit.tables.corpus.schema import merge_corpora
    from mhaudit.tables.prediction_files import read_predictions

    corpus = merge_corpora(corpora)
    split = lambda text: tuple(x.strip() for x in text.split(",") if x.strip())  # noqa: E731
    options = DivergenceOptions(human=tuple(human), auto=tuple(auto), train_dataset=train, positive=positive,
                                channels=split(channels), masks=split(masks) or ("none",),
                                mask_channels=split(mask_channels), lodo_channels=split(lodo_channels),
                                lexical=lexical, n_boot=n_boot, n_folds=folds, repeats=repeats,
                                conflicts_per_dataset=conflicts, include_text=include_text,
                                zero_division=zero_division, seed=seed)
    baselines = {}
    if baseline:
        preds = read_predictions(baseline)
        baselines = baselines_from_predictions(preds, positive or corpus.classes[-1])
    audit = audit_divergence(corpus, options, baselines=baselines, progress=stage_progress())
    if not audit.outputs["conflict_sample"].empty:
        write_conflicts(audit.outputs["conflict_counts"], audit.outputs["conflict_sample"], out_dir)
    write_report(audit, out_dir)
    out.print(escape(audit.summary))
    extra = ", conflicts.csv/.xlsx" if not audit.outputs["conflict_sample"].empty else ""
    out.print(f"report: {out_dir / 'report.html'} (also report.md, report.json{extra})")
