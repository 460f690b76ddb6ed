"""The report of a model-selection run: its introduction (rows, label sources, protocols, models) and its
sections, each holding its tables and, where asked, the figures drawn from them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from mhaudit.audits.model_selection.options import ModelSelectionOptions, ModelSpec, Preset, Protocol
from mhaudit.report import Section


def introduction(
    *,
    n_rows: int,
    positive: str,
    train_source: str,
    sources: Mapping[str, pd.Series],
    protocols: Sequence[Protocol],
    specs: Sequence[ModelSpec],
    preset: Preset | None,
    options: ModelSelectionOptions,
    soft: bool = False,
) -> str:
    """What was compared, on which rows and labels, under which protocols (and whether on soft labels)."""
    described = ", ".join(
        f"{s.label} ({s.name}{', ' + _short(s.options) if s.options else ''}"
        f"{'; trained on ' + str(s.subsample) + ' rows of each fold' if s.subsample else ''}"
        f"{'; no validation rows' if not s.val else ''})"
        for s in specs
    )
    others = [repr(r) for r in sources if r != train_source]
    return (
        f"{n_rows:,} rows, positive class '{positive}', trained on the label source '{train_source}'"
        f"{' as soft labels (each training post twice, weighted by the probability of each class)' if soft else ''}"
        f"{'; scored also against ' + ', '.join(others) if others else ''}. "
        f"Protocols: {', '.join(p.label for p in protocols)} (seed {options.seed}, folds identical for every "
        f"model; {options.val_fraction:.0%} of each fold's training rows held out as validation rows for "
        f"the models with validation rows, the others train on all of them). "
        f"Models: {described}."
        + (f" Preset: {preset.description}." if preset else "")
        + (f" A stratified subsample of {options.subsample:,} rows was drawn first." if options.subsample else "")
    )


def sections(tables: Mapping[str, pd.DataFrame], intro: str, *, references: bool, figures: bool) -> list[Section]:
    """The report's sections from `report_tables`; the training labels against the references only where
    there are `references`, the figures only where asked and there are scores."""
    out = [
        Section("Design", intro, {"design": tables["design"], "label_sources": tables["label_sources"]}),
        Section(
            "Scores side by side",
            "Mean and standard deviation over folds (holdout: one fold, no SD). Metrics of the positive class "
            "unless macro; AUC of the positive-minus-negative logit; seconds of wall time per fold.",
            {"summary": tables["summary"]},
        ),
        Section(
            "Protocol effect",
            "Cross-validation mean minus holdout, per model, label source and metric (positive: CV scores higher).",
            {"protocol_effect": tables["protocol_effect"]},
        ),
        Section(
            "Efficiency frontier",
            "F1 against mean training time per fold, on the training labels; on_frontier: no other model "
            "reaches at least its F1 in at most its training time (and is better in one).",
            {"efficiency": tables["efficiency"]},
        ),
        Section(
            "Recall / precision trade-off",
            "Positive-class recall against precision per model, protocol and label source, with the predicted "
            "and the true positive rate.",
            {"tradeoff": tables["tradeoff"]},
        ),
    ]
    if references:
        out.append(
            Section(
                "Training labels against the references",
                "The training labels themselves scored against each reference source on the rows both label "
                "(the ceiling a model that reproduced its training labels perfectly would reach against the "
                "reference); kappa is Cohen's.",
                {"training_vs_reference": tables["training_vs_reference"]},
            )
        )
    out.append(
        Section(
            "Per-fold scores",
            "One row per model, protocol, fold and label source.",
            {"fold_scores": tables["fold_scores"]},
        )
    )
    out.append(
        Section(
            "Model notes",
            "What each fit reported (early stopping, kept epoch, calibration).",
            {"model_notes": tables["model_notes"]},
        )
    )
    if figures and not tables["summary"].empty:  # matplotlib imported only to draw them
        from mhaudit.audits.model_selection.figures import figure_efficiency, figure_protocol_effect, figure_tradeoff

        if not tables["protocol_effect"].empty:
            out[2].figures["protocol effect (F1)"] = figure_protocol_effect(tables["protocol_effect"])
        out[3].figures["efficiency frontier"] = figure_efficiency(tables["efficiency"])
        out[4].figures["recall vs precision"] = figure_tradeoff(tables["tradeoff"])
    return out


def _short(options: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in options.items())


__all__ = ["introduction", "sections"]
