"""The label-source audit and the human validation that `mhaudit run` runs beside the cross-platform audit,
with the experiment's models in both: each model (its first seed) scores the binary corpus through its
`binary` spec (`binary_targets.collapse_binary`), entering the label-source audit as a baseline (a DoD
against channel A) and the validation as a labeler (kappa against the human reference)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.experiments.binary_targets import collapse_binary
from mhaudit.experiments.config import BinarySpec, Experiment
from mhaudit.report import AuditResult
from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.predictions import PredictionSet, logit_column

__all__ = ["label_source", "validation", "binary_predictions"]


def binary_predictions(
    corpus: Corpus, key: str, classes: list[str], binary: BinarySpec, models: dict[str, tuple[int, Path, Callable]]
) -> PredictionSet:
    """Every model's collapsed two-class predictions on all rows of `corpus`, cached in its folder by `key`;
    `models`: each model's seed, folder and what loads it."""
    from mhaudit.tables.io import write_table
    from mhaudit.tables.predictions import predict_corpus

    unknown = [
        c for c in [*binary.positive, *([] if binary.negative == "rest" else binary.negative)] if c not in classes
    ]
    if unknown:
        raise InputError(f"class(es) {', '.join(unknown)} in binary are not model classes ({', '.join(classes)})")
    if len(corpus.classes) != 2:
        raise InputError(
            f"the corpus maps to {len(corpus.classes)} classes ({', '.join(corpus.classes)}); "
            "it needs two, negative first and positive last (e.g. stress-binary)"
        )
    parts = []
    for name, (seed, folder, load_model) in models.items():
        path = folder / f"binary-{key}.parquet"
        if not path.exists():
            scored = Corpus(corpus.frame.assign(split="test"), classes, {})  # the model's classes name the logits
            write_table(predict_corpus(load_model(), scored, model_name=name, seed=seed, splits=("test",)), path)
        parts.append(collapse_binary(pd.read_parquet(path), classes, binary, corpus.classes, relabel=False))
    return PredictionSet(pd.concat(parts, ignore_index=True), corpus.classes)


def label_source(
    exp: Experiment, corpus: Corpus, key: str, classes: list[str], models: dict[str, tuple[int, Path, Callable]]
) -> AuditResult:
    """The label-source audit of [label_source] with every model (if any) as a baseline."""
    from mhaudit.audits.divergence import DivergenceInputs, audit_divergence
    from mhaudit.audits.divergence.baselines import baselines_from_predictions

    spec = exp.label_source
    assert spec is not None, "called for an experiment with [label_source]"
    baselines = (
        baselines_from_predictions(binary_predictions(corpus, key, classes, spec.binary, models), corpus.classes[-1])
        if models
        else {}
    )
    return audit_divergence(DivergenceInputs(corpus, baselines), exp.divergence_options())


def validation(
    exp: Experiment, items: tuple[Corpus, str] | None, classes: list[str], models: dict[str, tuple[int, Path, Callable]]
) -> AuditResult:
    """The agreement report of [validation]; with items, each model's predicted labels join as a labeler."""
    from mhaudit.audits.agreement import AgreementInputs, audit_agreement
    from mhaudit.tables.label_store import labels_frame, read_label_files

    spec = exp.validation
    assert spec is not None, "called for an experiment with [validation]"
    labels = read_label_files([exp.folder / p for p in spec.labels])
    names: tuple[str, ...] = ()
    if items is not None:
        corpus, key = items
        predictions = binary_predictions(corpus, key, classes, spec.binary, models).frame
        ids = set(labels.loc[labels["task"].astype(str) == spec.task, "item_id"].astype(str))
        predictions = predictions[predictions["id"].astype(str).isin(ids)]
        if predictions.empty:
            raise InputError(
                f"none of the validation items' ids is an item_id of task '{spec.task}' in the labels; "
                "validation.items must be the labelled posts"
            )
        positive = logit_column(corpus.classes[-1])
        rows = [
            labels_frame(p["id"], {name: ("model", (p[positive] > 0).astype(int))}, spec.task)  # P > 1/2
            for name, p in predictions.groupby("model", sort=False)
        ]
        labels = pd.concat([labels, *rows], ignore_index=True)
        names = tuple(models)
    return audit_agreement(AgreementInputs(labels), exp.validation_options(models=names))
